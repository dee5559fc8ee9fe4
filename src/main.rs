//! The `toolsearch` binary: a role first (the sandbox zygote or an MCP upstream supervisor,
//! before any runtime or thread exists: both must stay single-threaded), then the CLI (parse,
//! dispatch, map errors to exit codes).

fn main() -> std::process::ExitCode {
    if let Some(code) = toolsearch::dispatch_role() {
        return code;
    }
    toolsearch::run_cli()
}
