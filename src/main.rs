//! The `toolsearch` binary: the sandbox role first (before any runtime or thread exists: the
//! zygote must stay single-threaded), then the CLI (parse, dispatch, map errors to exit codes).

fn main() -> std::process::ExitCode {
    if let Some(code) = toolsearch::dispatch_role() {
        return code;
    }
    toolsearch::run_cli()
}
