//! Entry points for the coverage-guided fuzz targets in `fuzz/` (cargo-fuzz, libFuzzer).
//!
//! Compiled only with the non-default feature `fuzzing`, and hidden from the docs: this is **not
//! a stable API**. It re-exports, or wraps in a few lines, exactly the crate-internal functions
//! the fuzz targets drive — the parsers and renderers that read untrusted or hand-written input —
//! so that each target runs the product's own code path, not a copy of it.
//!
//! Owns nothing of its own: no parsing, no checks. Never does: anything a target could not do
//! through the product (no alternative code paths, no relaxed bounds).

use std::sync::Arc;

use serde_json::Value;

pub use crate::catalog::file::{LineIssue, LoadedFile, parse_catalog};
pub use crate::catalog::{CatalogSnapshot, Descriptor, Source};
pub use crate::config::input::MAX_DOCUMENT_DEPTH;
pub use crate::config::{
    AUTO_MAX_SCHEMA_TOKENS, AUTO_MAX_TOOLS, CODE_TIMEOUT_MS, Config, ConfigError, MAX_SEARCH_LIMIT,
    MCP_CALL_TIMEOUT_MS, MCP_STARTUP_TIMEOUT_MS, MEMORY_LIMIT_BYTES, McpApproval, McpServer,
    McpTransport, SearchLimits,
};
pub use crate::mcp::ingest::{
    Ingested, Listed, MAX_DESCRIPTION_BYTES, MAX_RAW_NAME_BYTES, MAX_SCHEMA_BYTES,
    MAX_TOOLS_PER_SERVER,
};
pub use crate::mcp::names::{MAX_TOOL_NAME, escape, is_valid_tool_name, unescape};
pub use crate::policy::{Authorized, Policy, PolicyError};
pub use crate::sandbox::{Limits, LogLine, Outcome};
pub use crate::search::SearchIndex;
pub use crate::search::batch::{
    BatchError, MAX_LIMIT_SUM, MAX_QUERIES, MAX_QUERY_CHARS, MAX_QUERY_LIST_BYTES, QuerySpec,
    SearchRequest, parse_search_request,
};
pub use crate::signature::{
    INPUT_BOUNDS, NODE_BUDGET, OUTPUT_BOUNDS, Signature, input_signature, output_signature,
};
pub use crate::surface::ProviderNames;
pub use crate::surface::is_valid_provider_name;

/// The catalog-file loader on a file's bytes (what [`crate::load_catalog_file`] does after the
/// bounded read): non-UTF-8 lines are skipped with their numbers, the rest loads.
pub fn load_catalog_bytes(bytes: &[u8], stem: &str, source: Source) -> Option<LoadedFile> {
    crate::catalog::file::parse_bytes(bytes.to_vec(), stem, source)
}

/// The JSON5 config loader on a file's text (what `Config::from_file` does after the read).
pub fn parse_config(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, None)
}

/// The policy loader on a file's text (what `Policy::from_file` does after the read).
pub fn parse_policy(text: &str) -> Result<Policy, PolicyError> {
    Policy::parse_text(text, "fuzz.json")
}

/// The canonical form of a policy (what its fingerprint hashes): a policy document itself.
pub fn policy_canonical(policy: &Policy) -> String {
    policy.canonical().to_string()
}

/// A policy's fingerprint (0 for allow-all).
pub fn policy_fingerprint(policy: &Policy) -> u64 {
    policy.fingerprint()
}

/// The search index `tool_call` requests resolve against.
pub fn build_index(descriptors: Vec<Descriptor>) -> Option<SearchIndex> {
    let snapshot = CatalogSnapshot::build(descriptors);
    SearchIndex::build(&Authorized::new(snapshot, Policy::allow_all())).ok()
}

/// `tool_call` argument repair (the gateway's resolve stage): the named tool's id and the
/// arguments as they will be validated, or the error the model would read.
pub fn repair_call(index: &SearchIndex, request: &Value) -> Result<(String, Value), String> {
    match crate::gateway::parse_call_request(index, request) {
        Ok((Some(id), args)) => Ok((id, args)),
        Ok((None, _)) => Err("resolved to no tool".to_string()),
        Err(error) => Err(error.message),
    }
}

/// A trusted tool's input schema compiled as the gateway compiles it.
pub struct CompiledSchema(Arc<jsonschema::Validator>);

impl CompiledSchema {
    /// Compiles `schema` (normalizing draft-04 leftovers as the gateway does), or says why not.
    pub fn new(schema: &Value) -> Result<CompiledSchema, String> {
        crate::gateway::validate::compile(schema, "input").map(CompiledSchema)
    }

    /// The validator's own verdict.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.0.is_valid(instance)
    }

    /// The problems the gateway reports for `instance` (`(path, reason)`; empty when valid) and
    /// the text the model reads when there are any.
    pub fn problems(
        &self,
        tool_id: &str,
        schema: &Value,
        instance: &Value,
    ) -> (Vec<(String, String)>, String) {
        let problems = crate::gateway::validate::problems(&self.0, schema, instance);
        let signature = input_signature(schema).text;
        let text = crate::gateway::validate::render(tool_id, &problems, &signature);
        (
            problems.into_iter().map(|p| (p.path, p.reason)).collect(),
            text,
        )
    }
}

/// Most validation problems reported for one call.
pub const MAX_REPORTED_ERRORS: usize = crate::gateway::validate::MAX_REPORTED_ERRORS;

/// What the supervisor made of the bytes a worker wrote.
#[derive(Debug)]
pub struct FrameDecoding {
    /// Bridge calls the frames started.
    pub calls_started: usize,
    /// How the cell ended, when the frames ended it.
    pub outcome: Option<Outcome>,
    /// The cell's value (only with `Outcome::Ok`).
    pub value: Option<Value>,
    /// The console lines kept.
    pub logs: Vec<LogLine>,
    /// Whether console lines were dropped or cut.
    pub logs_truncated: bool,
    /// Bytes of kept console output, as the supervisor counted them.
    pub log_bytes: usize,
    /// Bytes not consumed (an incomplete frame).
    pub left: usize,
}

/// The supervisor's frame decoder (host side) on bytes from a worker, delivered in
/// `chunk`-byte reads; a `Done` frame goes through the supervisor's own checks of the worker's
/// result and logs.
pub fn decode_worker_bytes(bytes: &[u8], chunk: usize, limits: &Limits) -> FrameDecoding {
    let decoded = crate::sandbox::decode_worker_bytes(bytes, chunk, limits);
    let mut out = FrameDecoding {
        calls_started: decoded.calls_started,
        outcome: None,
        value: None,
        logs: Vec::new(),
        logs_truncated: false,
        log_bytes: 0,
        left: decoded.left,
    };
    if let Some(result) = decoded.result {
        out.outcome = Some(result.outcome);
        out.value = result.value;
        out.logs = result.logs;
        out.logs_truncated = result.logs_truncated;
        out.log_bytes = result.telemetry.log_bytes;
    }
    out
}

/// MCP `tools/list` ingestion: one answer (`{"tools": [...], "nextCursor"?}`) decoded as the
/// MCP client decodes it, its tools turned into entries as the upstream does, and ingested for
/// `server`. `Err` when the answer is not a `tools/list` result or a filter glob is bad.
pub fn ingest_tools_list(server: &McpServer, answer: &[u8]) -> Result<Ingested, String> {
    let page: rmcp::model::ListToolsResult =
        serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    let filters = crate::mcp::ingest::Filters::new(server).map_err(|e| e.to_string())?;
    let entries: Vec<Value> = crate::mcp::upstream::listing::page_entries(page.tools).collect();
    Ok(crate::mcp::ingest::ingest(server, &filters, &entries))
}
