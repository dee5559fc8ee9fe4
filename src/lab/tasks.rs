//! The task suite behind `toolsearch bench agent --tasks`: tasks over real catalogs, each
//! verified by a nonce that only its target tool's execution produces, played per mode against
//! any OpenAI-compatible provider (a real model) or the scripted mock provider.
//!
//! Owns: the built-in tasks ([`suite`]), their catalogs (the embedded demo catalog; the GitHub
//! MCP server and npm reference-server listings vendored in `catalogs/`, served by the stub MCP
//! server (`stub_mcp`) — one `toolsearch stub-mcp` child per server of a listing, reached
//! through the product's MCP upstreams like a user's servers, every tool a nonce-producing stub;
//! the synthetic 56 of the release-order scenario), the verdict of one run ([`TaskRun`]) and the
//! per-mode summary ([`ModeSummary`]).
//!
//! A task succeeds only when each of its steps' target tools ran, in order, with arguments that
//! match the expected ones (every expected key present; strings compared trimmed and
//! case-insensitively; extra keys allowed) and the final answer quotes the last step's nonce. A
//! wrong tool never counts: its execution is recorded (with its own nonce) and listed. A
//! policy-denied decoy that runs fails the task. An execution is what an in-process stub
//! recorded or what a stub MCP server appended to its record file (a temporary directory per
//! run, removed afterwards); both carry the wall clock in milliseconds since the Unix epoch.
//!
//! Never does: read `../shared`, or any file but its stub servers' records, at run time (the
//! listings are built into the binary); run a listing's real server (the listings are real,
//! their behaviour is the stub); share state between tasks (each run gets a fresh catalog,
//! world, policy, session and stub servers, stopped when it ends).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Value, json};

use crate::agent::{Agent, AgentOptions, AgentRun, ProviderConfig};
use crate::catalog::{CatalogSnapshot, Descriptor, FnTool, Source, ToolOutput};
use crate::config::{Config, McpApproval, McpServer, McpTransport, Mode};
use crate::mcp::{UpstreamStatus, Upstreams};
use crate::policy::Policy;
use crate::session::Session;

use super::mock::MockProvider;
use super::payload::BenchError;
use super::scenario::{
    TARGET_FIELD, TARGET_NAME, fresh_nonce, release_order_schema, synthetic_tools,
};
use super::script::{MockScenario, MockStep, SmallModel};
use super::stub_mcp::{self, LISTINGS, unix_ms};
use crate::sync::Locked;

/// Tools of the synthetic catalog, the target included.
pub const SYNTHETIC_TOOLS: usize = 56;

/// Which catalog a task runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskCatalog {
    /// The embedded demo catalog (323 tools, in-memory implementations; the targets become
    /// stubs).
    Demo,
    /// The GitHub MCP server (117 tools) and npm reference servers (95) listings, served by
    /// the stub MCP server (every tool a stub).
    GithubNpm,
    /// 55 synthetic tools and the release-order target.
    Synthetic,
}

impl TaskCatalog {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskCatalog::Demo => "demo",
            TaskCatalog::GithubNpm => "github-npm",
            TaskCatalog::Synthetic => "synthetic-56",
        }
    }
}

/// One call a task needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The target's id.
    pub target: String,
    /// The arguments it must run with (the values a model reads in the prompt or in the
    /// previous step's result).
    pub arguments: Value,
    /// The scripted model's arguments: as `arguments`, with `{{key}}` where the value comes
    /// from the previous step's result.
    pub scripted_arguments: Value,
    /// What the stub answers besides its nonce (what the next step needs).
    pub yields: Value,
    /// The scripted model's queries.
    pub queries: Vec<String>,
}

/// One task of the suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    /// Its name (`--task NAME`).
    pub name: &'static str,
    /// What it covers.
    pub covers: &'static str,
    /// Its catalog.
    pub catalog: TaskCatalog,
    /// The user's request.
    pub prompt: &'static str,
    /// The calls it needs, in order.
    pub steps: Vec<Step>,
    /// Tools the session's policy denies (stubs too: one that ran fails the task).
    pub denied: Vec<String>,
}

fn step(target: &str, arguments: Value, queries: &[&str]) -> Step {
    Step {
        target: target.into(),
        scripted_arguments: arguments.clone(),
        arguments,
        yields: json!({}),
        queries: queries.iter().map(|q| q.to_string()).collect(),
    }
}

/// The built-in suite (13 tasks).
pub fn suite() -> Vec<Task> {
    let release = format!("plugin:logistics:{TARGET_NAME}");
    let mut tasks = vec![
        Task {
            name: "release-order",
            covers: "one call (synthetic 56)",
            catalog: TaskCatalog::Synthetic,
            prompt: "What is the release status of warehouse release order RO-20417? Look it up with the tools, then answer with the status and the confirmation code.",
            steps: vec![step(
                &release,
                json!({TARGET_FIELD: "RO-20417"}),
                &["release order status", "warehouse release lookup"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "release-order-denied-decoy",
            covers: "the lexically best match is a policy-denied decoy",
            catalog: TaskCatalog::Synthetic,
            prompt: "Look up the release order RO-88120 and tell me its release status and the confirmation code.",
            steps: vec![step(
                &release,
                json!({TARGET_FIELD: "RO-88120"}),
                &["look up release order", "release order status"],
            )],
            denied: vec![format!("plugin:depot:{DECOY_NAME}")],
        },
        Task {
            name: "convert-units",
            covers: "one call (demo)",
            catalog: TaskCatalog::Demo,
            prompt: "Convert 42 kilometres to miles with the unit converter tool and give me its confirmation code.",
            steps: vec![step(
                "plugin:units:convert_units",
                json!({"value": 42, "from_unit": "km", "to_unit": "mi"}),
                &["convert units", "kilometres to miles"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "branches-zh",
            covers: "a request in Chinese (demo)",
            catalog: TaskCatalog::Demo,
            prompt: "请列出仓库 acme/rocket 的所有分支，并告诉我工具返回的确认码。",
            steps: vec![step(
                "plugin:github:list_branches",
                json!({"repo": "acme/rocket"}),
                &["列出仓库的所有分支", "list branches"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "note-de",
            covers: "a request in German (demo)",
            catalog: TaskCatalog::Demo,
            prompt: "Lege eine Notiz mit dem Titel \"Quartalsbericht\" an und nenne mir den Bestätigungscode des Werkzeugs.",
            steps: vec![step(
                "plugin:notes:create_note",
                json!({"title": "Quartalsbericht"}),
                &["Notiz hinzufügen", "create note"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "weather-misspelled",
            covers: "a misspelled request (demo)",
            catalog: TaskCatalog::Demo,
            prompt: "plese chek the wether forcast for Oslo and tell me the confirmaton code the tool gives",
            steps: vec![step(
                "plugin:weather:weather_forecast",
                json!({"city": "Oslo"}),
                &["wether forcast", "weather forecast"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "latest-release",
            covers: "one call on an MCP listing whose schema is not in the hit (needs describe)",
            catalog: TaskCatalog::GithubNpm,
            prompt: "What is the latest release of the GitHub repository tokio-rs/tokio? Answer with the confirmation code the tool returns.",
            steps: vec![step(
                "mcp:github-mcp-server:get_latest_release",
                json!({"owner": "tokio-rs", "repo": "tokio"}),
                &["latest release", "get latest release of a repository"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "star-exact-name",
            covers: "a request naming the tool exactly",
            catalog: TaskCatalog::GithubNpm,
            prompt: "Use the tool star_repository to star the GitHub repository serde-rs/json, then give me its confirmation code.",
            steps: vec![step(
                "mcp:github-mcp-server:star_repository",
                json!({"owner": "serde-rs", "repo": "json"}),
                &["star_repository", "star repository"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "slack-post",
            covers: "one call with free text (npm reference server)",
            catalog: TaskCatalog::GithubNpm,
            prompt: "Post the message \"deploy finished\" to the Slack channel C024BE91L and tell me the confirmation code.",
            steps: vec![step(
                "mcp:server-slack:slack_post_message",
                json!({"channel_id": "C024BE91L", "text": "deploy finished"}),
                &["post slack message", "send message to slack channel"],
            )],
            denied: Vec::new(),
        },
        Task {
            name: "gist-read",
            covers: "one call by an opaque id",
            catalog: TaskCatalog::GithubNpm,
            prompt: "Read the GitHub gist with id aa5a315d61ae9438b18d and give me the confirmation code.",
            steps: vec![step(
                "mcp:github-mcp-server:get_gist",
                json!({"gist_id": "aa5a315d61ae9438b18d"}),
                &["get gist", "read a gist"],
            )],
            denied: Vec::new(),
        },
    ];
    // Two dependent calls: the second needs a value only the first one's result holds.
    let mut release_step = step(
        "mcp:github-mcp-server:get_latest_release",
        json!({"owner": "tokio-rs", "repo": "tokio"}),
        &["latest release", "get latest release of a repository"],
    );
    release_step.yields =
        json!({"tag_name": "tokio-1.47.1", "target_commitish": "9f3c2a17b0d54e1a"});
    let mut commit_step = step(
        "mcp:github-mcp-server:get_commit",
        json!({"owner": "tokio-rs", "repo": "tokio", "sha": "9f3c2a17b0d54e1a"}),
        &["get commit", "commit details by sha"],
    );
    commit_step.scripted_arguments =
        json!({"owner": "tokio-rs", "repo": "tokio", "sha": "{{target_commitish}}"});
    tasks.push(Task {
        name: "release-then-commit",
        covers: "two dependent calls (the commit sha comes from the first result)",
        catalog: TaskCatalog::GithubNpm,
        prompt: "Find the latest release of tokio-rs/tokio, then get the commit its target_commitish points to, and answer with that commit's confirmation code.",
        steps: vec![release_step, commit_step],
        denied: Vec::new(),
    });
    let mut channels = step(
        "mcp:server-slack:slack_list_channels",
        json!({}),
        &["list slack channels", "slack channels"],
    );
    channels.yields = json!({"channels": [
        {"channel_id": "C07QX2DPL", "channel_name": "deploys"},
        {"channel_id": "C01GENERAL", "channel_name": "general"}
    ]});
    let mut post = step(
        "mcp:server-slack:slack_post_message",
        json!({"channel_id": "C07QX2DPL", "text": "release 1.4 is out"}),
        &["post slack message", "send message to slack channel"],
    );
    post.scripted_arguments = json!({"channel_id": "{{channel_id}}", "text": "release 1.4 is out"});
    tasks.push(Task {
        name: "slack-channel-then-post",
        covers: "two dependent calls (the channel id comes from the listing)",
        catalog: TaskCatalog::GithubNpm,
        prompt: "List the Slack channels, find the id of the channel named deploys, then post \"release 1.4 is out\" there and give me the post's confirmation code.",
        steps: vec![channels, post],
        denied: Vec::new(),
    });
    tasks.push(Task {
        name: "translate-enum",
        covers: "one call with an enum argument (demo)",
        catalog: TaskCatalog::Demo,
        prompt: "Translate the text \"good morning\" into Spanish with the translation tool and tell me its confirmation code.",
        steps: vec![step(
            "plugin:translate:translate_text",
            json!({"text": "good morning", "target_language": "es"}),
            &["translate text", "translate into Spanish"],
        )],
        denied: Vec::new(),
    });
    tasks
}

/// The decoy of the denied-decoy task: it reads like the request, and the policy denies it.
pub const DECOY_NAME: &str = "release_order_lookup";

/// One execution of a stub: tool id, arguments, nonce, when (milliseconds since the Unix
/// epoch, the clock of in-process stubs and of the stub MCP server's record alike).
type Execution = (String, Value, String, f64);

/// Every execution of an in-process stub during one run.
#[derive(Debug, Clone, Default)]
struct Ran(Arc<Mutex<Vec<Execution>>>);

impl Ran {
    fn all(&self) -> Vec<Execution> {
        self.0.locked().clone()
    }
}

/// `tool` answering with a fresh nonce (and `yields`) instead of its own behaviour; every
/// execution recorded.
fn stub(mut tool: Descriptor, yields: Value, ran: &Ran) -> Descriptor {
    let ran = ran.clone();
    let id = tool.id.clone();
    // The stub's answer is its own shape, not the tool's.
    tool.output_schema = None;
    tool.tool(Arc::new(FnTool(move |_ctx, args: Value| {
        let ran = ran.clone();
        let id = id.clone();
        let yields = yields.clone();
        async move {
            let nonce = fresh_nonce();
            ran.0.locked().push((id, args, nonce.clone(), unix_ms()));
            let mut answer = json!({"ok": true, "confirmation": nonce});
            if let (Some(out), Some(extra)) = (answer.as_object_mut(), yields.as_object()) {
                out.extend(extra.clone());
            }
            Ok(ToolOutput::json(answer))
        }
    })))
}

/// The task's in-process catalog, its targets (and the denied decoy) stubbed. Empty for
/// [`TaskCatalog::GithubNpm`], whose tools come from its stub MCP servers ([`stub_servers`]).
fn catalog(task: &Task, ran: &Ran) -> Vec<Descriptor> {
    let yields: BTreeMap<&str, &Value> = task
        .steps
        .iter()
        .map(|s| (s.target.as_str(), &s.yields))
        .collect();
    let stub_of = |tool: Descriptor| {
        let extra = yields
            .get(tool.id.as_str())
            .map_or(json!({}), |v| (*v).clone());
        stub(tool, extra, ran)
    };
    match task.catalog {
        TaskCatalog::Demo => {
            crate::demo::descriptors_with(Arc::new(crate::demo::DemoWorld::seeded()))
                .into_iter()
                .map(|tool| {
                    if yields.contains_key(tool.id.as_str()) {
                        stub_of(tool)
                    } else {
                        tool
                    }
                })
                .collect()
        }
        TaskCatalog::GithubNpm => Vec::new(),
        TaskCatalog::Synthetic => {
            let mut tools = synthetic_tools(SYNTHETIC_TOOLS - 1);
            let target = Descriptor::new(Source::Plugin, "logistics", TARGET_NAME)
                .description(
                    "Look up a warehouse release order by its reference and return its release \
                     status together with the confirmation code issued by the warehouse.",
                )
                .input_schema(release_order_schema());
            tools.push(stub_of(target));
            if !task.denied.is_empty() {
                let decoy = Descriptor::new(Source::Plugin, "depot", DECOY_NAME)
                    .description("Look up a release order and return its release status")
                    .input_schema(release_order_schema());
                tools.push(stub_of(decoy));
            }
            tools
        }
    }
}

/// The servers of the vendored listings, in listing order: `(listing, server, its tools' raw
/// names)`. Each server is one stub MCP server, named as its listing entries' `server`, so that
/// its tools' ids read `mcp:<server>:<tool>`.
type ListingServer = (&'static str, String, Vec<String>);

fn listing_servers() -> Result<Vec<ListingServer>, BenchError> {
    let mut servers: Vec<ListingServer> = Vec::new();
    for (listing, text) in LISTINGS {
        let entries = stub_mcp::entries(text)
            .map_err(|e| BenchError::Task(format!("the listing {listing}: {e:#}")))?;
        for entry in entries {
            let Some(server) = entry.server else {
                return Err(BenchError::Task(format!(
                    "the listing {listing}: {} names no server",
                    entry.tool.name
                )));
            };
            let name = entry.tool.name.to_string();
            match servers.iter_mut().find(|(_, s, _)| *s == server) {
                Some((_, _, names)) => names.push(name),
                None => servers.push((listing, server, vec![name])),
            }
        }
    }
    Ok(servers)
}

/// The stub MCP servers of a [`TaskCatalog::GithubNpm`] task: per server of the listings,
/// `binary stub-mcp --listing L --server S --record <records>/S.jsonl [--yields …]`, the
/// fields each step's target adds to its answer passed by raw tool name.
fn stub_servers(task: &Task, binary: &Path, records: &Path) -> Result<Vec<McpServer>, BenchError> {
    let command = binary.to_str().ok_or_else(|| {
        BenchError::Task(format!(
            "the toolsearch binary's path is not UTF-8: {}",
            binary.display()
        ))
    })?;
    let mut servers = Vec::new();
    for (listing, server, names) in listing_servers()? {
        let record = record_file(records, &server);
        let record = record.to_str().ok_or_else(|| {
            BenchError::Task(format!(
                "the record path is not UTF-8: {}",
                record.display()
            ))
        })?;
        let prefix = format!("mcp:{server}:");
        let yields: serde_json::Map<String, Value> = task
            .steps
            .iter()
            .filter(|s| s.yields.as_object().is_some_and(|y| !y.is_empty()))
            .filter_map(|s| {
                let tool = s.target.strip_prefix(&prefix)?;
                let raw = names
                    .iter()
                    .find(|n| crate::mcp::names::escape(n) == tool)?;
                Some((raw.clone(), s.yields.clone()))
            })
            .collect();
        let mut args: Vec<String> = [
            "stub-mcp",
            "--listing",
            listing,
            "--server",
            &server,
            "--record",
            record,
        ]
        .map(String::from)
        .to_vec();
        if !yields.is_empty() {
            args.push("--yields".into());
            args.push(Value::Object(yields).to_string());
        }
        servers.push(McpServer {
            name: server,
            transport: McpTransport::Stdio {
                command: command.to_string(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
            startup_timeout: std::time::Duration::from_millis(
                crate::config::MCP_STARTUP_TIMEOUT_MS.default,
            ),
            call_timeout: std::time::Duration::from_millis(
                crate::config::MCP_CALL_TIMEOUT_MS.default,
            ),
            enabled_tools: None,
            disabled_tools: Vec::new(),
            approval: McpApproval::default(),
            restart: false,
            protocol: Default::default(),
        });
    }
    Ok(servers)
}

/// Where the stub MCP server `server` records its calls.
fn record_file(records: &Path, server: &str) -> PathBuf {
    records.join(format!("{server}.jsonl"))
}

/// Starts `servers` under supervisors run from `binary` and waits until each listed its tools;
/// one that did not start, or whose listing did not ingest whole, is an error (its tools would
/// be missing or altered).
async fn start_stubs(servers: &[McpServer], binary: &Path) -> Result<Upstreams, BenchError> {
    let upstreams = Upstreams::start_with(servers, Some(binary.to_path_buf()))
        .map_err(|e| BenchError::Task(e.to_string()))?;
    upstreams.ready().await;
    let mut problems = Vec::new();
    for server in upstreams.servers() {
        if let UpstreamStatus::Down(reason) = server.status() {
            problems.push(format!("{} did not start: {reason}", server.name()));
        }
        for issue in server.issues() {
            problems.push(format!("{}: {issue}", server.name()));
        }
    }
    if !problems.is_empty() {
        upstreams.shutdown().await;
        return Err(BenchError::Task(format!(
            "the stub MCP servers: {}",
            problems.join("; ")
        )));
    }
    Ok(upstreams)
}

/// The executions the stub MCP servers recorded under `records`, as tool ids.
fn recorded(records: &Path, servers: &[McpServer]) -> Result<Vec<Execution>, BenchError> {
    let mut executions = Vec::new();
    for server in servers {
        let path = record_file(records, &server.name);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // Never called.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(BenchError::Task(format!(
                    "cannot read the stub record {}: {e}",
                    path.display()
                )));
            }
        };
        for (number, line) in text.lines().enumerate() {
            let bad = || {
                BenchError::Task(format!(
                    "the stub record {} line {} is not a record",
                    path.display(),
                    number + 1
                ))
            };
            let record: Value = serde_json::from_str(line).map_err(|_| bad())?;
            let (Some(tool), Some(nonce), Some(at)) = (
                record["tool"].as_str(),
                record["nonce"].as_str(),
                record["unix_ms"].as_f64(),
            ) else {
                return Err(bad());
            };
            let id = format!("mcp:{}:{}", server.name, crate::mcp::names::escape(tool));
            executions.push((id, record["arguments"].clone(), nonce.to_string(), at));
        }
    }
    Ok(executions)
}

/// A fresh directory under the system's temporary directory, removed (with what is in it) when
/// dropped.
struct RecordDir(PathBuf);

impl RecordDir {
    fn create() -> Result<RecordDir, BenchError> {
        let path = std::env::temp_dir().join(format!(
            "toolsearch-tasks-{}-{}",
            std::process::id(),
            fresh_nonce()
        ));
        std::fs::create_dir(&path).map_err(|e| {
            BenchError::Task(format!(
                "cannot create the record directory {}: {e}",
                path.display()
            ))
        })?;
        Ok(RecordDir(path))
    }
}

impl Drop for RecordDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `actual` holds every expected value: objects by key (extra keys allowed), arrays
/// element by element, strings trimmed and case-insensitively, numbers by value.
pub fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => want
            .iter()
            .all(|(k, v)| got.get(k).is_some_and(|g| matches(v, g))),
        (Value::Array(want), Value::Array(got)) => {
            want.len() == got.len() && want.iter().zip(got).all(|(w, g)| matches(w, g))
        }
        (Value::String(want), Value::String(got)) => {
            want.trim().to_lowercase() == got.trim().to_lowercase()
        }
        (Value::Number(want), Value::Number(got)) => want.as_f64() == got.as_f64(),
        // A number the model wrote as a string ("42").
        (Value::Number(want), Value::String(got)) => {
            got.trim().parse::<f64>().ok() == want.as_f64()
        }
        _ => expected == actual,
    }
}

/// The verdict of one task in one mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRun {
    /// The task.
    pub task: String,
    /// The mode asked for.
    pub mode: String,
    /// The mode in force (after `auto`).
    pub chosen_mode: String,
    /// Every step's target ran with the right arguments, in order, and the answer quotes the
    /// last step's nonce.
    pub success: bool,
    /// Why the run stopped.
    pub stop: String,
    /// Model turns.
    pub turns: usize,
    /// Prompt tokens over the run (reported, else estimated from bytes).
    pub prompt_tokens: u64,
    /// Completion tokens over the run (reported, else estimated from bytes).
    pub completion_tokens: u64,
    /// From the start of the run to the last step's target running right.
    pub target_ms: Option<f64>,
    /// Wall time of the run.
    pub wall_ms: f64,
    /// Calls the session recovered.
    pub recovered_calls: usize,
    /// Calls parsed from text.
    pub lenient_calls: usize,
    /// The tool names the model called, in order.
    pub called: Vec<String>,
    /// Stub tools that ran but are no step's target (wrong tools), in order.
    pub wrong_tools: Vec<String>,
    /// A denied decoy ran (never expected: the gateway refuses it).
    pub decoy_ran: bool,
    /// The final answer, when the run failed.
    pub answer: Option<String>,
}

fn verdict(task: &Task, mode: Mode, run: &AgentRun, ran: &[Execution], started_ms: f64) -> TaskRun {
    let mut position = 0;
    let mut last: Option<&Execution> = None;
    let mut all_steps = true;
    for step in &task.steps {
        let found = ran[position..]
            .iter()
            .position(|(id, args, _, _)| *id == step.target && matches(&step.arguments, args));
        match found {
            Some(offset) => {
                last = Some(&ran[position + offset]);
                position += offset + 1;
            }
            None => {
                all_steps = false;
                break;
            }
        }
    }
    let quoted = last.is_some_and(|(_, _, nonce, _)| {
        run.answer
            .as_deref()
            .is_some_and(|a| a.contains(nonce.as_str()))
    });
    let decoy_ran = ran.iter().any(|(id, ..)| task.denied.contains(id));
    let success = all_steps && quoted && !decoy_ran;
    let estimated = |bytes: usize| bytes.div_ceil(4) as u64;
    TaskRun {
        task: task.name.to_string(),
        mode: mode.to_string(),
        chosen_mode: run.mode.clone(),
        success,
        stop: run.stop.name().to_string(),
        turns: run.turns,
        prompt_tokens: run
            .requests
            .iter()
            .map(|r| r.prompt_tokens.unwrap_or_else(|| estimated(r.bytes)))
            .sum(),
        completion_tokens: run
            .requests
            .iter()
            .map(|r| {
                r.completion_tokens
                    .unwrap_or_else(|| estimated(r.response_bytes))
            })
            .sum(),
        target_ms: last
            .filter(|_| all_steps)
            .map(|(.., at)| (at - started_ms).max(0.0)),
        wall_ms: run.wall.as_secs_f64() * 1000.0,
        recovered_calls: run.recovered_calls(),
        lenient_calls: run.lenient_calls(),
        called: run.calls.iter().map(|c| c.name.clone()).collect(),
        wrong_tools: ran
            .iter()
            .filter(|(id, ..)| !task.steps.iter().any(|s| s.target == *id))
            .map(|(id, ..)| id.clone())
            .collect(),
        decoy_ran,
        answer: if success { None } else { run.answer.clone() },
    }
}

/// Who plays the model.
#[derive(Debug, Clone)]
pub enum SuiteProvider {
    /// Any OpenAI-compatible server.
    External(ProviderConfig),
    /// The scripted mock provider (one per task run), well-behaved or as a small model.
    Scripted {
        /// A small model's behaviour, if any.
        small_model: Option<SmallModel>,
        /// Write calls as text.
        text_calls: bool,
    },
}

/// The scripted model's script for `task`.
pub fn mock_scenario(
    task: &Task,
    small_model: Option<SmallModel>,
    text_calls: bool,
) -> MockScenario {
    let steps = task
        .steps
        .iter()
        .map(|s| MockStep {
            target: s.target.clone(),
            arguments: s.scripted_arguments.clone(),
            queries: s.queries.clone(),
        })
        .collect();
    MockScenario {
        small_model,
        text_calls,
        steps,
        ..MockScenario::default()
    }
}

/// Runs `task` once in `mode`. `worker_binary` is the `toolsearch` binary: it runs the
/// code-mode workers and, for a [`TaskCatalog::GithubNpm`] task, the stub MCP servers (and
/// their supervisors), which record into a temporary directory removed afterwards.
pub async fn run_task(
    task: &Task,
    mode: Mode,
    provider: &SuiteProvider,
    options: &AgentOptions,
    worker_binary: &Path,
) -> Result<TaskRun, BenchError> {
    let records = if task.catalog == TaskCatalog::GithubNpm {
        Some(RecordDir::create()?)
    } else {
        None
    };
    let records = records.as_ref().map(|r| r.0.as_path());
    run(task, mode, provider, options, worker_binary, records).await
}

/// [`run_task`], with the stub MCP servers of a [`TaskCatalog::GithubNpm`] task recording
/// into `records` (an existing directory the caller owns: one `<server>.jsonl` per server that
/// was called, one JSON line per call: `tool` (the raw name), `arguments`, `nonce`, `unix_ms`,
/// `pid`). Other tasks ignore it.
pub async fn run_task_recording(
    task: &Task,
    mode: Mode,
    provider: &SuiteProvider,
    options: &AgentOptions,
    worker_binary: &Path,
    records: &Path,
) -> Result<TaskRun, BenchError> {
    run(task, mode, provider, options, worker_binary, Some(records)).await
}

async fn run(
    task: &Task,
    mode: Mode,
    provider: &SuiteProvider,
    options: &AgentOptions,
    worker_binary: &Path,
    records: Option<&Path>,
) -> Result<TaskRun, BenchError> {
    let ran = Ran::default();
    let policy = if task.denied.is_empty() {
        Policy::default()
    } else {
        Policy::from_json(&json!({"session": {"deny": task.denied}}))
            .map_err(|e| BenchError::Task(format!("the policy of {}: {e}", task.name)))?
    };
    // A GithubNpm task's tools come from its stub MCP servers (stopped when `upstreams` is
    // shut down below, or dropped on an early return).
    let stubs = match (task.catalog, records) {
        (TaskCatalog::GithubNpm, Some(records)) => {
            let servers = stub_servers(task, worker_binary, records)?;
            let upstreams = start_stubs(&servers, worker_binary).await?;
            Some((records, servers, upstreams))
        }
        (TaskCatalog::GithubNpm, None) => {
            return Err(BenchError::Task(format!(
                "{} needs a record directory for its stub MCP servers",
                task.name
            )));
        }
        _ => None,
    };
    let base = catalog(task, &ran);
    let snapshot = match &stubs {
        Some((.., upstreams)) => upstreams.catalog(&base),
        None => CatalogSnapshot::build(base.clone()),
    };
    let session = Session::builder(Config::default())
        .mode(mode)
        .catalog(snapshot)
        .policy(policy)
        .worker_binary(worker_binary)
        .warm_pool(0)
        .build()
        .await?;
    if let Some((.., upstreams)) = &stubs {
        upstreams.attach(&session, base);
    }
    let (config, mock) = match provider {
        SuiteProvider::External(config) => (config.clone(), None),
        SuiteProvider::Scripted {
            small_model,
            text_calls,
        } => {
            let mock = MockProvider::start(
                ([127, 0, 0, 1], 0).into(),
                mock_scenario(task, *small_model, *text_calls),
            )
            .await?;
            (
                ProviderConfig::new(mock.url(), "toolsearch-mock"),
                Some(mock),
            )
        }
    };
    let agent = Agent::new(config, options.clone())?;
    let started_ms = unix_ms();
    let run = agent.run(&session, task.prompt).await;
    session.finish().await;
    if let Some(mock) = mock {
        mock.shutdown().await;
    }
    let mut executions = ran.all();
    if let Some((records, servers, upstreams)) = stubs {
        upstreams.shutdown().await;
        executions.extend(recorded(records, &servers)?);
        // The servers' records merged into one order of execution.
        executions.sort_by(|a, b| a.3.total_cmp(&b.3));
    }
    Ok(verdict(task, mode, &run, &executions, started_ms))
}

/// One mode's summary over the suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeSummary {
    /// The mode asked for.
    pub mode: String,
    /// Tasks run.
    pub tasks: usize,
    /// Tasks that succeeded.
    pub successes: usize,
    /// `successes / tasks`.
    pub success_rate: f64,
    /// Median model turns.
    pub median_turns: f64,
    /// Prompt tokens over every task.
    pub prompt_tokens: u64,
    /// Completion tokens over every task.
    pub completion_tokens: u64,
    /// Median time to the target over the tasks that succeeded.
    pub median_target_ms: Option<f64>,
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// The per-mode summary of `runs`, in the order modes first appear.
pub fn summarize(runs: &[TaskRun]) -> Vec<ModeSummary> {
    let mut modes: Vec<&str> = Vec::new();
    for run in runs {
        if !modes.contains(&run.mode.as_str()) {
            modes.push(&run.mode);
        }
    }
    modes
        .into_iter()
        .map(|mode| {
            let of: Vec<&TaskRun> = runs.iter().filter(|r| r.mode == mode).collect();
            let successes = of.iter().filter(|r| r.success).count();
            ModeSummary {
                mode: mode.to_string(),
                tasks: of.len(),
                successes,
                success_rate: successes as f64 / of.len().max(1) as f64,
                median_turns: median(of.iter().map(|r| r.turns as f64).collect()).unwrap_or(0.0),
                prompt_tokens: of.iter().map(|r| r.prompt_tokens).sum(),
                completion_tokens: of.iter().map(|r| r.completion_tokens).sum(),
                median_target_ms: median(
                    of.iter()
                        .filter(|r| r.success)
                        .filter_map(|r| r.target_ms)
                        .collect(),
                ),
            }
        })
        .collect()
}

/// Runs `tasks` in every mode of `modes` (mode by mode).
pub async fn run_suite(
    tasks: &[Task],
    modes: &[Mode],
    provider: &SuiteProvider,
    options: &AgentOptions,
    worker_binary: &Path,
) -> Result<Vec<TaskRun>, BenchError> {
    let mut runs = Vec::new();
    for &mode in modes {
        for task in tasks {
            runs.push(run_task(task, mode, provider, options, worker_binary).await?);
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_suite_covers_what_it_promises() {
        let tasks = suite();
        assert!(tasks.len() >= 12);
        let mut names: Vec<&str> = tasks.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), tasks.len(), "unique names");
        assert!(tasks.iter().any(|t| t.steps.len() == 2));
        assert!(tasks.iter().any(|t| !t.denied.is_empty()));
        for catalog in [
            TaskCatalog::Demo,
            TaskCatalog::GithubNpm,
            TaskCatalog::Synthetic,
        ] {
            assert!(tasks.iter().any(|t| t.catalog == catalog), "{catalog:?}");
        }
        // Every target exists in its task's catalog (for GithubNpm: its stub servers'
        // listings), and is the only tool of its id.
        let served: Vec<String> = listing_servers()
            .unwrap()
            .into_iter()
            .flat_map(|(_, server, names)| {
                names
                    .into_iter()
                    .map(move |n| format!("mcp:{server}:{}", crate::mcp::names::escape(&n)))
            })
            .collect();
        for task in &tasks {
            let ids: Vec<String> = match task.catalog {
                TaskCatalog::GithubNpm => served.clone(),
                _ => catalog(task, &Ran::default())
                    .into_iter()
                    .map(|t| t.id)
                    .collect(),
            };
            for step in &task.steps {
                assert_eq!(
                    ids.iter().filter(|id| **id == step.target).count(),
                    1,
                    "{}: {}",
                    task.name,
                    step.target
                );
            }
        }
    }

    #[test]
    fn arguments_match_leniently_but_never_loosely() {
        let want = json!({"owner": "tokio-rs", "n": 42, "to": ["a@b.c"]});
        assert!(matches(
            &want,
            &json!({"owner": " Tokio-RS ", "n": 42.0, "to": ["A@b.c"], "extra": 1})
        ));
        assert!(matches(
            &want,
            &json!({"owner": "tokio-rs", "n": "42", "to": ["a@b.c"]})
        ));
        for wrong in [
            json!({"owner": "tokio", "n": 42, "to": ["a@b.c"]}),
            json!({"owner": "tokio-rs", "to": ["a@b.c"]}),
            json!({"owner": "tokio-rs", "n": 42, "to": ["a@b.c", "x@y.z"]}),
            json!("tokio-rs"),
        ] {
            assert!(!matches(&want, &wrong), "{wrong}");
        }
    }
}
