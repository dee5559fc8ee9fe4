//! The task suite's stub MCP server, `toolsearch stub-mcp` (hidden): a vendored tool listing
//! served over stdio, so that the suite reaches its tools the way a user's MCP servers are
//! reached — a spawned stdio upstream, `tools/list`, `tools/call`.
//!
//! Owns: the built-in listings (`catalogs/`, by name: [`LISTINGS`]); reading a listing (a
//! built-in name or a file: JSON Lines, a JSON array or a `tools/list` answer) into its entries
//! ([`entries`]); listing them as vendored (name, description, `inputSchema`, `annotations`; with
//! `--server`, only that server's entries); answering every `tools/call` of a listed tool with
//! `{"ok": true, "confirmation": <fresh nonce>, …}` plus the tool's `--yields` fields, as JSON
//! text content and as `structuredContent`, after appending one JSON line `{"tool": raw name,
//! "arguments", "nonce", "unix_ms", "pid"}` to the record file (one write per line, before the
//! answer leaves).
//!
//! Never does: run a listed tool's real behaviour, list an output schema (the answer is the
//! stub's shape, not the tool's), answer a tool it does not list (a protocol error, nothing
//! recorded), answer a call it could not record, or write anything but JSON-RPC to stdout.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use clap::Args;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData as McpError,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServiceExt};
use serde_json::{Map, Value, json};

use super::scenario::fresh_nonce;
use crate::sync::Locked;

/// The built-in listings by name (the stems of the vendored files).
pub(crate) const LISTINGS: [(&str, &str); 2] = [
    (
        "github-mcp-server",
        include_str!("catalogs/github_mcp_server.jsonl"),
    ),
    (
        "npm-mcp-servers",
        include_str!("catalogs/npm_mcp_servers.jsonl"),
    ),
];

/// `toolsearch stub-mcp`: serve a listing whose every tool answers with a fresh nonce.
#[derive(Debug, Args)]
pub(crate) struct StubMcpArgs {
    /// The listing: a built-in name (github-mcp-server, npm-mcp-servers) or a listing file.
    #[arg(long, value_name = "NAME|FILE")]
    listing: String,
    /// Serve only the entries whose `server` is NAME.
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
    /// Append one JSON line per call to FILE (created when missing).
    #[arg(long, value_name = "FILE")]
    record: PathBuf,
    /// Extra answer fields per tool: a JSON object mapping a listed tool's name to an object.
    #[arg(long, value_name = "JSON")]
    yields: Option<String>,
}

/// One entry of a listing: the server it names, if any, and the tool as listed.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The entry's `server`.
    pub server: Option<String>,
    /// Name, description, input schema and annotations as vendored.
    pub tool: Tool,
}

/// The text of a listing: a built-in one by name, else the file at that path.
pub(crate) fn listing_text(listing: &str) -> Result<Cow<'static, str>> {
    if let Some((_, text)) = LISTINGS.iter().find(|(name, _)| *name == listing) {
        return Ok(Cow::Borrowed(text));
    }
    let path = Path::new(listing);
    if !path.is_file() {
        bail!(
            "unknown listing {listing:?}: expected a built-in listing ({}) or a listing file",
            LISTINGS.map(|(name, _)| name).join(", ")
        );
    }
    use crate::config::input;
    let bytes = input::read_bounded(path, input::MAX_CATALOG_BYTES, "listing file")
        .map_err(anyhow::Error::msg)?;
    Ok(Cow::Owned(String::from_utf8(bytes).with_context(|| {
        format!("the listing file {} is not UTF-8", path.display())
    })?))
}

/// A listing's entries, in order; the first bad entry is an error naming its line (or its
/// position in a JSON array).
pub(crate) fn entries(text: &str) -> Result<Vec<Entry>> {
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    let document = (trimmed.starts_with('[') || trimmed.starts_with('{'))
        .then(|| serde_json::from_str::<Value>(trimmed).ok())
        .flatten();
    let numbered: Vec<(usize, Value)> = match document {
        Some(Value::Array(items)) => items.into_iter().enumerate().collect(),
        Some(Value::Object(mut map)) if map.contains_key("tools") => match map.remove("tools") {
            Some(Value::Array(items)) => items.into_iter().enumerate().collect(),
            _ => bail!("the listing's \"tools\" is not an array"),
        },
        // JSON Lines (one tool a line; blank lines and `//` comments skipped).
        _ => {
            let mut lines = Vec::new();
            for (number, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with("//") {
                    continue;
                }
                let value = serde_json::from_str(line)
                    .with_context(|| format!("listing line {}: not valid JSON", number + 1))?;
                lines.push((number, value));
            }
            lines
        }
    };
    numbered
        .into_iter()
        .map(|(number, value)| {
            entry(value).with_context(|| format!("listing entry {}", number + 1))
        })
        .collect()
}

fn entry(value: Value) -> Result<Entry> {
    let Value::Object(mut map) = value else {
        bail!("not a JSON object");
    };
    let name = match map.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => bail!("no \"name\" string"),
    };
    let server = match map.remove("server") {
        Some(Value::String(server)) => Some(server),
        None | Some(Value::Null) => None,
        Some(_) => bail!("{name}: \"server\" is not a string"),
    };
    let schema = map
        .remove("inputSchema")
        .or_else(|| map.remove("input_schema"))
        .unwrap_or_else(|| json!({"type": "object"}));
    let mut listed = Map::new();
    listed.insert("name".into(), Value::String(name.clone()));
    for (key, value) in [
        ("description", map.remove("description")),
        ("inputSchema", Some(schema)),
        ("annotations", map.remove("annotations")),
    ] {
        if let Some(value) = value.filter(|v| !v.is_null()) {
            listed.insert(key.into(), value);
        }
    }
    let tool = serde_json::from_value(Value::Object(listed))
        .with_context(|| format!("{name}: not an MCP tool"))?;
    Ok(Entry { server, tool })
}

/// Milliseconds since the Unix epoch, with a fraction (the clock the suite's verdict reads).
pub(crate) fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The server: its tools, each tool's extra answer fields, the record file.
#[derive(Clone)]
struct Stub {
    tools: Arc<Vec<Tool>>,
    yields: Arc<Map<String, Value>>,
    record: Arc<Mutex<std::fs::File>>,
}

impl Stub {
    /// Reads and checks everything the flags name, before anything is served.
    fn new(args: &StubMcpArgs) -> Result<Stub> {
        let text = listing_text(&args.listing)?;
        let all = entries(&text)?;
        let tools: Vec<Tool> = match &args.server {
            None => all.into_iter().map(|e| e.tool).collect(),
            Some(server) => {
                let mut servers: Vec<String> = Vec::new();
                let mut tools = Vec::new();
                for entry in all {
                    match entry.server {
                        Some(s) if s == *server => tools.push(entry.tool),
                        Some(s) if !servers.contains(&s) => servers.push(s),
                        _ => {}
                    }
                }
                if tools.is_empty() {
                    bail!(
                        "the listing {:?} has no tool of the server {server:?} (its servers: {})",
                        args.listing,
                        servers.join(", ")
                    );
                }
                tools
            }
        };
        if tools.is_empty() {
            bail!("the listing {:?} lists no tool", args.listing);
        }
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        if let Some(twice) = names.windows(2).find(|w| w[0] == w[1]) {
            bail!("the listing {:?} lists {:?} twice", args.listing, twice[0]);
        }
        let yields = match &args.yields {
            None => Map::new(),
            Some(text) => match serde_json::from_str(text) {
                Ok(Value::Object(map)) => map,
                _ => bail!("--yields must be a JSON object mapping tool names to objects"),
            },
        };
        for (name, extra) in &yields {
            if names.binary_search(&name.as_str()).is_err() {
                bail!("--yields names {name:?}, which this server does not list");
            }
            if !extra.is_object() {
                bail!("--yields: the fields of {name:?} must be a JSON object");
            }
        }
        let record = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&args.record)
            .with_context(|| format!("cannot open the record file {}", args.record.display()))?;
        Ok(Stub {
            tools: Arc::new(tools),
            yields: Arc::new(yields),
            record: Arc::new(Mutex::new(record)),
        })
    }

    /// Appends one call to the record, as one line in one write.
    fn record(&self, tool: &str, arguments: &Value, nonce: &str) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(&json!({
            "tool": tool,
            "arguments": arguments,
            "nonce": nonce,
            "unix_ms": unix_ms(),
            "pid": std::process::id(),
        }))?;
        line.push(b'\n');
        let mut file = self.record.locked();
        file.write_all(&line)?;
        file.flush()
    }
}

impl ServerHandler for Stub {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("toolsearch-stub-mcp", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if !self.tools.iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {:?}", crate::config::input::echo(&name)),
                None,
            ));
        }
        let arguments = request.arguments.map_or_else(|| json!({}), Value::Object);
        let nonce = fresh_nonce();
        self.record(&name, &arguments, &nonce).map_err(|e| {
            McpError::internal_error(format!("the stub could not record the call: {e}"), None)
        })?;
        let mut answer = Map::new();
        answer.insert("ok".into(), Value::Bool(true));
        answer.insert("confirmation".into(), Value::String(nonce));
        if let Some(Value::Object(extra)) = self.yields.get(&name) {
            answer.extend(extra.clone());
        }
        let answer = Value::Object(answer);
        let mut result = CallToolResult::success(vec![ContentBlock::text(answer.to_string())]);
        result.structured_content = Some(answer);
        Ok(CallToolResponse::Complete(result))
    }
}

/// Runs `toolsearch stub-mcp` until the client closes stdin (or the process is stopped).
pub(crate) fn stub_mcp(args: StubMcpArgs) -> Result<ExitCode> {
    let stub = Stub::new(&args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = match stub.serve((tokio::io::stdin(), tokio::io::stdout())).await {
            Ok(running) => running,
            // The client left before initializing: nothing to serve.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => bail!("the stub MCP server failed to start: {e}"),
        };
        let _ = running.waiting().await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_builtin_listings_parse_whole() {
        let counts: Vec<usize> = LISTINGS
            .iter()
            .map(|(_, text)| entries(text).unwrap().len())
            .collect();
        assert_eq!(counts, [117, 95]);
        for (_, text) in LISTINGS {
            assert!(entries(text).unwrap().iter().all(|e| e.server.is_some()));
        }
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let unknown = listing_text("no-such-listing").unwrap_err().to_string();
        assert!(unknown.contains("unknown listing"), "{unknown}");
        assert!(unknown.contains("github-mcp-server"), "{unknown}");
        let bad = entries("{\"name\": \"a\"}\nnot json\n")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("line 2"), "{bad}");
        let args = StubMcpArgs {
            listing: "github-mcp-server".into(),
            server: None,
            record: PathBuf::from("/nonexistent-dir/record.jsonl"),
            yields: None,
        };
        let record = Stub::new(&args).err().unwrap().to_string();
        assert!(record.contains("cannot open the record file"), "{record}");
        let args = StubMcpArgs {
            server: Some("server-nowhere".into()),
            ..args
        };
        let server = Stub::new(&args).err().unwrap().to_string();
        assert!(server.contains("server-nowhere"), "{server}");
    }
}
