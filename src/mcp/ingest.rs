//! `tools/list` ingestion: an MCP server's tool entries, as the JSON it sent, become untrusted
//! catalog descriptors (SPEC ).
//!
//! Owns: turning each entry into a [`Descriptor`] of source `mcp`, owner = the server's name,
//! catalog name = the [escaped](super::names::escape) tool name; keeping the raw name (what the
//! upstream receives), `outputSchema` and `annotations`; the approval rule
//! ([`McpApproval`]: `destructiveHint: true` without `readOnlyHint: true` needs approval by
//! default — fail closed); the server's `enabledTools` / `disabledTools` globs; and the bounds
//! below. Never does: talk to a server, attach an executor (the upstream does), index or walk a
//! schema (untrusted schemas are stored as given and never indexed).
//!
//! Tolerant by design: one bad entry never drops the server. An entry without a usable name is
//! skipped with an issue; a missing or non-object `inputSchema` becomes `{}` with an issue; a
//! schema or description beyond its bound is replaced or cut with an issue.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::names::escape;
use crate::catalog::{Descriptor, Source};
use crate::config::{McpApproval, McpServer};

/// Most tools one server contributes; the rest are dropped with an issue.
pub const MAX_TOOLS_PER_SERVER: usize = 10_000;
/// Longest raw tool name accepted, in bytes.
pub const MAX_RAW_NAME_BYTES: usize = 1_024;
/// Longest description kept, in bytes (cut at a character boundary).
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// Largest input or output schema kept, as compact JSON bytes.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// One listed tool: the raw upstream name and its descriptor (no executor yet).
#[derive(Debug, Clone)]
pub struct Listed {
    /// The name the upstream knows the tool by.
    pub raw_name: String,
    /// The catalog entry.
    pub descriptor: Descriptor,
}

/// What a listing yielded.
#[derive(Debug, Clone, Default)]
pub struct Ingested {
    /// The tools kept, in the server's order.
    pub tools: Vec<Listed>,
    /// What was skipped or repaired, one sentence each.
    pub issues: Vec<String>,
}

/// A glob in `enabledTools` / `disabledTools` that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mcp.servers.{server}.{key}: bad glob {glob:?}: {reason}")]
pub struct FilterError {
    /// The server.
    pub server: String,
    /// `enabledTools` or `disabledTools`.
    pub key: &'static str,
    /// The glob.
    pub glob: String,
    /// Why.
    pub reason: String,
}

/// A server's tool filters, compiled once.
#[derive(Debug, Clone)]
pub struct Filters {
    enabled: Option<GlobSet>,
    disabled: GlobSet,
}

impl Filters {
    /// Compiles the server's `enabledTools` / `disabledTools`.
    pub fn new(server: &McpServer) -> Result<Filters, FilterError> {
        let compile = |globs: &[String], key: &'static str| -> Result<GlobSet, FilterError> {
            let mut set = GlobSetBuilder::new();
            for glob in globs {
                set.add(Glob::new(glob).map_err(|e| FilterError {
                    server: server.name.clone(),
                    key,
                    glob: glob.clone(),
                    reason: e.kind().to_string(),
                })?);
            }
            set.build().map_err(|e| FilterError {
                server: server.name.clone(),
                key,
                glob: String::new(),
                reason: e.to_string(),
            })
        };
        Ok(Filters {
            enabled: server
                .enabled_tools
                .as_deref()
                .map(|globs| compile(globs, "enabledTools"))
                .transpose()?,
            disabled: compile(&server.disabled_tools, "disabledTools")?,
        })
    }

    fn keeps(&self, raw_name: &str) -> bool {
        self.enabled
            .as_ref()
            .is_none_or(|set| set.is_match(raw_name))
            && !self.disabled.is_match(raw_name)
    }
}

fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A schema as kept: an object within [`MAX_SCHEMA_BYTES`], else `None` with the reason.
fn schema(value: Option<&Value>) -> Result<Option<Value>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(_)) => {
            let bytes = value.map_or(0, |v| v.to_string().len());
            if bytes > MAX_SCHEMA_BYTES {
                Err(format!("is {bytes} bytes (over {MAX_SCHEMA_BYTES})"))
            } else {
                Ok(value.cloned())
            }
        }
        Some(other) => Err(format!(
            "is {}, not an object",
            crate::catalog::json_kind(other)
        )),
    }
}

/// Whether a tool with these annotations needs approval under `approval`.
fn needs_approval(approval: McpApproval, annotations: Option<&Value>) -> bool {
    let hint = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    match approval {
        McpApproval::Always => true,
        McpApproval::Never => false,
        McpApproval::Destructive => {
            hint("destructiveHint") == Some(true) && hint("readOnlyHint") != Some(true)
        }
    }
}

/// Ingests `entries` (the `tools` arrays of every page, concatenated) for `server`.
pub fn ingest(server: &McpServer, filters: &Filters, entries: &[Value]) -> Ingested {
    let mut out = Ingested::default();
    let mut seen = std::collections::HashSet::new();
    for (index, entry) in entries.iter().enumerate() {
        if out.tools.len() >= MAX_TOOLS_PER_SERVER {
            out.issues.push(format!(
                "{} more tools were left out (a server contributes at most {MAX_TOOLS_PER_SERVER})",
                entries.len() - index
            ));
            break;
        }
        let Some(raw_name) = entry.get("name").and_then(Value::as_str) else {
            out.issues
                .push(format!("tool #{index} has no string name; skipped"));
            continue;
        };
        if raw_name.is_empty() || raw_name.len() > MAX_RAW_NAME_BYTES {
            out.issues.push(format!(
                "tool #{index} has a name of {} bytes (1–{MAX_RAW_NAME_BYTES} accepted); skipped",
                raw_name.len()
            ));
            continue;
        }
        let quoted: String = cut(raw_name, 80).escape_debug().collect();
        if !seen.insert(raw_name.to_string()) {
            out.issues.push(format!(
                "tool \"{quoted}\" is listed twice; the first is kept"
            ));
            continue;
        }
        if !filters.keeps(raw_name) {
            continue;
        }
        let name = escape(raw_name);
        let description = entry
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if description.len() > MAX_DESCRIPTION_BYTES {
            out.issues.push(format!(
                "tool \"{quoted}\": description cut to {MAX_DESCRIPTION_BYTES} bytes"
            ));
        }
        let input_schema = match schema(entry.get("inputSchema")) {
            Ok(Some(schema)) => schema,
            Ok(None) => {
                out.issues
                    .push(format!("tool \"{quoted}\": no inputSchema; using {{}}"));
                Value::Object(Default::default())
            }
            Err(why) => {
                out.issues
                    .push(format!("tool \"{quoted}\": inputSchema {why}; using {{}}"));
                Value::Object(Default::default())
            }
        };
        let output_schema = match schema(entry.get("outputSchema")) {
            Ok(schema) => schema,
            Err(why) => {
                out.issues
                    .push(format!("tool \"{quoted}\": outputSchema {why}; dropped"));
                None
            }
        };
        let annotations = entry.get("annotations").filter(|a| a.is_object()).cloned();
        let title = entry
            .get("title")
            .and_then(Value::as_str)
            .or_else(|| annotations.as_ref()?.get("title")?.as_str())
            .map(|t| cut(t, 256).to_string());
        let mut descriptor = Descriptor::new(Source::Mcp, &server.name, &name)
            .description(cut(description, MAX_DESCRIPTION_BYTES))
            .input_schema(input_schema);
        descriptor.output_schema = output_schema;
        descriptor.label = title;
        descriptor.requires_approval = needs_approval(server.approval, annotations.as_ref());
        descriptor.annotations = annotations;
        if name != raw_name {
            // The upstream's own name, so policy and approval globs written with it match, and
            // a selector giving it resolves.
            descriptor.external_id = Some(format!("mcp:{}:{raw_name}", descriptor.owner));
        }
        out.tools.push(Listed {
            raw_name: raw_name.to_string(),
            descriptor,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::config::McpTransport;

    fn config(approval: McpApproval) -> McpServer {
        McpServer {
            name: "fs".into(),
            transport: McpTransport::Stdio {
                command: "node".into(),
                args: vec![],
                env: Default::default(),
                cwd: None,
            },
            startup_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
            enabled_tools: None,
            disabled_tools: vec!["secret_*".into()],
            approval,
            restart: true,
        }
    }

    #[test]
    fn entries_become_untrusted_descriptors_and_bad_ones_are_skipped_or_repaired() {
        let server = config(McpApproval::Destructive);
        let filters = Filters::new(&server).unwrap();
        let entries = vec![
            json!({"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true}}),
            json!({"name": "delete file", "inputSchema": {"type": "object"},
                   "annotations": {"destructiveHint": true}}),
            json!({"name": "write_file", "inputSchema": "not a schema",
                   "outputSchema": {"type": "object"}, "annotations": {"destructiveHint": true, "readOnlyHint": true}}),
            json!({"description": "no name"}),
            json!({"name": "read_file"}),
            json!({"name": "secret_tool", "inputSchema": {}}),
        ];
        let ingested = ingest(&server, &filters, &entries);
        let ids: Vec<&str> = ingested
            .tools
            .iter()
            .map(|t| t.descriptor.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "mcp:fs:read_file",
                "mcp:fs:_x_delete_20file",
                "mcp:fs:write_file"
            ]
        );
        assert_eq!(ingested.tools[1].raw_name, "delete file");
        let approvals: Vec<bool> = ingested
            .tools
            .iter()
            .map(|t| t.descriptor.requires_approval)
            .collect();
        assert_eq!(approvals, [false, true, false]);
        assert!(ingested.tools.iter().all(|t| !t.descriptor.is_trusted()));
        assert_eq!(ingested.tools[2].descriptor.input_schema, json!({}));
        assert!(ingested.tools[2].descriptor.output_schema.is_some());
        assert_eq!(ingested.issues.len(), 3, "{:?}", ingested.issues);
        let all = Filters::new(&McpServer {
            enabled_tools: Some(vec!["read_*".into()]),
            ..server.clone()
        })
        .unwrap();
        assert_eq!(ingest(&server, &all, &entries).tools.len(), 1);
        let always = config(McpApproval::Always);
        assert!(
            ingest(&always, &filters, &entries)
                .tools
                .iter()
                .all(|t| t.descriptor.requires_approval)
        );
    }
}
