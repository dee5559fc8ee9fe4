//! The measurement wing: everything that measures or simulates, kept out of the product's rooms.
//!
//! Owns: the cell bench (warm pool, cold fork, the in-process floor, the Node.js reference
//! runner; `cells`, `floor`), the query-latency workload (`search`), the eval runner (`eval`),
//! the provider-payload and real-model benchmarks (`payload`), the scripted OpenAI-compatible
//! mock provider, its scripted models and the release-order scenario (`mock`, `script`,
//! `scenario`), the load test of `serve --http` and its lean MCP client (`serve_load`,
//! `lean_client`), the task suite of `bench agent --tasks` (`tasks`) and the stub MCP server
//! serving its vendored listings in `catalogs/` (`stub_mcp`, the hidden `stub-mcp` command), and
//! the command lines of `bench`, `eval` and `mock-provider` (`command`).
//!
//! Rules: product modules never import this one; the wing uses the product through the same
//! crate APIs an adapter uses (sessions, MCP upstreams, the gateway, the search index, the
//! sandbox's supervisor), except the in-process floor, which reaches the isolate through the one
//! crate-private door `sandbox::lab_hook`. Every series checks its results, so a broken path
//! cannot look fast.
//!
//! Limits: behind the cargo feature `lab` (on by default; it needs `demo`). A build without it
//! has no `bench`, `eval`, `mock-provider` or `stub-mcp` command and says so. The in-process
//! floor runs a cell *unsandboxed* and only ever runs the bench's own cell, never a model's code.

pub mod cells;
pub(crate) mod command;
pub(crate) mod eval;
mod floor;
mod lean_client;
pub(crate) mod mock;
pub(crate) mod payload;
pub(crate) mod scenario;
mod script;
pub mod search;
pub(crate) mod serve_load;
pub(crate) mod stub_mcp;
pub mod tasks;

use std::path::{Path, PathBuf};

use crate::catalog::{CatalogSnapshot, Source};

pub use mock::{MockError, MockProvider, RecordedRequest};
pub use script::{Fault, MockScenario, MockStep, SmallModel};

/// The agent benchmarks (`toolsearch bench payload`, `toolsearch bench agent`) and their
/// scenario: synthetic catalogs, the release-order target, its executions.
pub mod agent {
    pub use super::payload::*;
    pub use super::scenario::*;
}

/// `sub` of the shared reference data ($TOOLSEARCH_SHARED/<sub>, else ../shared/<sub>), when it
/// exists.
pub(crate) fn shared_dir(sub: &str) -> Option<PathBuf> {
    [
        std::env::var_os("TOOLSEARCH_SHARED").map(|p| PathBuf::from(p).join(sub)),
        Some(PathBuf::from("../shared").join(sub)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_dir())
}

/// One catalog file of trusted plugin tools, as the product's commands load it: skipped lines and
/// catalog issues are reported on stderr; a file with no tool is an error.
pub(crate) fn load_catalog_file(path: &Path) -> anyhow::Result<CatalogSnapshot> {
    let loaded = crate::catalog::file::load_catalog_file(path, Source::Plugin)?;
    for issue in &loaded.issues {
        eprintln!("toolsearch: {}: skipped {issue}", path.display());
    }
    if !loaded.issues.is_empty() {
        eprintln!(
            "toolsearch: skipped {} catalog line(s)",
            loaded.issues.len()
        );
    }
    if loaded.descriptors.is_empty() {
        anyhow::bail!("no tool loaded from the catalog file(s)");
    }
    let snapshot = CatalogSnapshot::build(loaded.descriptors);
    for issue in snapshot.issues() {
        eprintln!("toolsearch: {issue}");
    }
    Ok(snapshot)
}
