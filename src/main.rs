//! The `toolsearch` binary: parse, dispatch, map errors to exit codes (all in `cli`).

fn main() -> std::process::ExitCode {
    toolsearch::cli::main()
}
