//! Catalogs and the target tool of the benchmark scenario (SPEC ).
//!
//! Owns: a deterministic synthetic catalog of any size ([`synthetic_tools`]: realistic names,
//! 150–260-character descriptions, 2–6 typed and described parameters, owners spread over 16
//! services), the scenario's target ([`release_order_tool`]: it requires a release-order
//! reference and answers with a nonce created only when it runs) and the record of its
//! executions ([`Executions`]), and the scenario itself ([`Scenario`]: prompt, arguments,
//! queries) that the payload and real-model benchmarks play.
//!
//! Never does: touch the host (the target is an in-memory function), or produce the same
//! nonce twice in a process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

use crate::catalog::{Descriptor, FnTool, Source, ToolOutput};

use super::script::MockScenario;
use crate::sync::Locked;

const OWNERS: [&str; 16] = [
    "crm",
    "billing",
    "inventory",
    "helpdesk",
    "people",
    "analytics",
    "marketing",
    "devops",
    "storage",
    "scheduling",
    "docs",
    "payments",
    "security",
    "catalog",
    "media",
    "fleet",
];
const VERBS: [&str; 20] = [
    "create",
    "list",
    "get",
    "update",
    "delete",
    "search",
    "archive",
    "export",
    "import",
    "sync",
    "approve",
    "assign",
    "close",
    "merge",
    "schedule",
    "summarize",
    "validate",
    "notify",
    "tag",
    "restore",
];
const NOUNS: [&str; 20] = [
    "account",
    "invoice",
    "ticket",
    "contact",
    "quote",
    "product",
    "report",
    "campaign",
    "employee",
    "deployment",
    "bucket",
    "meeting",
    "document",
    "payment",
    "alert",
    "asset",
    "lead",
    "subscription",
    "vehicle",
    "budget",
];
/// Distinct (owner, verb, noun) combinations: the largest synthetic catalog.
pub const MAX_SYNTHETIC: usize = OWNERS.len() * VERBS.len() * NOUNS.len();

/// `count` synthetic catalog tools (no executors: searchable and describable; the scenario
/// never calls them), the same for the same `count`. At most [`MAX_SYNTHETIC`].
pub fn synthetic_tools(count: usize) -> Vec<Descriptor> {
    // A stride coprime to 6,400 visits every combination once, spreading small catalogs over
    // owners, verbs and nouns.
    const STRIDE: usize = 2027;
    (0..count.min(MAX_SYNTHETIC))
        .map(|i| {
            let j = (i * STRIDE) % MAX_SYNTHETIC;
            let owner = OWNERS[j % OWNERS.len()];
            let verb = VERBS[(j / OWNERS.len()) % VERBS.len()];
            let noun = NOUNS[j / (OWNERS.len() * VERBS.len())];
            synthetic_tool(owner, verb, noun, i)
        })
        .collect()
}

fn synthetic_tool(owner: &str, verb: &str, noun: &str, i: usize) -> Descriptor {
    let name = format!("{verb}_{noun}");
    let what = match verb {
        "list" | "search" | "export" => format!("{noun} records"),
        _ => format!("a {noun}"),
    };
    let description = format!(
        "{} {what} in the {owner} service. Works on the records the caller may see, honours the \
         service's retention rules and audit trail, and reports what changed. Use it for \
         routine {owner} {noun} work; results are paginated and sorted by last update.",
        capitalize(verb)
    );
    let id_field = format!("{noun}_id");
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    let create_like = matches!(verb, "create" | "import" | "schedule");
    let many = matches!(verb, "list" | "search" | "export" | "summarize");
    if !create_like && !many {
        properties.insert(
            id_field.clone(),
            json!({"type": "string", "description": format!("Identifier of the {noun} in {owner}")}),
        );
        required.push(id_field);
    }
    if create_like {
        properties.insert(
            "title".into(),
            json!({"type": "string", "description": format!("Display title of the new {noun}")}),
        );
        properties.insert(
            "owner_email".into(),
            json!({"type": "string", "description": "Email of the person responsible"}),
        );
        required.push("title".to_string());
    }
    if many {
        properties.insert(
            "query".into(),
            json!({"type": "string", "description": format!("Free-text filter over {noun} fields")}),
        );
        properties.insert(
            "limit".into(),
            json!({"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size"}),
        );
        properties.insert(
            "cursor".into(),
            json!({"type": "string", "description": "Cursor from the previous page"}),
        );
    }
    properties.insert(
        "status".into(),
        json!({"type": "string", "enum": ["open", "pending", "done", "archived"], "description": "Lifecycle status"}),
    );
    if i.is_multiple_of(3) {
        properties.insert(
            "dry_run".into(),
            json!({"type": "boolean", "description": "Validate only; change nothing"}),
        );
    }
    if i % 4 == 1 {
        properties.insert(
            "note".into(),
            json!({"type": "string", "description": "A note kept in the audit trail"}),
        );
    }
    Descriptor::new(Source::Plugin, owner, &name)
        .description(description)
        .input_schema(json!({
            "type": "object",
            "properties": Value::Object(properties),
            "required": required,
            "additionalProperties": false,
        }))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// One execution of the target.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The arguments it ran with.
    pub arguments: Value,
    /// The nonce it answered with.
    pub nonce: String,
    /// When it ran.
    pub at: Instant,
}

/// Every execution of a target tool (shared with its executor).
#[derive(Debug, Clone, Default)]
pub struct Executions(Arc<Mutex<Vec<Execution>>>);

impl Executions {
    /// The executions so far.
    pub fn all(&self) -> Vec<Execution> {
        self.0.locked().clone()
    }

    fn push(&self, execution: Execution) {
        self.0.locked().push(execution);
    }
}

/// A nonce that exists only once the target ran: a per-process counter and the clock, hashed.
pub fn fresh_nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hash = xxhash_rust::xxh3::xxh3_64(format!("{n}:{clock}").as_bytes());
    format!("CONF-{hash:016x}")
}

/// The scenario's field name (never in a deferred mode's first request).
pub const TARGET_FIELD: &str = "release_order_ref";
/// The scenario's tool name.
pub const TARGET_NAME: &str = "lookup_release_order";

/// The target: `plugin:logistics:lookup_release_order`, which requires `release_order_ref`
/// and answers `{release_order_ref, status: "released", confirmation: <nonce>}`.
pub fn release_order_tool(executions: &Executions) -> Descriptor {
    let executions = executions.clone();
    Descriptor::new(Source::Plugin, "logistics", TARGET_NAME)
        .description(
            "Look up a warehouse release order by its reference and return its release status \
             together with the confirmation code issued by the warehouse.",
        )
        .input_schema(release_order_schema())
        .output_schema(json!({
            "type": "object",
            "properties": {
                TARGET_FIELD: {"type": "string"},
                "status": {"type": "string"},
                "confirmation": {"type": "string"}
            },
            "required": [TARGET_FIELD, "status", "confirmation"],
            "additionalProperties": false,
        }))
        .tool(Arc::new(FnTool(move |_ctx, args: Value| {
            let executions = executions.clone();
            async move {
                let nonce = fresh_nonce();
                executions.push(Execution {
                    arguments: args.clone(),
                    nonce: nonce.clone(),
                    at: Instant::now(),
                });
                Ok(ToolOutput::json(json!({
                    TARGET_FIELD: args.get(TARGET_FIELD).cloned().unwrap_or(Value::Null),
                    "status": "released",
                    "confirmation": nonce,
                })))
            }
        })))
}

/// The target's input schema: a required release-order reference (`RO-` and 4–8 digits).
pub fn release_order_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            TARGET_FIELD: {"type": "string", "pattern": "^RO-[0-9]{4,8}$",
                            "description": "Release-order reference, e.g. RO-20417"}
        },
        "required": [TARGET_FIELD],
        "additionalProperties": false,
    })
}

/// What the benchmarks ask and expect.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The user's prompt.
    pub prompt: String,
    /// The arguments the target must run with.
    pub arguments: Value,
    /// The two queries the scripted model batches.
    pub queries: Vec<String>,
}

impl Scenario {
    /// The release-order scenario.
    pub fn release_order() -> Scenario {
        Scenario {
            prompt: "What is the release status of warehouse release order RO-20417? Look it up \
                     with the tools, then answer with the status and the confirmation code."
                .into(),
            arguments: json!({TARGET_FIELD: "RO-20417"}),
            queries: vec![
                "release order status".into(),
                "warehouse release lookup".into(),
            ],
        }
    }

    /// The mock provider's script for it.
    pub fn mock(&self) -> MockScenario {
        MockScenario {
            target: TARGET_NAME.into(),
            arguments: self.arguments.clone(),
            queries: self.queries.clone(),
            ..MockScenario::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn synthetic_catalogs_are_unique_and_stable() {
        let tools = synthetic_tools(MAX_SYNTHETIC);
        let mut ids: Vec<&str> = tools.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), MAX_SYNTHETIC);
        let a: Vec<String> = synthetic_tools(36).into_iter().map(|t| t.id).collect();
        let b: Vec<String> = synthetic_tools(36).into_iter().map(|t| t.id).collect();
        assert_eq!(a, b);
        for tool in synthetic_tools(50) {
            assert!(
                (150..=280).contains(&tool.description.len()),
                "{}",
                tool.description
            );
            assert!(!tool.description.contains(TARGET_FIELD));
        }
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(fresh_nonce(), fresh_nonce());
    }
}
