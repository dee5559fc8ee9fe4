//! The gateway: the one execution path every surface uses to search, describe and call tools
//! (SPEC R-2.3, R-6, R-7, R-11).
//!
//! A [`Gateway`] holds the current catalog snapshot seen through the effective policy, the run
//! context (agent, profile, sandbox and session ids, schemas visible up front), the hooks and
//! approval handler, the run's [`Schedule`], counters and the session log. Every final call —
//! from `tool_call`, a code cell's bridge, directory hydration or MCP serve mode — goes through
//! [`Gateway::call`], whose stages are, in order:
//!
//! ```text
//! resolve     request shape → (tool, args)          R-6.2, R-6.3, R-7.2, R-7.5
//! policy      allowed? server up? implemented?      R-2.2, R-2.3, R-7.8
//! approval    requires_approval → handler decides   R-7.6 (no handler: denied)
//! hooks       before_tool_call: continue/rewrite/block
//! validate    trusted input schema; output schema compiled before execution   R-7.3, R-7.4
//! execute     in a schedule slot, under the tool's timeout (future dropped)   R-7.6, R-7.7
//! check       trusted output schema on result.details                          R-7.4
//! envelope    {tool: {id, name, source}, result}                               R-7.1
//! log         counters, tracing event, session log record                      R-11
//! ```
//!
//! Never does: decide what the model sees (surface) or run guest code (sandbox). A denied tool
//! answers exactly like an unknown one because resolution only ever sees allowed tools.

mod hooks;
mod outcome;
mod record;
mod request;
mod schedule;
pub(crate) mod validate;

pub use hooks::{Approval, ApprovalHandler, BeforeToolCall, GlobApprovals, HookDecision};
pub use outcome::{
    CallError, CallOutcome, ClientCall, Envelope, ErrorKind, Operation, Recovery, ToolRef,
};
pub(crate) use record::Record;
pub(crate) use request::lookup_error;

/// The resolve stage of `tool_call` on its own (the fuzz target): the tool id the request names
/// (`None` for a position the index does not hold) and the repaired arguments.
#[cfg(feature = "fuzzing")]
pub(crate) fn parse_call_request(
    index: &SearchIndex,
    request: &Value,
) -> Result<(Option<String>, Value), CallError> {
    let parsed = request::parse(index, request)?;
    let id = match parsed.target {
        request::Target::Catalog(position) => index.tool(position).map(|d| d.id.clone()),
        request::Target::Direct(id) => Some(id),
    };
    Ok((id, parsed.args))
}
pub use schedule::Schedule;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::catalog::{
    BoxFuture, CallContext, CatalogSnapshot, Descriptor, Executor, FailureKind, NestedCalls,
    Source, ToolError, ToolOutput,
};
use crate::config::SearchLimits;
use crate::policy::{Authorized, Policy};
use crate::search::{IndexCache, SearchIndex, batch, lookup};
use crate::signature::input_signature;
use crate::sync::{ReadWrite, lock};
use crate::telemetry::{Counters, SessionLog};
use request::{Call, Target};
use validate::ValidatorCache;

/// The tool timeout used when a tool declares none.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);
/// Client calls awaiting completion that one gateway remembers.
pub const MAX_PENDING_CLIENT_CALLS: usize = 1_024;
/// Final calls remembered for telemetry (R-11.1).
pub const MAX_REMEMBERED_CALLS: usize = 256;

/// Who is running: the identity calls and logs are attributed to (R-2.1, R-11.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunContext {
    /// The run id (generated when empty).
    pub run_id: String,
    /// The agent id.
    pub agent: Option<String>,
    /// The profile (e.g. "default", "local").
    pub profile: Option<String>,
    /// The sandbox id.
    pub sandbox: Option<String>,
    /// The session id.
    pub session: Option<String>,
    /// How many tool schemas the surface showed the model up front (R-11.2). A session sets it
    /// with [`Gateway::start_run`] once its surface is built.
    pub schemas_visible_up_front: usize,
}

/// Knobs of the call path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GatewaySettings {
    /// Timeout of tools that declare none (default 30 s).
    pub default_timeout: Duration,
    /// Search limits (R-3.8).
    pub search_limits: SearchLimits,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            default_timeout: DEFAULT_TOOL_TIMEOUT,
            search_limits: SearchLimits::default(),
        }
    }
}

/// A gateway that could not be built (an internal failure, not bad model input).
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The search index could not be built.
    #[error(transparent)]
    Index(#[from] crate::search::BuildError),
}

/// Builds a [`Gateway`].
pub struct GatewayBuilder {
    snapshot: CatalogSnapshot,
    policy: Policy,
    run: RunContext,
    settings: GatewaySettings,
    hooks: Vec<Arc<dyn BeforeToolCall>>,
    approvals: Option<Arc<dyn ApprovalHandler>>,
    log: SessionLog,
    cache: Option<Arc<IndexCache>>,
    schedule: Option<Schedule>,
    defer_run_start: bool,
}

impl GatewayBuilder {
    /// Starts from a snapshot; everything else has safe defaults (allow-all policy, no hooks, no
    /// approval handler — so tools requiring approval are denied —, a discarding log).
    pub fn new(snapshot: CatalogSnapshot) -> Self {
        GatewayBuilder {
            snapshot,
            policy: Policy::allow_all(),
            run: RunContext::default(),
            settings: GatewaySettings::default(),
            hooks: Vec::new(),
            approvals: None,
            log: SessionLog::discard(),
            cache: None,
            schedule: None,
            defer_run_start: false,
        }
    }

    /// Replaces the catalog snapshot.
    pub fn catalog(mut self, snapshot: CatalogSnapshot) -> Self {
        self.snapshot = snapshot;
        self
    }

    /// The effective policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The run context.
    pub fn run(mut self, run: RunContext) -> Self {
        self.run = run;
        self
    }

    /// The run context's profile when it names none.
    pub(crate) fn default_profile(mut self, profile: &str) -> Self {
        if self.run.profile.is_none() {
            self.run.profile = Some(profile.to_string());
        }
        self
    }

    /// Call-path settings.
    pub fn settings(mut self, settings: GatewaySettings) -> Self {
        self.settings = settings;
        self
    }

    /// Adds a `before_tool_call` hook (run in the order added).
    pub fn hook(mut self, hook: Arc<dyn BeforeToolCall>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Sets the approval handler.
    pub fn approvals(mut self, handler: Arc<dyn ApprovalHandler>) -> Self {
        self.approvals = Some(handler);
        self
    }

    /// Sets the session log.
    pub fn session_log(mut self, log: SessionLog) -> Self {
        self.log = log;
        self
    }

    /// Shares an index cache with other gateways (indexes are per snapshot and policy).
    pub fn index_cache(mut self, cache: Arc<IndexCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Shares a schedule (one per run: every surface and code cell of a run uses the same).
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Leaves the `run_start` record to [`Gateway::start_run`] (a session writes it once it
    /// knows how many schemas its surface shows up front).
    pub fn defer_run_start(mut self) -> Self {
        self.defer_run_start = true;
        self
    }

    /// Builds the gateway (and the search index, unless the cache has it).
    pub fn build(self) -> Result<Gateway, GatewayError> {
        let cache = self.cache.unwrap_or_default();
        let mut run = self.run;
        if run.run_id.is_empty() {
            run.run_id = format!("run-{:x}", fresh_id());
        }
        let state = State::new(&cache, self.snapshot, self.policy)?;
        let gateway = Gateway {
            inner: Arc::new(Inner {
                state: RwLock::new(Arc::new(state)),
                cache,
                run,
                settings: self.settings,
                hooks: self.hooks,
                approvals: self.approvals,
                log: self.log,
                counters: Counters::default(),
                schedule: self.schedule.unwrap_or_default(),
                outages: RwLock::new(HashMap::new()),
                pending: Mutex::new(VecDeque::new()),
                finals: Mutex::new(VecDeque::new()),
                schemas_visible_up_front: AtomicUsize::new(0),
                started: AtomicBool::new(false),
                finished: AtomicBool::new(false),
            }),
        };
        if !self.defer_run_start {
            let visible = gateway.inner.run.schemas_visible_up_front;
            gateway.start_run(visible);
        }
        Ok(gateway)
    }
}

fn fresh_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos.rotate_left(17) ^ (u64::from(std::process::id()) << 32) ^ n
}

/// Snapshot-dependent state, swapped whole when the catalog or policy changes.
///
/// The index may be shared with other gateways whose snapshots have the same fingerprint (same
/// tools, same order) but other executors (another demo world, another MCP connection), so tools
/// are always taken from this gateway's own `view`, by the positions the index returns.
struct State {
    view: Authorized,
    index: Arc<SearchIndex>,
    validators: ValidatorCache,
}

impl State {
    fn new(
        cache: &IndexCache,
        snapshot: CatalogSnapshot,
        policy: Policy,
    ) -> Result<State, GatewayError> {
        let view = Authorized::new(snapshot, policy);
        let index = cache.get(&view)?;
        let validators = ValidatorCache::new(view.len());
        Ok(State {
            view,
            index,
            validators,
        })
    }
}

struct Pending {
    call_id: String,
    tool: ToolRef,
    started: Instant,
}

struct Inner {
    state: RwLock<Arc<State>>,
    cache: Arc<IndexCache>,
    run: RunContext,
    settings: GatewaySettings,
    hooks: Vec<Arc<dyn BeforeToolCall>>,
    approvals: Option<Arc<dyn ApprovalHandler>>,
    log: SessionLog,
    counters: Counters,
    schedule: Schedule,
    /// MCP servers (owners) known to be down, with the reason (R-7.8).
    outages: RwLock<HashMap<String, String>>,
    pending: Mutex<VecDeque<Pending>>,
    /// (tool id, source) of final calls, most recent last (bounded).
    finals: Mutex<VecDeque<(String, Source)>>,
    /// Schemas the model saw up front (set by `start_run`).
    schemas_visible_up_front: AtomicUsize,
    /// `run_start` written.
    started: AtomicBool,
    /// `run_end` written.
    finished: AtomicBool,
}

/// The gateway of one run. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("run_id", &self.inner.run.run_id)
            .finish_non_exhaustive()
    }
}

/// A stage's early exit: the outcome to return.
type Stage<T> = Result<T, CallOutcome>;

fn fail<T>(kind: ErrorKind, tool: Option<&Descriptor>, message: impl Into<String>) -> Stage<T> {
    Err(CallOutcome::Failed(CallError::new(
        kind,
        tool.map(|t| t.id.as_str()),
        message,
    )))
}

fn tool_ref(tool: &Descriptor) -> ToolRef {
    ToolRef {
        id: tool.id.clone(),
        name: tool.name.clone(),
        source: tool.source,
    }
}

impl Gateway {
    /// A gateway over `snapshot` with default settings and an allow-all policy.
    pub fn builder(snapshot: CatalogSnapshot) -> GatewayBuilder {
        GatewayBuilder::new(snapshot)
    }

    fn state(&self) -> Arc<State> {
        self.inner.state.reading().clone()
    }

    /// The search index of the current snapshot and policy (allowed tools only).
    pub fn index(&self) -> Arc<SearchIndex> {
        self.state().index.clone()
    }

    /// The allowed view of the current snapshot.
    pub fn view(&self) -> Authorized {
        self.state().view.clone()
    }

    /// The run context.
    pub fn run(&self) -> &RunContext {
        &self.inner.run
    }

    /// The run's schedule (share it with other gateways of the same run).
    pub fn schedule(&self) -> &Schedule {
        &self.inner.schedule
    }

    /// The session log.
    pub fn session_log(&self) -> &SessionLog {
        &self.inner.log
    }

    /// Search limits in force.
    pub fn search_limits(&self) -> SearchLimits {
        self.inner.settings.search_limits
    }

    /// Replaces the catalog (e.g. an MCP server changed its tools). Calls already running keep
    /// the snapshot they started with; later calls see only the new one (R-2.3).
    pub fn replace_snapshot(&self, snapshot: CatalogSnapshot) -> Result<(), GatewayError> {
        let policy = self.state().view.policy().clone();
        let state = State::new(&self.inner.cache, snapshot, policy)?;
        *self.inner.state.writing() = Arc::new(state);
        Ok(())
    }

    /// Records that the MCP server `owner` failed; its tools answer with R-7.8's message.
    pub fn mark_server_failed(&self, owner: &str, reason: &str) {
        self.inner
            .outages
            .writing()
            .insert(owner.to_string(), reason.to_string());
    }

    /// R-7.8's outage answer when `selector` (of a call or describe request) names a tool of an MCP server recorded as failed — by id (`mcp:<server>:<tool>`) or a
    /// lenient `<server>__<tool>` / `<server>.<tool>` form — whether or not the tool is listed.
    fn outage_of_selector(&self, selector: &str) -> Option<CallError> {
        let selector = selector.trim();
        let owner = match selector.strip_prefix("mcp:") {
            Some(rest) => rest.split(':').next()?,
            None => selector
                .split_once("__")
                .map(|(owner, _)| owner)
                .or_else(|| selector.split_once('.').map(|(owner, _)| owner))?,
        };
        let outages = self.inner.outages.reading();
        let reason = outages.get(owner)?;
        Some(
            CallError::new(
                ErrorKind::ServerUnavailable,
                None,
                format!(
                    "The MCP server {owner:?} is unavailable ({reason}), so {selector} cannot be called in this run. Do not retry it."
                ),
            )
            .recover(Recovery::DoNotRetry {
                server: owner.to_string(),
            }),
        )
    }

    /// Clears a server failure recorded by [`Gateway::mark_server_failed`].
    pub fn mark_server_recovered(&self, owner: &str) {
        self.inner.outages.writing().remove(owner);
    }

    /// `tool_search` (R-3, R-5): a single query or a batch, with what each answer covers
    /// (`search::answer`). Never takes a schedule slot.
    pub fn search(&self, args: &Value) -> Result<batch::SearchResponse, CallError> {
        let _span = tracing::debug_span!("tool_search", run_id = %self.inner.run.run_id).entered();
        let started = Instant::now();
        let state = self.state();
        Counters::bump(&self.inner.counters.searches);
        let response =
            batch::run(&state.index, args, self.inner.settings.search_limits).map_err(|e| {
                CallError::new(ErrorKind::BadRequest, None, e.to_string()).recover(
                    Recovery::Usage {
                        operation: Operation::Search,
                    },
                )
            });
        let (queries, results, truncated) = match &response {
            Ok(batch::SearchResponse::Single(single)) => (1, single.hits.len(), single.truncated()),
            Ok(batch::SearchResponse::Batch(b)) => (
                b.results.len(),
                b.results.iter().map(|g| g.candidates.len()).sum(),
                b.truncated,
            ),
            Err(_) => (0, 0, false),
        };
        let ranker = response
            .as_ref()
            .ok()
            .and_then(batch::SearchResponse::ranker);
        Counters::add(&self.inner.counters.queries, queries as u64);
        self.log(Record::Search {
            queries,
            results,
            truncated,
            ranker: ranker.map(|r| r.as_str()),
            ok: response.is_ok(),
            duration_us: started.elapsed().as_micros() as u64,
        });
        tracing::debug!(queries, results, "tool_search");
        response
    }

    /// One query searched as `tool_search` searches it (`limit` per R-3.8, `select:` included);
    /// its [`SingleSearch`](crate::SingleSearch) also carries each hit's ranking detail (`toolsearch search`).
    pub fn explain(
        &self,
        query: &str,
        limit: Option<&Value>,
    ) -> Result<batch::SearchResponse, CallError> {
        let mut args = serde_json::Map::new();
        args.insert("query".into(), json!(query));
        if let Some(limit) = limit {
            args.insert("limit".into(), limit.clone());
        }
        self.search(&Value::Object(args))
    }

    /// `tool_describe` (R-6): `{id}`, `{name}` or a bare string selector.
    pub fn describe(&self, args: &Value) -> Result<Value, CallError> {
        let _span =
            tracing::debug_span!("tool_describe", run_id = %self.inner.run.run_id).entered();
        Counters::bump(&self.inner.counters.describes);
        let selector = match args {
            Value::String(s) => Some(s.as_str()),
            Value::Object(map) => ["id", "toolId", "tool_id", "tool", "name"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str)),
            _ => None,
        };
        let state = self.state();
        let result = match selector {
            None => Err(CallError::new(
                ErrorKind::BadRequest,
                None,
                "describing a tool takes its id (a string)",
            )
            .recover(Recovery::Usage {
                operation: Operation::Describe,
            })),
            Some(selector) => match lookup::describe(&state.index, selector) {
                Ok(described) => Ok(described.into_json()),
                Err(error) => {
                    // A direct-only tool is described too: the model may ask about it.
                    match state.view.get_direct(selector.trim()) {
                        Some(direct) => Ok(json!({
                            "id": direct.id,
                            "name": direct.name,
                            "source": direct.source,
                            "owner": direct.owner,
                            "description": direct.description,
                            "direct": true,
                            "input_schema": direct.input_schema,
                        })),
                        None => Err(self
                            .outage_of_selector(selector)
                            .unwrap_or_else(|| request::lookup_error(error))),
                    }
                }
            },
        };
        self.log(Record::Describe {
            tool_id: result
                .as_ref()
                .ok()
                .and_then(|v| v.get("id"))
                .and_then(Value::as_str),
            ok: result.is_ok(),
        });
        result
    }

    /// `tool_call` (R-7): runs the request through every stage of the call path.
    pub async fn call(&self, request: &Value) -> CallOutcome {
        self.run_call(Call::Shaped(request)).await
    }

    /// Calls `id` with `args`: the same path and answer as `call(&{"id": id, "args": args})`.
    pub async fn call_tool(&self, id: &str, args: Value) -> CallOutcome {
        self.run_call(Call::Id { id, args: &args }).await
    }

    async fn run_call(&self, request: Call<'_>) -> CallOutcome {
        use tracing::Instrument;
        let started = Instant::now();
        let state = self.state();
        Counters::bump(&self.inner.counters.calls);
        // A span with ids and durations only: arguments and results never enter telemetry.
        let span = tracing::debug_span!(
            "tool_call",
            run_id = %self.inner.run.run_id,
            tool_id = tracing::field::Empty,
            status = tracing::field::Empty,
            duration_us = tracing::field::Empty,
        );
        let (outcome, tool) = match self.stages(&state, request).instrument(span.clone()).await {
            Ok((envelope, tool)) => (CallOutcome::Done(envelope), Some(tool)),
            Err((outcome, tool)) => (outcome, tool),
        };
        if let Some(tool) = &tool {
            span.record("tool_id", tool.id.as_str());
        }
        span.record(
            "status",
            match &outcome {
                CallOutcome::Done(_) => "ok",
                CallOutcome::ClientCallRequired(_) => "client_call_required",
                CallOutcome::Failed(_) => "error",
            },
        );
        span.record("duration_us", started.elapsed().as_micros() as u64);
        span.in_scope(|| self.log_call(&outcome, tool.as_ref(), started));
        outcome
    }

    async fn stages(
        &self,
        state: &Arc<State>,
        request: Call<'_>,
    ) -> Result<(Envelope, ToolRef), (CallOutcome, Option<ToolRef>)> {
        // resolve (a tool of an MCP server that is down answers with R-7.8's outage even when
        // the server never listed it: the model must not loop searching for it)
        let parsed = request::resolve(&state.index, request).map_err(|e| {
            let e = match (e.kind, request.selector()) {
                (ErrorKind::UnknownTool, Some(selector)) => {
                    self.outage_of_selector(selector).unwrap_or(e)
                }
                _ => e,
            };
            (CallOutcome::Failed(e), None)
        })?;
        let position = match parsed.target {
            Target::Catalog(position) => position,
            Target::Direct(id) => {
                let name = state
                    .index
                    .view()
                    .get_direct(&id)
                    .map(|d| d.name.clone())
                    .unwrap_or_else(|| id.clone());
                return Err((
                    CallOutcome::Failed(
                        CallError::new(
                            ErrorKind::DirectOnly,
                            Some(&id),
                            format!(
                                "{id} is a direct tool, not a catalog tool: it is not run through the catalog."
                            ),
                        )
                        .recover(Recovery::CallDirectly { id: id.clone(), name }),
                    ),
                    None,
                ));
            }
        };
        let Some(tool) = state.view.at(position) else {
            return Err((
                CallOutcome::Failed(
                    CallError::new(
                        ErrorKind::UnknownTool,
                        None,
                        "the tool is no longer in the catalog",
                    )
                    .recover(Recovery::Search {
                        suggestions: Vec::new(),
                    }),
                ),
                None,
            ));
        };
        let reference = tool_ref(tool);
        let wrap = |outcome: CallOutcome| (outcome, Some(reference.clone()));
        let args = parsed.args;

        self.policy_stage(state, tool).map_err(wrap)?;
        self.approval_stage(tool, &args).await.map_err(wrap)?;
        let args = self.hook_stage(tool, args).await.map_err(wrap)?;

        if tool.source == Source::Client || matches!(tool.executor, Executor::Client) {
            return Err(wrap(self.client_stage(tool, args)));
        }

        let output_validator = self
            .validate_stage(state, position, tool, &args)
            .map_err(wrap)?;
        let output = self.execute_stage(tool, args).await.map_err(wrap)?;
        self.check_stage(tool, output_validator.as_deref(), &output)
            .map_err(wrap)?;
        Ok((
            Envelope {
                tool: reference.clone(),
                result: output,
            },
            reference,
        ))
    }

    /// policy: allowed (again — fail closed), implemented, server up.
    fn policy_stage(&self, state: &State, tool: &Descriptor) -> Stage<()> {
        if !state.view.policy().allows(tool) {
            // Unreachable through resolution (the index holds allowed tools only); kept so a
            // future change cannot turn a denied tool into a callable one.
            return Err(CallOutcome::Failed(request::lookup_error(
                lookup::LookupError::Unknown {
                    selector: tool.id.clone(),
                    suggestions: Vec::new(),
                },
            )));
        }
        if tool.source == Source::Mcp {
            let outages = self.inner.outages.reading();
            if let Some(reason) = outages.get(&tool.owner) {
                return Err(CallOutcome::Failed(server_down(tool, reason)));
            }
        }
        if matches!(tool.executor, Executor::Unavailable) && tool.source != Source::Client {
            return fail(
                ErrorKind::Unavailable,
                Some(tool),
                format!(
                    "{} has no implementation in this gateway (it was loaded from a catalog file); it can be searched and described but not called",
                    tool.id
                ),
            );
        }
        Ok(())
    }

    /// approval: tools that require it run only when a handler approves (none: denied).
    async fn approval_stage(&self, tool: &Descriptor, args: &Value) -> Stage<()> {
        if !tool.requires_approval {
            return Ok(());
        }
        let decision = match &self.inner.approvals {
            Some(handler) => handler.approve(tool, args).await,
            None => Approval::Denied("no approval handler is configured for this run".into()),
        };
        match decision {
            Approval::Approved => Ok(()),
            Approval::Denied(reason) => fail(
                ErrorKind::ApprovalDenied,
                Some(tool),
                format!(
                    "{} requires approval and was not approved: {reason}. Do not retry; ask the user to approve it.",
                    tool.id
                ),
            ),
        }
    }

    /// hooks: each `before_tool_call` hook may rewrite the arguments or block.
    async fn hook_stage(&self, tool: &Descriptor, mut args: Value) -> Stage<Value> {
        for hook in &self.inner.hooks {
            match hook.before_call(tool, &args).await {
                HookDecision::Continue => {}
                HookDecision::Rewrite(new_args) => args = new_args,
                HookDecision::Block(reason) => {
                    return fail(
                        ErrorKind::BlockedByHook,
                        Some(tool),
                        format!("{} was blocked by policy: {reason}", tool.id),
                    );
                }
            }
        }
        Ok(args)
    }

    /// A client tool: hand it back to the caller (never executed here).
    fn client_stage(&self, tool: &Descriptor, args: Value) -> CallOutcome {
        let call_id = format!("client-{:x}", fresh_id());
        let mut pending = lock(&self.inner.pending);
        if pending.len() >= MAX_PENDING_CLIENT_CALLS {
            pending.pop_front();
        }
        pending.push_back(Pending {
            call_id: call_id.clone(),
            tool: tool_ref(tool),
            started: Instant::now(),
        });
        Counters::bump(&self.inner.counters.client_calls);
        CallOutcome::ClientCallRequired(ClientCall {
            call_id,
            tool: tool_ref(tool),
            args,
        })
    }

    /// validate: trusted input schema (after hooks); output schema compiled before execution.
    fn validate_stage(
        &self,
        state: &State,
        position: u32,
        tool: &Descriptor,
        args: &Value,
    ) -> Stage<Option<Arc<jsonschema::Validator>>> {
        if !tool.is_trusted() {
            return Ok(None);
        }
        if !args.is_object() {
            let signature = input_signature(&tool.input_schema).text;
            let message = format!(
                "arguments for {} must be an object, got {}; expected input: {signature}",
                tool.id,
                crate::catalog::json_kind(args)
            );
            return Err(CallOutcome::Failed(invalid_arguments(
                tool, message, signature,
            )));
        }
        let validator = match state
            .validators
            .input(position as usize, &tool.input_schema)
        {
            Ok(validator) => validator,
            Err(problem) => {
                return fail(
                    ErrorKind::BrokenSchema,
                    Some(tool),
                    format!(
                        "{} cannot be called: {problem}. This is a defect in the tool, not in your arguments; use another tool.",
                        tool.id
                    ),
                );
            }
        };
        let problems = validate::problems(&validator, &tool.input_schema, args);
        if !problems.is_empty() {
            let signature = input_signature(&tool.input_schema).text;
            let message = validate::render(&tool.id, &problems, &signature);
            return Err(CallOutcome::Failed(invalid_arguments(
                tool, message, signature,
            )));
        }
        let Some(schema) = &tool.output_schema else {
            return Ok(None);
        };
        match state.validators.output(position as usize, schema) {
            Ok(validator) => Ok(Some(validator)),
            Err(problem) => fail(
                ErrorKind::BrokenSchema,
                Some(tool),
                format!(
                    "{} cannot be called: {problem}. Nothing was run; use another tool.",
                    tool.id
                ),
            ),
        }
    }

    /// execute: in a schedule slot, under the tool's timeout; the future is dropped on expiry.
    async fn execute_stage(&self, tool: &Descriptor, args: Value) -> Stage<ToolOutput> {
        let Executor::Tool(body) = &tool.executor else {
            return fail(
                ErrorKind::Unavailable,
                Some(tool),
                format!("{} has no implementation in this gateway", tool.id),
            );
        };
        let timeout = tool.timeout.unwrap_or(self.inner.settings.default_timeout);
        let context = CallContext {
            tool_id: tool.id.clone(),
            run_id: self.inner.run.run_id.clone(),
            nested: Some(Arc::new(Nested {
                gateway: self.clone(),
            })),
        };
        let run = tokio::time::timeout(timeout, CatchUnwind(body.call(&context, args)));
        match self
            .inner
            .schedule
            .run(&tool.id, tool.execution_mode, run)
            .await
        {
            Err(reentrant) => fail(ErrorKind::Reentrancy, Some(tool), reentrant.to_string()),
            Ok(Err(_elapsed)) => fail(
                ErrorKind::Timeout,
                Some(tool),
                format!(
                    "{} timed out after {} ms and was cancelled",
                    tool.id,
                    timeout.as_millis()
                ),
            ),
            Ok(Ok(Err(Panicked))) => fail(
                ErrorKind::Internal,
                Some(tool),
                format!(
                    "{} failed inside the gateway (its implementation panicked); this is a defect, not your arguments. Use another tool.",
                    tool.id
                ),
            ),
            Ok(Ok(Ok(Err(error)))) => Err(CallOutcome::Failed(self.tool_failure(tool, error))),
            Ok(Ok(Ok(Ok(output)))) => Ok(output),
        }
    }

    /// check: the result's details against the trusted output schema.
    fn check_stage(
        &self,
        tool: &Descriptor,
        validator: Option<&jsonschema::Validator>,
        output: &ToolOutput,
    ) -> Stage<()> {
        let (Some(validator), Some(schema)) = (validator, &tool.output_schema) else {
            return Ok(());
        };
        let details = output.details.as_ref().unwrap_or(&Value::Null);
        let problems = validate::problems(validator, schema, details);
        if problems.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.path, p.reason))
            .collect();
        fail(
            ErrorKind::InvalidOutput,
            Some(tool),
            format!(
                "{} returned a result that breaks its output schema ({}); the result was discarded",
                tool.id,
                listed.join("; ")
            ),
        )
    }

    /// Completes a client call handed out as [`CallOutcome::ClientCallRequired`].
    pub fn complete_client_call(
        &self,
        call_id: &str,
        result: Result<Value, String>,
    ) -> CallOutcome {
        let pending = {
            let mut pending = lock(&self.inner.pending);
            pending
                .iter()
                .position(|p| p.call_id == call_id)
                .and_then(|i| pending.remove(i))
        };
        let Some(pending) = pending else {
            return CallOutcome::Failed(CallError::new(
                ErrorKind::BadRequest,
                None,
                format!("no pending client call {call_id:?}"),
            ));
        };
        let outcome = match result {
            Ok(details) => CallOutcome::Done(Envelope {
                tool: pending.tool.clone(),
                result: ToolOutput::json(details),
            }),
            Err(message) => CallOutcome::Failed(CallError::new(
                ErrorKind::ToolFailed,
                Some(&pending.tool.id),
                format!("{} failed: {message}", pending.tool.id),
            )),
        };
        self.log_call(&outcome, Some(&pending.tool), pending.started);
        outcome
    }

    /// Writes `record` to the run's session log.
    pub(crate) fn log(&self, record: Record<'_>) {
        self.inner
            .log
            .write(record::fields(&self.inner.run.run_id, &record));
    }

    /// Writes the `run_start` record with how many schemas the model sees up front (R-11.2).
    /// Runs once: later calls change nothing. A gateway built without
    /// [`GatewayBuilder::defer_run_start`] has already written it.
    pub fn start_run(&self, schemas_visible_up_front: usize) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        self.inner
            .schemas_visible_up_front
            .store(schemas_visible_up_front, Ordering::Release);
        self.log_run_start();
    }

    fn schemas_visible(&self) -> usize {
        self.inner.schemas_visible_up_front.load(Ordering::Acquire)
    }

    fn log_run_start(&self) {
        let state = self.state();
        let view = &state.view;
        let mut sources: HashMap<&'static str, usize> = HashMap::new();
        for tool in view.tools() {
            *sources.entry(tool.source.as_str()).or_default() += 1;
        }
        let run = &self.inner.run;
        self.log(Record::RunStart {
            agent: run.agent.as_deref(),
            profile: run.profile.as_deref(),
            sandbox: run.sandbox.as_deref(),
            session: run.session.as_deref(),
            catalog_size: view.len(),
            direct_only: view.direct_only().len(),
            sources,
            schemas_visible_up_front: self.schemas_visible(),
            snapshot: view.snapshot().fingerprint().to_string(),
        });
    }

    fn log_call(&self, outcome: &CallOutcome, tool: Option<&ToolRef>, started: Instant) {
        let elapsed = started.elapsed();
        let (status, kind) = match outcome {
            CallOutcome::Done(_) => ("ok", None),
            CallOutcome::ClientCallRequired(_) => ("client_call_required", None),
            CallOutcome::Failed(error) => {
                Counters::bump(&self.inner.counters.call_errors);
                ("error", Some(error.kind))
            }
        };
        if let (Some(tool), CallOutcome::Done(_)) = (tool, outcome) {
            let mut finals = lock(&self.inner.finals);
            if finals.len() >= MAX_REMEMBERED_CALLS {
                finals.pop_front();
            }
            finals.push_back((tool.id.clone(), tool.source));
        }
        self.log(Record::Call {
            tool_id: tool.map(|t| t.id.as_str()),
            source: tool.map(|t| t.source),
            trusted: tool.map(|t| t.source.is_trusted()),
            status,
            error_kind: kind,
            duration_us: elapsed.as_micros() as u64,
        });
        tracing::debug!(
            tool_id = tool.map(|t| t.id.as_str()).unwrap_or("-"),
            status,
            duration_us = elapsed.as_micros() as u64,
            "tool_call"
        );
    }

    /// Per-run telemetry (R-11.1): catalog size and sources, schemas up front, counters, final
    /// tool ids and sources.
    pub fn telemetry(&self) -> Value {
        let state = self.state();
        let view = &state.view;
        let mut sources: HashMap<&'static str, usize> = HashMap::new();
        for tool in view.tools() {
            *sources.entry(tool.source.as_str()).or_default() += 1;
        }
        let finals: Vec<Value> = lock(&self.inner.finals)
            .iter()
            .map(|(id, source)| json!({"id": id, "source": source}))
            .collect();
        json!({
            "run_id": self.inner.run.run_id,
            "catalog_size": view.len(),
            "sources": sources,
            "schemas_visible_up_front": self.schemas_visible(),
            "counters": self.inner.counters.to_json(),
            "final_calls": finals,
            "log_write_failures": self.inner.log.write_failures(),
        })
    }

    /// The per-run counters.
    pub fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// Writes the run's closing summary record to the session log (once; later calls change
    /// nothing).
    pub fn finish(&self) {
        if self.inner.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        self.log(Record::RunEnd {
            telemetry: self.telemetry(),
        });
    }
}

/// Nested calls from a tool body back into the same run.
struct Nested {
    gateway: Gateway,
}

impl NestedCalls for Nested {
    fn call<'a>(
        &'a self,
        selector: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            match self.gateway.call_tool(selector, args).await.into_result() {
                Ok(envelope) => Ok(envelope.to_json()),
                Err(error) => Err(ToolError::of(error.failure_kind(), error.message)),
            }
        })
    }
}

/// R-7.8's answer for a tool whose MCP server is down.
fn server_down(tool: &Descriptor, reason: &str) -> CallError {
    CallError::new(
        ErrorKind::ServerUnavailable,
        Some(&tool.id),
        format!(
            "The MCP server {:?} is unavailable ({reason}), so {} cannot be called in this run. Do not retry it.",
            tool.owner, tool.id
        ),
    )
    .recover(Recovery::DoNotRetry {
        server: tool.owner.clone(),
    })
}

impl Gateway {
    /// A tool body's error as the model's error, keeping its kind: an upstream failure is not
    /// an ordinary tool failure. It is R-7.8's outage (do not retry) only when the server is
    /// recorded as down; a connection lost during one call (the server is being restarted)
    /// says so without telling the model to give up.
    fn tool_failure(&self, tool: &Descriptor, error: ToolError) -> CallError {
        if error.kind == FailureKind::UpstreamUnavailable {
            let down = self.inner.outages.reading().get(&tool.owner).cloned();
            return match down {
                Some(reason) => server_down(tool, &reason),
                None => CallError::new(
                    ErrorKind::ServerUnavailable,
                    Some(&tool.id),
                    format!("{} failed: {}", tool.id, error.message),
                ),
            };
        }
        tool_failure(tool, error)
    }
}

/// A tool body's error as the model's error, keeping its kind.
fn tool_failure(tool: &Descriptor, error: ToolError) -> CallError {
    let (kind, what) = match error.kind {
        FailureKind::UpstreamUnavailable => return server_down(tool, &error.message),
        FailureKind::BadArguments => {
            let message = format!("{} rejected its arguments: {}", tool.id, error.message);
            return invalid_arguments(tool, message, input_signature(&tool.input_schema).text);
        }
        FailureKind::Timeout => (ErrorKind::Timeout, "timed out"),
        FailureKind::Unknown => (ErrorKind::UnknownTool, "failed"),
        FailureKind::Blocked => (ErrorKind::BlockedByHook, "was blocked"),
        FailureKind::ApprovalDenied => (ErrorKind::ApprovalDenied, "was not approved"),
        FailureKind::Internal => (ErrorKind::Internal, "failed inside the gateway"),
        FailureKind::ToolFailed => (ErrorKind::ToolFailed, "failed"),
    };
    let failure = CallError::new(
        kind,
        Some(&tool.id),
        format!("{} {what}: {}", tool.id, error.message),
    );
    match error.kind {
        FailureKind::ToolFailed => CallError {
            sent: error.sent,
            ..failure
        },
        _ => failure,
    }
}

/// The model's error for arguments that do not fit `tool`: `message`, and the recovery that
/// points at its input `signature`.
fn invalid_arguments(tool: &Descriptor, message: String, signature: String) -> CallError {
    CallError::new(ErrorKind::InvalidArguments, Some(&tool.id), message).recover(
        Recovery::FixArguments {
            id: tool.id.clone(),
            signature,
        },
    )
}

/// A tool body panicked.
struct Panicked;

/// Turns a panic inside a tool body's future into [`Panicked`], so one broken tool ends one
/// call with an internal error instead of taking down the task (and the gateway) with it.
struct CatchUnwind<F>(F);

impl<F: std::future::Future + Unpin> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            std::pin::Pin::new(inner).poll(cx)
        })) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Ok(value)),
            Err(_) => std::task::Poll::Ready(Err(Panicked)),
        }
    }
}
