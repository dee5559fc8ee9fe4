//! The demo catalog as data: `catalog.json`, embedded at compile time and parsed once.
//!
//! One JSON object per tool: `source`, `owner`, `name`, optional `label`, `description`,
//! `input_schema`, optional `output_schema`, optional `execution_mode` (`parallel` |
//! `sequential`), `requires_approval`, `timeout_ms` and `catalog_mode` (`catalog` |
//! `direct-only`). Unknown keys are rejected, so a typo in the data fails the tests instead of
//! being ignored.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{CatalogMode, ExecutionMode, Source};

/// The embedded data.
const CATALOG_JSON: &str = include_str!("catalog.json");

/// One tool of `catalog.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolSpec {
    pub(crate) source: Source,
    pub(crate) owner: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) label: Option<String>,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    #[serde(default)]
    pub(crate) output_schema: Option<Value>,
    #[serde(default)]
    pub(crate) execution_mode: ExecutionMode,
    #[serde(default)]
    pub(crate) requires_approval: bool,
    #[serde(default)]
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) catalog_mode: CatalogMode,
}

fn parsed() -> &'static Result<Vec<ToolSpec>, String> {
    static PARSED: OnceLock<Result<Vec<ToolSpec>, String>> = OnceLock::new();
    PARSED.get_or_init(|| {
        serde_json::from_str(CATALOG_JSON).map_err(|e| format!("demo catalog.json: {e}"))
    })
}

/// The parsed tools (empty when the data is broken; see [`load_error`]).
pub(crate) fn specs() -> &'static [ToolSpec] {
    match parsed() {
        Ok(specs) => specs,
        Err(_) => &[],
    }
}

/// The parse error of the embedded data, if any.
pub(crate) fn load_error() -> Option<&'static str> {
    parsed().as_ref().err().map(String::as_str)
}
