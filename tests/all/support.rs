//! Shared helpers: where the reference data lives, and running the real binary.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The real binary (it runs sandbox workers too).
pub const BIN: &str = env!("CARGO_BIN_EXE_toolsearch");

/// The shared reference data (`../shared` beside the checkout). `TOOLSEARCH_SHARED` overrides.
/// A missing data directory fails the test with a clear message rather than skipping it.
pub fn shared() -> PathBuf {
    let candidates = [
        std::env::var_os("TOOLSEARCH_SHARED").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")),
        Some(PathBuf::from("/work/shared")),
    ];
    for candidate in candidates.into_iter().flatten() {
        if candidate.join("eval").is_dir() {
            return candidate;
        }
    }
    panic!(
        "the reference data directory (with eval/ and catalogs/) was not found: set TOOLSEARCH_SHARED or place it at ../shared"
    )
}

/// Runs the real `toolsearch` binary with `args`.
pub fn toolsearch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsearch"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the toolsearch binary runs")
}

/// stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A two-thread Tokio runtime, as a gateway server would run.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The body of an HTTP/1.1 response with `Transfer-Encoding: chunked`, de-chunked (a truncated
/// last chunk ends it).
pub fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}
