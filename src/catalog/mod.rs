//! The catalog: tool descriptors, their sources and trust, the async [`Tool`] trait, and
//! immutable [`CatalogSnapshot`]s with a content fingerprint (SPEC R-1).
//!
//! Owns:
//! - [`Descriptor`] — every field of, plus the catalog file's own `external_id`.
//! - [`Source`] and trust: `core`/`plugin` are trusted, `mcp`/`client` are not.
//! - Ids `<source>:<owner>:<name>`, built by [`tool_id`]; clashes are disambiguated
//!   deterministically (`~2`, `~3`, … in content order) and reported, never dropped.
//! - [`CatalogSnapshot`]: catalog-mode tools sorted by id, direct-only tools kept apart,
//!   and a fingerprint that depends on content only, not on insertion order.
//! - Loading catalog files ([`file`]): a bad line is reported and skipped, the rest loads.
//!
//! Never does: policy (see `policy`), ranking (see `search`), or calling tools (see `gateway`).
//! Invariants: ids in a snapshot are unique; `tools()` is sorted by id; the fingerprint of two
//! snapshots built from the same descriptors in any order is identical.

pub mod file;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a tool comes from. The first two are first-party and trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Built into the gateway (coding primitives and friends).
    Core,
    /// A first-party plugin, or a catalog file loaded as trusted.
    Plugin,
    /// A tool listed by an MCP server: untrusted text and schema.
    Mcp,
    /// A tool declared by the calling application for one run: untrusted, executed by the caller.
    Client,
}

impl Source {
    /// Core and plugin tools are trusted; MCP and client tools are not.
    pub fn is_trusted(self) -> bool {
        matches!(self, Source::Core | Source::Plugin)
    }

    /// The lowercase name used in ids and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Core => "core",
            Source::Plugin => "plugin",
            Source::Mcp => "mcp",
            Source::Client => "client",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(text: &str) -> Option<Source> {
        match text {
            "core" => Some(Source::Core),
            "plugin" => Some(Source::Plugin),
            "mcp" => Some(Source::Mcp),
            "client" => Some(Source::Client),
            _ => None,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a tool is deferred behind search (`catalog`) or always shown directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CatalogMode {
    /// Searchable and callable through the controls.
    #[default]
    Catalog,
    /// Never put in the catalog: stays a normal, directly declared tool.
    DirectOnly,
}

/// How a tool may be scheduled against other calls of the same run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// May run concurrently with other parallel calls.
    #[default]
    Parallel,
    /// Runs exclusively with respect to every other call of the run.
    Sequential,
}

/// The names of the core coding primitives that stay directly visible *and* searchable.
/// Only first-party (`core`) tools with these names qualify; an MCP tool with the same name stays
/// deferred.
pub const CORE_PRIMITIVES: [&str; 6] = ["read", "write", "edit", "apply_patch", "exec", "process"];

/// What the tool returned: display text and/or JSON details (R-7.1 puts JSON in `result.details`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Human-readable text, when the tool has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Structured result; validated against the output schema for trusted tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The result exactly as the tool's MCP server sent it, for a front that speaks MCP to pass
    /// on unchanged; `text` and `details` are the model's view of it. Never serialised.
    #[serde(skip)]
    pub sent: Option<Arc<SentResult>>,
}

/// A `tools/call` result as an MCP server sent it: its content blocks (text, image, audio,
/// resource link, embedded resource — each the JSON the server sent), `structuredContent`,
/// `isError` and `_meta`. Opaque to the gateway, which neither reads nor changes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SentResult {
    /// The content blocks, in order.
    pub content: Vec<Value>,
    /// `structuredContent`, when sent.
    pub structured: Option<Value>,
    /// `isError`, when sent.
    pub is_error: Option<bool>,
    /// `_meta`, when sent.
    pub meta: Option<Value>,
}

impl ToolOutput {
    /// A JSON result.
    pub fn json(details: Value) -> Self {
        ToolOutput {
            text: None,
            details: Some(details),
            sent: None,
        }
    }

    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            text: Some(text.into()),
            details: None,
            sent: None,
        }
    }
}

/// The coarse kind of a failure, shared by every seam a call crosses (a tool body, nested
/// calls, the sandbox bridge, the MCP adapter). Fine-grained gateway kinds map onto it
/// (`gateway::ErrorKind::failure_kind`), so an adapter can tell, say, an upstream outage from
/// an ordinary tool failure without parsing text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The request or its arguments are wrong (shape, schema, ambiguity): fix and retry.
    BadArguments,
    /// No allowed tool matches (a denied tool answers the same, R-2.2).
    Unknown,
    /// Policy or a `before_tool_call` hook blocked the call.
    Blocked,
    /// The tool requires approval and was not approved.
    ApprovalDenied,
    /// The call ran past its deadline and was cancelled.
    Timeout,
    /// The tool ran and failed (its own error, a broken schema, an invalid result).
    ToolFailed,
    /// The tool's upstream (an MCP server) is unavailable.
    UpstreamUnavailable,
    /// A defect on the gateway's side (a panic, a broken invariant): not the model's fault.
    Internal,
}

impl FailureKind {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::BadArguments => "bad_arguments",
            FailureKind::Unknown => "unknown",
            FailureKind::Blocked => "blocked",
            FailureKind::ApprovalDenied => "approval_denied",
            FailureKind::Timeout => "timeout",
            FailureKind::ToolFailed => "tool_failed",
            FailureKind::UpstreamUnavailable => "upstream_unavailable",
            FailureKind::Internal => "internal",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure reported by a tool body (or by a nested call it made). Its message goes back to
/// the model as the call's error; its kind tells the gateway what kind of failure it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What kind of failure (a tool body's own errors are [`FailureKind::ToolFailed`]).
    pub kind: FailureKind,
    /// What went wrong and, where possible, how to recover.
    pub message: String,
    /// The failed result as the tool's MCP server sent it (`isError: true`), when it did.
    pub sent: Option<Arc<SentResult>>,
}

impl From<String> for ToolError {
    /// A plain message is a tool failure.
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    /// A plain message is a tool failure.
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

impl ToolError {
    /// A tool failure with a message for the model.
    #[cold]
    pub fn new(message: impl Into<String>) -> Self {
        ToolError::of(FailureKind::ToolFailed, message)
    }

    /// A failure of `kind` (e.g. [`FailureKind::UpstreamUnavailable`] from an MCP executor).
    #[cold]
    pub fn of(kind: FailureKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
            sent: None,
        }
    }

    /// The same error carrying the result its MCP server sent.
    #[must_use]
    pub fn with_sent(mut self, sent: Arc<SentResult>) -> Self {
        self.sent = Some(sent);
        self
    }
}

/// A boxed, sendable future (what the object-safe async traits here return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The way a tool body may call other tools of its run (nested calls). The gateway implements
/// it; every nested call takes the full gateway path, including scheduling, so a nested
/// call that would wait on its own slot fails with a reentrancy error instead of deadlocking.
pub trait NestedCalls: Send + Sync {
    /// Calls the tool `selector` (id or name) with `args`; the result is the envelope's JSON, the
    /// error keeps the failed call's kind.
    fn call<'a>(
        &'a self,
        selector: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// What a tool body learns about the call it serves.
#[derive(Clone)]
pub struct CallContext {
    /// The called tool's id.
    pub tool_id: String,
    /// The run the call belongs to.
    pub run_id: String,
    /// Nested calls into the same run, when the caller allows them.
    pub nested: Option<Arc<dyn NestedCalls>>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("tool_id", &self.tool_id)
            .field("run_id", &self.run_id)
            .field("nested", &self.nested.is_some())
            .finish()
    }
}

/// A tool implementation (the executor of ). Called only by the gateway, after policy,
/// approval, hooks and input validation; the future is dropped (cancelled) on timeout.
pub trait Tool: Send + Sync {
    /// Runs the tool on validated arguments.
    fn call<'a>(
        &'a self,
        ctx: &'a CallContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// Adapts a plain closure into a [`Tool`] (handy for tests and small built-ins).
pub struct FnTool<F>(pub F);

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(CallContext, Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call<'a>(
        &'a self,
        ctx: &'a CallContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin((self.0)(ctx.clone(), args))
    }
}

/// How a descriptor is executed.
#[derive(Clone, Default)]
pub enum Executor {
    /// A Rust implementation run by the gateway.
    Tool(Arc<dyn Tool>),
    /// A client tool: the caller executes it and returns the result (never the gateway).
    Client,
    /// A descriptor without an implementation (e.g. loaded from a catalog file): searchable and
    /// describable; calls fail with the reason.
    #[default]
    Unavailable,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Executor::Tool(_) => "Tool",
            Executor::Client => "Client",
            Executor::Unavailable => "Unavailable",
        })
    }
}

/// One tool as the gateway knows it.
#[derive(Debug, Clone)]
pub struct Descriptor {
    /// `<source>:<owner>:<name>`, unique within a snapshot.
    pub id: String,
    /// The tool's own name (what a model would call it).
    pub name: String,
    /// Where it comes from; decides trust.
    pub source: Source,
    /// Plugin id, MCP server safe name, `core` or `client`.
    pub owner: String,
    /// Optional display label.
    pub label: Option<String>,
    /// Free text; may be empty.
    pub description: String,
    /// JSON Schema of the arguments (`{}` when absent). Shared: the catalog snapshots built from
    /// one listing (and a descriptor's clones) hold one copy of a schema, however large.
    pub input_schema: Arc<Value>,
    /// JSON Schema of `result.details`, when declared.
    pub output_schema: Option<Value>,
    /// Deferred behind search, or always direct.
    pub catalog_mode: CatalogMode,
    /// Parallel or sequential scheduling.
    pub execution_mode: ExecutionMode,
    /// Per-tool timeout (the gateway default applies when absent).
    pub timeout: Option<Duration>,
    /// Whether an approval handler must approve each call.
    pub requires_approval: bool,
    /// The id the tool had in the file or server it came from; resolvable and indexed.
    pub external_id: Option<String>,
    /// Behaviour hints an MCP server attached to the tool (`readOnlyHint`, `destructiveHint`,
    /// …), kept as given: untrusted, shown by describe, never indexed.
    pub annotations: Option<Value>,
    /// The implementation.
    pub executor: Executor,
}

impl Descriptor {
    /// A descriptor with defaults for everything but source, owner and name; the id is derived.
    pub fn new(source: Source, owner: &str, name: &str) -> Self {
        let owner = if source == Source::Client {
            "client".to_string()
        } else {
            safe_owner(owner)
        };
        Descriptor {
            id: tool_id(source, &owner, name),
            name: name.to_string(),
            source,
            owner,
            label: None,
            description: String::new(),
            input_schema: Arc::new(Value::Object(Default::default())),
            output_schema: None,
            catalog_mode: CatalogMode::Catalog,
            execution_mode: ExecutionMode::Parallel,
            timeout: None,
            requires_approval: false,
            external_id: None,
            annotations: None,
            executor: Executor::Unavailable,
        }
    }

    /// Sets the description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// Sets the input schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Arc::new(schema);
        self
    }

    /// Sets the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Sets the executor to a Rust implementation.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.executor = Executor::Tool(tool);
        self
    }

    /// Whether the tool is trusted.
    pub fn is_trusted(&self) -> bool {
        self.source.is_trusted()
    }

    /// A core coding primitive: first-party and named like one.
    pub fn is_core_primitive(&self) -> bool {
        self.source == Source::Core && CORE_PRIMITIVES.contains(&self.name.as_str())
    }

    /// Every key a policy or approval glob is matched against: the id, the name, the
    /// external id and — when the external id is `<source>:<owner>:<x>`, as it is for an MCP
    /// tool whose upstream name had to be escaped (`mcp:<server>:<raw name>`) — `x`, the raw
    /// name. So a glob written with the upstream's own name matches the tool it names.
    pub fn match_keys(&self) -> impl Iterator<Item = &str> + '_ {
        let raw_name = self.external_id.as_deref().and_then(|external| {
            external
                .strip_prefix(self.source.as_str())?
                .strip_prefix(':')?
                .strip_prefix(self.owner.as_str())?
                .strip_prefix(':')
        });
        [
            Some(self.id.as_str()),
            Some(self.name.as_str()),
            self.external_id.as_deref(),
            raw_name,
        ]
        .into_iter()
        .flatten()
    }

    /// The namespace of: `source:owner`.
    pub fn namespace(&self) -> String {
        format!("{}:{}", self.source, self.owner)
    }

    /// Feeds everything but the executor into `hasher` (the fingerprint's view of a tool).
    fn hash_content(&self, hasher: &mut xxhash_rust::xxh3::Xxh3) {
        fn put(hasher: &mut xxhash_rust::xxh3::Xxh3, bytes: &[u8]) {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        put(hasher, self.id.as_bytes());
        put(hasher, self.name.as_bytes());
        put(hasher, self.source.as_str().as_bytes());
        put(hasher, self.owner.as_bytes());
        put(hasher, self.label.as_deref().unwrap_or("\u{0}").as_bytes());
        put(hasher, self.description.as_bytes());
        // serde_json's default map is a BTreeMap: serialization is canonical (sorted keys).
        put(hasher, self.input_schema.to_string().as_bytes());
        match &self.output_schema {
            Some(schema) => put(hasher, schema.to_string().as_bytes()),
            None => put(hasher, b"\x00none"),
        }
        put(
            hasher,
            &[self.catalog_mode as u8, self.execution_mode as u8],
        );
        let timeout_ms = self.timeout.map_or(u64::MAX, |t| t.as_millis() as u64);
        put(hasher, &timeout_ms.to_le_bytes());
        put(hasher, &[u8::from(self.requires_approval)]);
        put(
            hasher,
            self.external_id.as_deref().unwrap_or("\u{0}").as_bytes(),
        );
        match &self.annotations {
            Some(annotations) => put(hasher, annotations.to_string().as_bytes()),
            None => put(hasher, b"\x00none"),
        }
        put(
            hasher,
            match self.executor {
                Executor::Tool(_) => b"tool",
                Executor::Client => b"client",
                Executor::Unavailable => b"none",
            },
        );
    }
}

/// "a string", "an object", … — how error messages name the JSON type a value has.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Builds the id of.
pub fn tool_id(source: Source, owner: &str, name: &str) -> String {
    format!("{}:{}:{}", source.as_str(), owner, name)
}

/// An owner as it may appear in an id: ASCII letters, digits, `_`, `-` and `.`; anything else
/// becomes `_`; never empty and never containing `:`.
pub fn safe_owner(raw: &str) -> String {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "unknown".to_string()
    } else {
        cleaned
    }
}

/// Something the snapshot builder noticed and repaired (R-1.8: nothing is silently lost).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CatalogIssue {
    /// Two descriptors wanted the same id; the later ones (in content order) got a suffix.
    IdClash {
        /// The contested id.
        id: String,
        /// The ids actually given, in content order (the first keeps the original).
        assigned: Vec<String>,
    },
}

impl fmt::Display for CatalogIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogIssue::IdClash { id, assigned } => write!(
                f,
                "{} tools share the id {id:?}; kept all of them as {}",
                assigned.len(),
                assigned.join(", ")
            ),
        }
    }
}

/// A content fingerprint: equal for equal tool sets whatever the insertion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub u128);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

struct SnapshotInner {
    /// Catalog-mode tools, sorted by id.
    tools: Vec<Descriptor>,
    /// Direct-only tools, sorted by id (never searchable, R-1.4).
    direct: Vec<Descriptor>,
    by_id: HashMap<String, u32>,
    fingerprint: Fingerprint,
    issues: Vec<CatalogIssue>,
}

/// An immutable set of tools with a content fingerprint. Cheap to clone.
#[derive(Clone)]
pub struct CatalogSnapshot {
    inner: Arc<SnapshotInner>,
}

impl fmt::Debug for CatalogSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogSnapshot")
            .field("tools", &self.inner.tools.len())
            .field("direct", &self.inner.direct.len())
            .field("fingerprint", &self.inner.fingerprint)
            .finish()
    }
}

impl CatalogSnapshot {
    /// Builds a snapshot from descriptors in any order. Id clashes are repaired and reported.
    pub fn build(descriptors: impl IntoIterator<Item = Descriptor>) -> CatalogSnapshot {
        let mut all: Vec<(u128, Descriptor)> = descriptors
            .into_iter()
            .map(|d| {
                let mut hasher = xxhash_rust::xxh3::Xxh3::new();
                d.hash_content(&mut hasher);
                (hasher.digest128(), d)
            })
            .collect();
        // Content order: by id, then by content hash, so clash suffixes do not depend on the
        // order tools were added.
        all.sort_by(|a, b| a.1.id.cmp(&b.1.id).then(a.0.cmp(&b.0)));

        let mut issues = Vec::new();
        let mut taken: std::collections::HashSet<String> =
            all.iter().map(|(_, d)| d.id.clone()).collect();
        let mut index = 0;
        while index < all.len() {
            let mut end = index + 1;
            while end < all.len() && all[end].1.id == all[index].1.id {
                end += 1;
            }
            if end - index > 1 {
                let original = all[index].1.id.clone();
                let mut assigned = vec![original.clone()];
                let mut suffix = 2;
                for entry in &mut all[index + 1..end] {
                    let mut candidate = format!("{original}~{suffix}");
                    while taken.contains(&candidate) {
                        suffix += 1;
                        candidate = format!("{original}~{suffix}");
                    }
                    suffix += 1;
                    taken.insert(candidate.clone());
                    entry.1.id = candidate.clone();
                    if entry.1.external_id.is_none() {
                        entry.1.external_id = Some(original.clone());
                    }
                    assigned.push(candidate);
                }
                issues.push(CatalogIssue::IdClash {
                    id: original,
                    assigned,
                });
            }
            index = end;
        }
        all.sort_by(|a, b| a.1.id.cmp(&b.1.id));

        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut tools = Vec::new();
        let mut direct = Vec::new();
        for (_, descriptor) in all {
            descriptor.hash_content(&mut hasher);
            match descriptor.catalog_mode {
                CatalogMode::Catalog => tools.push(descriptor),
                CatalogMode::DirectOnly => direct.push(descriptor),
            }
        }
        let by_id = tools
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.clone(), i as u32))
            .collect();
        CatalogSnapshot {
            inner: Arc::new(SnapshotInner {
                tools,
                direct,
                by_id,
                fingerprint: Fingerprint(hasher.digest128()),
                issues,
            }),
        }
    }

    /// Catalog-mode tools, sorted by id. Index positions are stable for the snapshot's life.
    pub fn tools(&self) -> &[Descriptor] {
        &self.inner.tools
    }

    /// Direct-only tools, sorted by id. Never searchable.
    pub fn direct_only(&self) -> &[Descriptor] {
        &self.inner.direct
    }

    /// The catalog-mode tool at `index`.
    pub fn tool(&self, index: u32) -> Option<&Descriptor> {
        self.inner.tools.get(index as usize)
    }

    /// Position of the catalog-mode tool with exactly this id.
    pub fn position(&self, id: &str) -> Option<u32> {
        self.inner.by_id.get(id).copied()
    }

    /// Number of catalog-mode tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether the catalog holds no catalog-mode tool.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// The content fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.inner.fingerprint
    }

    /// What the builder repaired.
    pub fn issues(&self) -> &[CatalogIssue] {
        &self.inner.issues
    }

    /// Whether two handles share the same snapshot allocation.
    pub fn ptr_eq(&self, other: &CatalogSnapshot) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
