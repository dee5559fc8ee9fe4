//! One run of the gateway, as every entry point sees it: a [`Session`] (SPEC R-8.6, R-9, R-10,
//! R-11).
//!
//! Owns: applying a resolved [`Config`] — the only place that reads its values — to the three
//! parts of a run: the [`Gateway`] (search limits, run context, hooks, approvals, session log),
//! the [`Surface`] (mode resolved, `auto` decided, code fallback applied) and, when the surface
//! is in code mode, the sandbox [`Supervisor`] (code timeout and memory limit); the order of the
//! run's first records (`run_start`, then `auto_decision` / `code_fallback`); the [`Reply`] the
//! model sees for each of its tool calls; and `run_end`.
//!
//! Adapters (the CLI commands, the MCP server, the agent loop) build a session and render its
//! answers; none of them builds a gateway, surface or supervisor, or reads a config value.
//! A model's call flows adapter → [`Session::handle`] → surface → gateway → tool.
//!
//! Never does: parse configuration files (see `config`), talk to a provider or a client, or
//! decide what a call does (the gateway) or what the model sees (the surface).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::catalog::{CatalogSnapshot, FailureKind, SentResult};
use crate::config::{Config, Mode};
use crate::gateway::{
    ApprovalHandler, BeforeToolCall, CallError, CallOutcome, ClientCall, Envelope, ErrorKind,
    Gateway, GatewayBuilder, GatewayError, GatewaySettings, RunContext,
};
use crate::policy::Policy;
use crate::sandbox::{Bridge, CellResult, Limits, Outcome, Supervisor, SupervisorConfig};
use crate::search::IndexCache;
use crate::search::batch::{SearchResponse, Searched};
use crate::surface::{
    CodeAvailability, Dispatch, Format, PromptSection, Recovered, Surface, SurfaceError,
    SurfaceOptions, ToolDefinition,
};
use crate::sync::ReadWrite;
use crate::telemetry::SessionLog;

/// What the model sees for one of its tool calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Success: exactly the JSON the model reads (a description, a code cell's
    /// `{ok: true, value, logs?, next?}`).
    Ok(Value),
    /// A tool ran: its envelope, which the model reads as `{tool, result}` and a front that
    /// speaks MCP passes on as the result the tool's server sent, when it was an MCP tool.
    Done(Envelope),
    /// A search answer: R-5.1's JSON (`body`) and, beside it, what the answer covers — a line
    /// for the model (`note`: "8 of 37 matching tools shown; …") and the same for machines
    /// (`signal`: `{matched, truncated, not_found?}`, single form). The model reads the body's
    /// text with the note on a line of its own.
    Searched(Searched),
    /// Failure: exactly the JSON the model reads (`{"error": {kind, message}}`, or a failed
    /// cell's `{ok: false, error, logs?}`) and what kind of failure it is.
    Failed {
        /// The coarse kind (adapters map it: MCP errors, reply flags).
        kind: FailureKind,
        /// The gateway's own kind, when the failure came from the call path.
        error: Option<ErrorKind>,
        /// The JSON the model reads.
        body: Value,
        /// The failed result as the tool's MCP server sent it (`isError: true`), when it did.
        sent: Option<Arc<SentResult>>,
    },
    /// A client tool: the application runs it, then reports back with
    /// [`Session::complete_client_call`]. Never executed by the gateway.
    ClientCall(ClientCall),
    /// A call in the wrong shape (a bridge function's name, an undeclared control, a fenced or
    /// return-less cell body…) that ran as its structured equivalent: that equivalent's reply
    /// (never itself `Recovered`) and what was recovered. The model reads the reply's text plus
    /// one line on how the declared control is used.
    Recovered {
        /// The structured equivalent's reply.
        reply: Box<Reply>,
        /// The name called, what it ran as, and the hint.
        recovered: Recovered,
    },
}

impl Reply {
    /// Whether the model should read this as an error.
    pub fn is_error(&self) -> bool {
        matches!(self.unwrapped(), Reply::Failed { .. })
    }

    /// The reply itself: for a recovered call, its structured equivalent's.
    pub fn unwrapped(&self) -> &Reply {
        match self {
            Reply::Recovered { reply, .. } => reply.unwrapped(),
            other => other,
        }
    }

    /// What was recovered, when the call was in the wrong shape.
    pub fn recovered(&self) -> Option<&Recovered> {
        match self {
            Reply::Recovered { recovered, .. } => Some(recovered),
            _ => None,
        }
    }

    /// The JSON the model reads (for a client call: `{"client_call": {call_id, tool, args}}`;
    /// for a recovered call, its equivalent's, without the hint).
    pub fn body(&self) -> Value {
        match self {
            Reply::Ok(body) | Reply::Failed { body, .. } => body.clone(),
            Reply::Done(envelope) => envelope.to_json(),
            Reply::Searched(searched) => searched.body.clone(),
            Reply::ClientCall(call) => json!({"client_call": call}),
            Reply::Recovered { reply, .. } => reply.body(),
        }
    }

    /// The body as compact JSON text (what goes into a provider's tool-result message); a
    /// recovered call's adds its hint on a line of its own.
    pub fn text(&self) -> String {
        match self {
            Reply::Ok(body) | Reply::Failed { body, .. } => body.to_string(),
            Reply::Done(envelope) => envelope.to_json().to_string(),
            Reply::Searched(searched) => searched.text(),
            Reply::ClientCall(_) => self.body().to_string(),
            Reply::Recovered { reply, recovered } => {
                format!("{}\n{}", reply.text(), recovered.hint)
            }
        }
    }

    fn error(error: CallError) -> Reply {
        Reply::Failed {
            kind: error.failure_kind(),
            error: Some(error.kind),
            body: error.to_json(),
            sent: error.sent,
        }
    }

    /// A cell as the model reads it: value, logs and error, never telemetry; after a search
    /// (a value of hits, or a failure once a search found something), the next step as `next`,
    /// the search's note on what it showed then cut to its count ("8 of 37 matching tools
    /// shown."): its "refine the query or raise limit" sent a 1.5B model back to searching.
    fn cell(result: &CellResult, next: Option<String>) -> Reply {
        let mut body = result.to_model_json();
        if let (Some(next), Some(object)) = (next, body.as_object_mut()) {
            if let Some(Value::Array(logs)) = object.get_mut("logs") {
                for line in logs.iter_mut() {
                    let Some(text) = line["text"].as_str() else {
                        continue;
                    };
                    if let (true, Some((shown, _))) =
                        (text.starts_with(SEARCH_NOTE_PREFIX), text.split_once("; "))
                    {
                        line["text"] = format!("{shown}.").into();
                    }
                }
            }
            object.insert("next".into(), next.into());
        }
        if result.outcome.is_ok() {
            Reply::Ok(body)
        } else {
            Reply::Failed {
                kind: cell_failure_kind(&result.outcome),
                error: None,
                body,
                sent: None,
            }
        }
    }
}

/// How the bridge's note on a search's coverage opens in a cell's logs.
const SEARCH_NOTE_PREFIX: &str = "[openclaw.tools.search] ";

/// The coarse kind of a failed cell.
fn cell_failure_kind(outcome: &Outcome) -> FailureKind {
    match outcome {
        Outcome::Timeout | Outcome::Busy { .. } => FailureKind::Timeout,
        Outcome::SeccompViolation => FailureKind::Blocked,
        Outcome::LimitExceeded {
            limit: crate::sandbox::LimitKind::CodeBytes,
        } => FailureKind::BadArguments,
        Outcome::Ok | Outcome::JsError { .. } | Outcome::Memory | Outcome::LimitExceeded { .. } => {
            FailureKind::ToolFailed
        }
        Outcome::KilledBySignal { .. }
        | Outcome::ProtocolError { .. }
        | Outcome::SandboxUnavailable { .. }
        | Outcome::WorkerSetupFailure { .. } => FailureKind::Internal,
    }
}

impl From<Dispatch> for Reply {
    fn from(dispatch: Dispatch) -> Reply {
        match dispatch {
            Dispatch::Result(value) => Reply::Ok(value),
            Dispatch::Searched(searched) => Reply::Searched(searched),
            Dispatch::Done(envelope) => Reply::Done(envelope),
            Dispatch::ClientCall(call) => Reply::ClientCall(call),
            Dispatch::Cell(result, next) => Reply::cell(&result, next),
            Dispatch::Failed(error) => Reply::error(error),
            Dispatch::Recovered(dispatch, recovered) => Reply::Recovered {
                reply: Box::new(Reply::from(*dispatch)),
                recovered,
            },
        }
    }
}

/// A session that cannot be built (bad model input never gets here; this is set-up).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The gateway (its search index) could not be built.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// The surface could not be built (e.g. a client tool name collides with a catalog name).
    #[error(transparent)]
    Surface(#[from] SurfaceError),
}

/// Builds a [`Session`]. Every part has a safe default: an empty catalog, an allow-all policy,
/// no hooks, no approval handler (tools that require approval are denied), a discarding log.
pub struct SessionBuilder {
    config: Config,
    mode: Option<Mode>,
    /// The gateway's parts (catalog, policy, run, hooks, approvals, log, index cache).
    gateway: GatewayBuilder,
    context_tokens: Option<usize>,
    worker_binary: Option<PathBuf>,
    warm_pool: Option<usize>,
}

impl SessionBuilder {
    /// The catalog snapshot of the run.
    pub fn catalog(mut self, snapshot: CatalogSnapshot) -> Self {
        self.gateway = self.gateway.catalog(snapshot);
        self
    }

    /// The effective policy (R-2).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.gateway = self.gateway.policy(policy);
        self
    }

    /// Overrides the configured mode (e.g. the CLI's `--mode`, or `exec`, which always runs code).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Who runs (agent, sandbox and session ids). The profile defaults to the config's.
    pub fn run(mut self, run: RunContext) -> Self {
        self.gateway = self.gateway.run(run);
        self
    }

    /// Adds a `before_tool_call` hook (run in the order added).
    pub fn hook(mut self, hook: Arc<dyn BeforeToolCall>) -> Self {
        self.gateway = self.gateway.hook(hook);
        self
    }

    /// Sets the approval handler (without one, tools that require approval are denied).
    pub fn approvals(mut self, handler: Arc<dyn ApprovalHandler>) -> Self {
        self.gateway = self.gateway.approvals(handler);
        self
    }

    /// Sets the session log (R-11.2).
    pub fn session_log(mut self, log: SessionLog) -> Self {
        self.gateway = self.gateway.session_log(log);
        self
    }

    /// The provider's context window in tokens (bounds the directory and `auto`, R-9.2, R-9.6).
    pub fn context_tokens(mut self, tokens: Option<usize>) -> Self {
        self.context_tokens = tokens;
        self
    }

    /// The binary that runs sandbox workers: one whose `main` calls
    /// [`sandbox::dispatch_role`](crate::dispatch_role) first. Default: the current executable.
    pub fn worker_binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.worker_binary = Some(path.into());
        self
    }

    /// Ready sandbox workers kept warm in code mode (default 2; 0 forks each cell on demand,
    /// which suits a run of one cell).
    pub fn warm_pool(mut self, workers: usize) -> Self {
        self.warm_pool = Some(workers);
        self
    }

    /// Shares an index cache with other sessions (indexes are per snapshot and policy).
    pub fn index_cache(mut self, cache: Arc<IndexCache>) -> Self {
        self.gateway = self.gateway.index_cache(cache);
        self
    }

    /// Builds the run: the gateway, the sandbox when code mode may be chosen (probed, R-8.6),
    /// the surface, then `run_start` and the `auto` / fallback records, in that order.
    pub async fn build(self) -> Result<Session, SessionError> {
        let mut config = self.config;
        if let Some(mode) = self.mode {
            config.mode = mode;
        }
        let gateway = self
            .gateway
            .default_profile(config.profile.as_str())
            .settings(GatewaySettings {
                search_limits: config.search_limits,
                ..GatewaySettings::default()
            })
            .defer_run_start()
            .build()?;

        let might_run_code = config.mode == Mode::Code
            || (config.mode == Mode::Auto && config.auto_deferred_mode == Mode::Code);
        let (supervisor, code) = if might_run_code {
            start_sandbox(&config, self.worker_binary, self.warm_pool).await
        } else {
            (None, CodeAvailability::Available)
        };
        let surface = match Surface::build(
            &gateway.view(),
            &SurfaceOptions {
                config: config.clone(),
                context_tokens: self.context_tokens,
                code,
            },
        ) {
            Ok(surface) => surface,
            Err(error) => {
                if let Some(supervisor) = supervisor {
                    supervisor.shutdown().await;
                }
                return Err(error.into());
            }
        };
        gateway.start_run(surface.schemas_visible_up_front());
        surface.record_decisions(&gateway);
        let supervisor = match supervisor {
            Some(supervisor) if surface.mode == Mode::Code => Some(supervisor),
            Some(unused) => {
                unused.shutdown().await;
                None
            }
            None => None,
        };
        let (changes, _) = tokio::sync::watch::channel(0);
        Ok(Session {
            inner: Arc::new(Inner {
                config,
                context_tokens: self.context_tokens,
                gateway,
                surface: RwLock::new(Arc::new(surface)),
                supervisor,
                finished: AtomicBool::new(false),
                changes,
            }),
        })
    }
}

/// Starts the run's sandbox with the config's limits and probes it (R-8.6).
async fn start_sandbox(
    config: &Config,
    worker_binary: Option<PathBuf>,
    warm_pool: Option<usize>,
) -> (Option<Supervisor>, CodeAvailability) {
    let binary = match worker_binary {
        Some(path) => path,
        None => match std::env::current_exe() {
            Ok(path) => path,
            Err(error) => {
                return (
                    None,
                    CodeAvailability::Unavailable(format!(
                        "cannot locate the worker binary: {error}"
                    )),
                );
            }
        },
    };
    let mut supervisor_config = SupervisorConfig::new(binary);
    supervisor_config.limits = Limits {
        code_timeout: config.code_timeout,
        memory_limit_bytes: usize::try_from(config.memory_limit_bytes).unwrap_or(usize::MAX),
        ..Limits::default()
    };
    if let Some(pool) = warm_pool {
        supervisor_config.pool_size = pool;
    }
    let supervisor = match Supervisor::start(supervisor_config).await {
        Ok(supervisor) => supervisor,
        Err(error) => return (None, CodeAvailability::Unavailable(error.to_string())),
    };
    match supervisor.probe().await {
        Ok(()) => (Some(supervisor), CodeAvailability::Available),
        Err(error) => {
            supervisor.shutdown().await;
            (None, CodeAvailability::Unavailable(error.to_string()))
        }
    }
}

struct Inner {
    config: Config,
    context_tokens: Option<usize>,
    gateway: Gateway,
    /// Swapped whole when the catalog changes ([`Session::replace_catalog`]).
    surface: RwLock<Arc<Surface>>,
    supervisor: Option<Supervisor>,
    finished: AtomicBool,
    /// Bumped on every catalog change whose declared tools differ.
    changes: tokio::sync::watch::Sender<u64>,
}

/// One run: what the model is shown and what answers its calls. Cheap to clone; clones share
/// the run (an MCP server handles concurrent requests on clones).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), toolsearch::SessionError> {
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolsearch::{CatalogSnapshot, Config, Descriptor, FnTool, Format, Mode, Session};
/// use toolsearch::{Source, ToolOutput};
///
/// let echo = Descriptor::new(Source::Plugin, "demo", "echo")
///     .description("Echo a message back")
///     .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}},
///                          "required": ["text"]}))
///     .tool(Arc::new(FnTool(|_ctx, args| async move { Ok(ToolOutput::json(args)) })));
/// let session = Session::builder(Config::default())
///     .mode(Mode::Tools)
///     .catalog(CatalogSnapshot::build([echo]))
///     .build()
///     .await?;
///
/// // The provider gets three compact controls instead of every schema.
/// assert_eq!(session.tools(Format::OpenAi).as_array().map(Vec::len), Some(3));
///
/// let hits = session.handle("tool_search", &json!({"query": "echo message"})).await;
/// assert_eq!(hits.body()[0]["id"], "plugin:demo:echo");
///
/// let reply = session
///     .handle("tool_call", &json!({"id": "plugin:demo:echo", "args": {"text": "hi"}}))
///     .await;
/// assert_eq!(reply.body()["result"]["details"]["text"], "hi");
///
/// let wrong = session.handle("tool_call", &json!({"id": "plugin:demo:echo", "args": {}})).await;
/// assert!(wrong.is_error()); // "missing required property text", with the expected signature
///
/// let telemetry = session.finish().await; // writes run_end
/// assert_eq!(telemetry["counters"]["calls"], 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("run_id", &self.inner.gateway.run().run_id)
            .field("mode", &self.surface().mode)
            .field("sandbox", &self.inner.supervisor.is_some())
            .finish()
    }
}

impl Session {
    /// A session over `config` (resolved, clamps already reported).
    pub fn builder(config: Config) -> SessionBuilder {
        SessionBuilder {
            config,
            mode: None,
            gateway: Gateway::builder(CatalogSnapshot::build(Vec::new())),
            context_tokens: None,
            worker_binary: None,
            warm_pool: None,
        }
    }

    /// The mode in force (after `auto` and the code fallback).
    pub fn mode(&self) -> Mode {
        self.surface().mode
    }

    /// The resolved configuration the run applies.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.inner.gateway.run().run_id
    }

    /// The surface in force: declared tools, prompt sections, the `auto` decision and fallback.
    pub fn surface(&self) -> Arc<Surface> {
        self.inner.surface.reading().clone()
    }

    /// The declared tool definitions.
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        self.surface().tools.clone()
    }

    /// The tool definitions in a provider's format.
    pub fn tools(&self, format: Format) -> Value {
        self.surface().tools_json(format)
    }

    /// The system-prompt sections this run adds (byte-stable for a snapshot, R-9.2).
    pub fn prompt_sections(&self) -> Vec<PromptSection> {
        self.surface().prompt.clone()
    }

    /// The system-prompt text this run adds (empty in direct mode).
    pub fn system_prompt(&self) -> String {
        self.surface().system_prompt()
    }

    /// Replaces the run's catalog (an MCP server listed new tools, restarted or went away).
    /// The mode stays what this run decided (`auto` decides once per run, R-9.6); the surface is
    /// rebuilt over the new snapshot; calls already running keep the snapshot they started
    /// with. Subscribers of [`Session::changes`] are told when the declared tools changed.
    pub fn replace_catalog(&self, snapshot: CatalogSnapshot) -> Result<(), SessionError> {
        let inner = &self.inner;
        inner.gateway.replace_snapshot(snapshot)?;
        let old = self.surface();
        let mut config = inner.config.clone();
        config.mode = old.mode;
        let mut surface = Surface::build(
            &inner.gateway.view(),
            &SurfaceOptions {
                config,
                context_tokens: inner.context_tokens,
                code: CodeAvailability::Available,
            },
        )?;
        surface.requested_mode = old.requested_mode;
        surface.auto = old.auto.clone();
        surface.fallback = old.fallback.clone();
        let changed = surface.tools != old.tools;
        *inner.surface.writing() = Arc::new(surface);
        if changed {
            inner.changes.send_modify(|generation| *generation += 1);
        }
        Ok(())
    }

    /// A receiver that changes whenever a catalog change altered the declared tools (an MCP
    /// server adapter sends `notifications/tools/list_changed` then).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The run's policy (what an MCP front applies to upstream resources and prompts).
    pub fn policy(&self) -> Policy {
        self.inner.gateway.view().policy().clone()
    }

    /// Whether this run can execute code cells (code mode with a working sandbox).
    pub fn has_sandbox(&self) -> bool {
        self.inner.supervisor.is_some()
    }

    /// Answers one model tool call by its provider name: a control, a declared tool, a hidden
    /// catalog name in directory mode (hydration), or a code cell. Never fails: every problem is
    /// a [`Reply::Failed`] worded for the controls the model has.
    pub async fn handle(&self, name: &str, arguments: &Value) -> Reply {
        let inner = &self.inner;
        self.surface()
            .dispatch(&inner.gateway, inner.supervisor.as_ref(), name, arguments)
            .await
            .into()
    }

    /// A code cell the model wrote as text instead of calling `tool_search_code` (found by a
    /// lenient agent): runs as that control's cell when the surface declares it, counted and
    /// logged as a recovered call (`code_in_text`) with a hint to call the control next time;
    /// otherwise an unknown-name error.
    pub async fn handle_code_in_text(&self, code: &str) -> Reply {
        let inner = &self.inner;
        self.surface()
            .dispatch_code_in_text(&inner.gateway, inner.supervisor.as_ref(), code)
            .await
            .into()
    }

    /// `tool_search` whatever the mode (CLI and embedders): `{query, limit?}` or `{queries}`.
    pub fn search(&self, arguments: &Value) -> Reply {
        let gateway = &self.inner.gateway;
        match gateway.search(arguments) {
            Ok(response) => Reply::Searched(response.render(gateway.search_limits().max_limit())),
            Err(error) => self.failed(error),
        }
    }

    /// One query searched as `tool_search` searches it, with each hit's ranking detail
    /// (`toolsearch search`).
    pub fn explain(&self, query: &str, limit: Option<&Value>) -> Result<SearchResponse, Reply> {
        self.inner
            .gateway
            .explain(query, limit)
            .map_err(|error| self.failed(error))
    }

    /// `tool_describe` whatever the mode: `{id}` or an id string.
    pub fn describe(&self, arguments: &Value) -> Reply {
        match self.inner.gateway.describe(arguments) {
            Ok(value) => Reply::Ok(value),
            Err(error) => self.failed(error),
        }
    }

    /// `tool_call` whatever the mode: `{id, args}` in any shape the gateway accepts.
    pub async fn call(&self, request: &Value) -> Reply {
        let outcome = self.inner.gateway.call(request).await;
        self.reply(outcome)
    }

    /// Calls `id` with `args`: the same answer as `call(&{"id": id, "args": args})`.
    pub async fn call_tool(&self, id: &str, args: Value) -> Reply {
        let outcome = self.inner.gateway.call_tool(id, args).await;
        self.reply(outcome)
    }

    fn reply(&self, outcome: CallOutcome) -> Reply {
        match outcome {
            CallOutcome::Done(envelope) => Reply::Done(envelope),
            CallOutcome::ClientCallRequired(call) => Reply::ClientCall(call),
            CallOutcome::Failed(error) => self.failed(error),
        }
    }

    /// Runs one code cell (`timeout` overrides `codeTimeoutMs` for it, clamped). Without a
    /// sandbox (not code mode, or the probe failed) the result is a `worker_setup_failure`
    /// naming why.
    pub async fn run_cell(&self, code: &str, timeout: Option<Duration>) -> CellResult {
        let inner = &self.inner;
        match &inner.supervisor {
            Some(supervisor) => {
                self.surface()
                    .run_cell(supervisor, &inner.gateway, code, timeout)
                    .await
            }
            None => CellResult::failed(
                Outcome::WorkerSetupFailure {
                    detail: match &self.surface().fallback {
                        Some(reason) => reason.clone(),
                        None => format!("this run is in {} mode, not code mode", self.mode()),
                    },
                },
                Default::default(),
            ),
        }
    }

    /// The bridge this run's code cells use (the gateway's call path, errors worded for
    /// `openclaw.tools.*`): for benchmarks and embedders that drive a sandbox of their own.
    pub fn bridge(&self) -> Arc<dyn Bridge> {
        Arc::new(self.surface().cell_bridge(&self.inner.gateway))
    }

    /// Completes a client call handed out as [`Reply::ClientCall`] with the application's
    /// result (`Ok(details)`) or failure message.
    pub fn complete_client_call(&self, call_id: &str, result: Result<Value, String>) -> Reply {
        match self.inner.gateway.complete_client_call(call_id, result) {
            CallOutcome::Done(envelope) => Reply::Done(envelope),
            CallOutcome::ClientCallRequired(call) => Reply::ClientCall(call),
            CallOutcome::Failed(error) => self.failed(error),
        }
    }

    /// Marks the MCP server `server` as down: its tools answer with R-7.8's outage message
    /// (naming the server, telling the model not to retry) until [`Session::mark_server_up`].
    pub fn mark_server_down(&self, server: &str, reason: &str) {
        self.inner.gateway.mark_server_failed(server, reason);
    }

    /// Clears an outage recorded by [`Session::mark_server_down`].
    pub fn mark_server_up(&self, server: &str) {
        self.inner.gateway.mark_server_recovered(server);
    }

    /// The run's telemetry so far (R-11.1).
    pub fn telemetry(&self) -> Value {
        self.inner.gateway.telemetry()
    }

    /// Ends the run: writes `run_end` and stops the sandbox (killing and reaping every worker).
    /// Returns the run's telemetry. Idempotent; later cells fail with `worker_setup_failure`.
    pub async fn finish(&self) -> Value {
        let inner = &self.inner;
        if !inner.finished.swap(true, Ordering::AcqRel) {
            inner.gateway.finish();
            if let Some(supervisor) = &inner.supervisor {
                supervisor.shutdown().await;
            }
        }
        inner.gateway.telemetry()
    }

    fn failed(&self, error: CallError) -> Reply {
        Reply::error(self.surface().guidance().reword(error))
    }
}
