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
//! Tolerant by design: one bad entry never drops the server. An entry without a usable name (or
//! that is not an object) is skipped with an issue; a missing or non-object `inputSchema` (an
//! array, a string, `true`), or one nested past the message depth bound
//! (`MAX_MCP_MESSAGE_DEPTH`, counted from the message), becomes `{}` with an issue; a schema,
//! annotations object or description beyond its bound is replaced, dropped or cut with an issue.
//!
//! Bounded by what is kept: [`Ingest`] takes a listing entry by entry across its pages
//! ([`read_page`] streams one page's `tools` array out of the message text, each entry a raw
//! slice that is parsed into a tree only once its kind, nesting and size passed), and once
//! [`MAX_TOOLS_PER_SERVER`] tools are kept it only counts further entries; the lister then asks
//! for no more pages, and the cap is one issue.

use std::borrow::Cow;
use std::collections::HashSet;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::bounded::{compact_len, nesting};
use super::names::escape;
use crate::catalog::{Descriptor, Source};
use crate::config::input::MAX_MCP_MESSAGE_DEPTH;
use crate::config::{McpApproval, McpServer};

/// Most tools one server contributes; the rest are dropped with an issue.
pub const MAX_TOOLS_PER_SERVER: usize = 10_000;
/// Longest raw tool name accepted, in bytes.
pub const MAX_RAW_NAME_BYTES: usize = 1_024;
/// Longest description kept, in bytes (cut at a character boundary).
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// Largest input or output schema kept, as compact JSON bytes.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Largest `annotations` object kept, as compact JSON bytes (larger ones are dropped).
pub const MAX_ANNOTATIONS_BYTES: usize = 16 * 1024;
/// Levels above a tool's schema in a `tools/list` message (the message, `result`, `tools`, the
/// entry): a schema may nest `MAX_MCP_MESSAGE_DEPTH` minus these.
const ENTRY_FIELD_DEPTH: usize = 4;

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

/// The JSON kind of a raw value, from its first byte.
fn raw_kind(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// A schema (or annotations object) as kept: an object within `max_bytes` whose nesting keeps
/// the message within [`MAX_MCP_MESSAGE_DEPTH`], parsed from its raw text only once it passed
/// those checks; else `None` with the reason.
fn object_within(raw: Option<&RawValue>, max_bytes: usize) -> Result<Option<Value>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.get().as_bytes().first() {
        Some(b'{') => {}
        Some(b'n') => return Ok(None),
        _ => return Err(format!("is {}, not an object", raw_kind(raw))),
    }
    let bytes = raw.get().as_bytes();
    let depth = nesting(bytes);
    if depth + ENTRY_FIELD_DEPTH > MAX_MCP_MESSAGE_DEPTH {
        return Err(format!(
            "is nested {depth} levels deep, past the message depth bound (MAX_MCP_MESSAGE_DEPTH, \
             {MAX_MCP_MESSAGE_DEPTH} levels in all)"
        ));
    }
    // The whitespace-free length first (no tree is built for what is far too large), then the
    // exact compact length of what was parsed.
    let approximate = compact_len(bytes);
    if approximate > 2 * max_bytes {
        return Err(format!("is about {approximate} bytes (over {max_bytes})"));
    }
    let value: Value =
        serde_json::from_str(raw.get()).map_err(|e| format!("is not valid JSON ({e})"))?;
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, &value);
    if counter.0 > max_bytes {
        return Err(format!("is {} bytes (over {max_bytes})", counter.0));
    }
    Ok(Some(value))
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A string field, or `None` when absent or not a string.
fn string<'a>(raw: Option<&'a RawValue>) -> Option<Cow<'a, str>> {
    serde_json::from_str::<Cow<'a, str>>(raw?.get()).ok()
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

/// One `tools/list` entry as written: every field a raw slice of the message, so nothing is
/// copied or parsed before it is checked.
#[derive(Deserialize)]
struct RawEntry<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    title: Option<&'a RawValue>,
    #[serde(borrow, default)]
    description: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "inputSchema")]
    input_schema: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "outputSchema")]
    output_schema: Option<&'a RawValue>,
    #[serde(borrow, default)]
    annotations: Option<&'a RawValue>,
}

/// Ingestion of one listing, entry by entry across its pages: what is kept, what was skipped or
/// repaired, and whether the per-server cap is reached (then the lister stops reading pages).
pub struct Ingest<'s> {
    server: &'s McpServer,
    filters: &'s Filters,
    out: Ingested,
    seen: HashSet<String>,
    /// Entries seen so far (the next entry's number).
    index: usize,
    /// Entries seen after the cap was reached.
    left_out: usize,
    /// Whether pages the server offered were not read because the cap was reached.
    unread_pages: bool,
}

impl<'s> Ingest<'s> {
    /// A listing of `server`'s tools through its `filters`.
    pub fn new(server: &'s McpServer, filters: &'s Filters) -> Ingest<'s> {
        Ingest {
            server,
            filters,
            out: Ingested::default(),
            seen: HashSet::new(),
            index: 0,
            left_out: 0,
            unread_pages: false,
        }
    }

    /// Whether [`MAX_TOOLS_PER_SERVER`] tools are kept: further entries are only counted.
    pub fn full(&self) -> bool {
        self.out.tools.len() >= MAX_TOOLS_PER_SERVER
    }

    /// Notes that the server offered further pages that were not read (the cap was reached).
    pub fn pages_left_unread(&mut self) {
        self.unread_pages = true;
    }

    /// One entry as the JSON value it is (the HTTP transport's decoded listing).
    pub fn value(&mut self, entry: &Value) {
        match serde_json::value::to_raw_value(entry) {
            Ok(raw) => self.raw(&raw),
            Err(_) => {
                let index = self.next_index();
                self.out.issues.push(format!(
                    "tool #{index} is not a JSON object with a name; skipped"
                ));
            }
        }
    }

    fn next_index(&mut self) -> usize {
        self.index += 1;
        self.index - 1
    }

    /// One entry as its raw JSON text (a slice of the message it came in).
    pub fn raw(&mut self, entry: &RawValue) {
        let index = self.next_index();
        if self.full() {
            self.left_out += 1;
            return;
        }
        let out = &mut self.out;
        let Ok(fields) = serde_json::from_str::<RawEntry<'_>>(entry.get()) else {
            out.issues.push(format!(
                "tool #{index} is {}, not a JSON object with a name; skipped",
                match raw_kind(entry) {
                    "an object" => "an object with malformed fields",
                    other => other,
                }
            ));
            return;
        };
        let Some(raw_name) = string(fields.name) else {
            out.issues
                .push(format!("tool #{index} has no string name; skipped"));
            return;
        };
        let raw_name: &str = &raw_name;
        if raw_name.is_empty() || raw_name.len() > MAX_RAW_NAME_BYTES {
            out.issues.push(format!(
                "tool #{index} has a name of {} bytes (1–{MAX_RAW_NAME_BYTES} accepted); skipped",
                raw_name.len()
            ));
            return;
        }
        let quoted: String = cut(raw_name, 80).escape_debug().collect();
        if !self.seen.insert(raw_name.to_string()) {
            out.issues.push(format!(
                "tool \"{quoted}\" is listed twice; the first is kept"
            ));
            return;
        }
        if !self.filters.keeps(raw_name) {
            return;
        }
        let name = escape(raw_name);
        let description = string(fields.description).unwrap_or_default();
        if description.len() > MAX_DESCRIPTION_BYTES {
            out.issues.push(format!(
                "tool \"{quoted}\": description cut to {MAX_DESCRIPTION_BYTES} bytes"
            ));
        }
        let input_schema = match object_within(fields.input_schema, MAX_SCHEMA_BYTES) {
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
        let output_schema = match object_within(fields.output_schema, MAX_SCHEMA_BYTES) {
            Ok(schema) => schema,
            Err(why) => {
                out.issues
                    .push(format!("tool \"{quoted}\": outputSchema {why}; dropped"));
                None
            }
        };
        let annotations = match fields.annotations {
            Some(raw) if raw_kind(raw) == "an object" => {
                match object_within(Some(raw), MAX_ANNOTATIONS_BYTES) {
                    Ok(annotations) => annotations,
                    Err(why) => {
                        out.issues
                            .push(format!("tool \"{quoted}\": annotations {why}; dropped"));
                        None
                    }
                }
            }
            _ => None,
        };
        let title = string(fields.title)
            .map(Cow::into_owned)
            .or_else(|| {
                annotations
                    .as_ref()?
                    .get("title")?
                    .as_str()
                    .map(str::to_string)
            })
            .map(|t| cut(&t, 256).to_string());
        let mut descriptor = Descriptor::new(Source::Mcp, &self.server.name, &name)
            .description(cut(&description, MAX_DESCRIPTION_BYTES))
            .input_schema(input_schema);
        descriptor.output_schema = output_schema;
        descriptor.label = title;
        descriptor.requires_approval = needs_approval(self.server.approval, annotations.as_ref());
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

    /// What the listing yielded; the cap, when reached, is one issue.
    pub fn finish(mut self) -> Ingested {
        if self.left_out > 0 || self.unread_pages {
            let more = if self.unread_pages {
                format!(
                    "{} more tools and the pages after them were left out",
                    self.left_out
                )
            } else {
                format!("{} more tools were left out", self.left_out)
            };
            self.out.issues.push(format!(
                "{more} (a server contributes at most {MAX_TOOLS_PER_SERVER} tools, limit \
                 MAX_TOOLS_PER_SERVER; no further pages are read)"
            ));
        }
        self.out
    }
}

/// Ingests `entries` (the `tools` arrays of every page, concatenated) for `server` (the fuzz
/// target and tests; the upstream ingests page by page).
#[cfg(any(test, feature = "fuzzing"))]
pub fn ingest(server: &McpServer, filters: &Filters, entries: &[Value]) -> Ingested {
    let mut ingest = Ingest::new(server, filters);
    for entry in entries {
        ingest.value(entry);
    }
    ingest.finish()
}

/// Reads one `tools/list` page from the raw text of the JSON-RPC response carrying it
/// (`{"jsonrpc", "id", "result": {"tools": [...], "nextCursor"?}}`), entry by entry into
/// `ingest` without building the page or its entries as trees: each entry stays a slice of
/// `message` until it is checked. Returns the next cursor.
pub fn read_page(message: &str, ingest: &mut Ingest<'_>) -> Result<Option<String>, String> {
    let mut de = serde_json::Deserializer::from_str(message);
    let cursor = serde::de::DeserializeSeed::deserialize(Response(ingest), &mut de)
        .map_err(|e| format!("the tools/list answer is not a list of tools ({e})"))?;
    Ok(cursor)
}

/// The response object: its `result` is a page; everything else is skipped.
struct Response<'i, 's>(&'i mut Ingest<'s>);
/// A page object: `tools` streamed into the ingestion, `nextCursor` kept.
struct Page<'i, 's>(&'i mut Ingest<'s>);
/// The `tools` array, one raw entry at a time.
struct Entries<'i, 's>(&'i mut Ingest<'s>);

impl<'de> serde::de::DeserializeSeed<'de> for Response<'_, '_> {
    type Value = Option<String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Response<'_, '_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC response")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut cursor = None;
        let mut found = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "result" && !found {
                found = true;
                cursor = map.next_value_seed(Page(&mut *self.0))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        if !found {
            return Err(serde::de::Error::missing_field("result"));
        }
        Ok(cursor)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Page<'_, '_> {
    type Value = Option<String>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Page<'_, '_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a tools/list result object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut cursor = None;
        let mut tools = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "tools" if !tools => {
                    tools = true;
                    map.next_value_seed(Entries(&mut *self.0))?;
                }
                "nextCursor" => {
                    // Anything but a string is no cursor (the listing ends).
                    let raw = map.next_value::<Option<&'de RawValue>>()?;
                    cursor = raw.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        if !tools {
            return Err(serde::de::Error::missing_field("tools"));
        }
        Ok(cursor)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Entries<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Entries<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of tools")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<&'de RawValue>()? {
            self.0.raw(entry);
        }
        Ok(())
    }
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
            protocol: Default::default(),
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
        assert_eq!(
            ingested.tools[2].descriptor.input_schema,
            std::sync::Arc::new(json!({}))
        );
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
