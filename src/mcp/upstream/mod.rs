//! One upstream MCP server: its connection, its tools, its failures and restarts (SPEC,
//!
//!
//! Owns: starting the server (a child process that gets only the configured environment, in
//! its own process group — under a supervisor process ([`super::supervise`]) that kills every
//! descendant of the server when the server exits or the gateway goes away, `kill -9` included;
//! without one, killed with the group when the gateway drops it — or a streamable-HTTP
//! connection; a stdio child speaks through [`super::transport`]), the MCP handshake (or
//! `server/discover`, per the server's `protocol` setting) and
//! `tools/list` through every page — up to the per-server tool cap, then no further page is
//! asked for — within `startupTimeoutMs`, re-listing on `notifications/tools/list_changed`,
//! draining the child's
//! stderr into a bounded tail, the executor of each listed tool ([`McpTool`]: the raw name goes
//! upstream, `callTimeoutMs` bounds the call and sends `notifications/cancelled`, a dropped call
//! cancels too), and the supervisor loop: a server that fails to start or dies is marked down
//! with the reason and — for a stdio server with `restart` — restarted with bounded exponential
//! backoff (0.5 s doubling to 30 s); recovery clears the outage. An HTTP call that fails on the
//! transport (an expired session answered 404 or 400) reconnects and is retried once.
//! Never does: decide what the model sees, or word an error for it (the gateway and surface do).
//!
//! Layout: this file (the server's state, its supervisor loop and connection), `child.rs` (a
//! stdio server's process and its supervisor), `http.rs` (a streamable-HTTP connection),
//! `listing.rs` (`tools/list` through every page), `stderr.rs` (the bounded stderr tail),
//! `call.rs` (a tool call and its cancellation), `prompts.rs` and `resources.rs` (what it offers
//! besides tools), `completion.rs` (argument completion), `error.rs` ([`UpstreamError`]).

mod call;
mod child;
mod completion;
mod error;
mod http;
pub(crate) mod listing;
mod prompts;
mod resources;
mod stderr;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::ResourceUpdatedNotificationParam;
#[allow(deprecated)] // sampling and roots: see `super::asking`
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorData, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use tokio::sync::{Notify, broadcast, watch};

use super::ProgressSink;
use super::asking::{Answer, Ask, InFlight};
use super::bounded::Violation;
use super::ingest::{Filters, Ingested};
use crate::catalog::Descriptor;
use crate::config::{McpServer, McpTransport};
use crate::sync::lock;
use call::McpTool;
use child::ChildGroup;
pub use error::UpstreamError;
use resources::Offered;
use stderr::exit_reason;
pub use stderr::{STDERR_NOTE, StderrTail, without_stderr};

/// First restart delay; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest restart delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Immediate restarts (no outage, no backoff) after a running server dies, before deaths count
/// as failures with backoff; reset once a server has run for [`STABLE_AFTER`].
pub const FAST_RESTARTS: u32 = 3;
/// How long a server must run for its deaths to be answered by an immediate restart again.
pub const STABLE_AFTER: Duration = Duration::from_secs(10);

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamStatus {
    /// Starting (or restarting): calls wait up to `startupTimeoutMs` for it.
    Starting,
    /// Connected; its tools are listed.
    Ready,
    /// Failed to start or died; calls answer with the outage (the reason).
    Down(String),
    /// Shut down with the gateway.
    Stopped,
}

/// Something a server said changed besides its tools, for `serve` to tell its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// A server's resources or resource templates were listed again.
    ResourcesListed,
    /// A server's prompts were listed again.
    PromptsListed,
    /// `notifications/resources/updated` from `server` for its own `uri`.
    ResourceUpdated {
        /// The server's name.
        server: String,
        /// The URI as the server names it.
        uri: String,
    },
}

/// How many [`Offer`]s wait for a slow reader before the oldest are dropped (it then re-reads
/// the listing).
pub const OFFERS_BUFFER: usize = 256;

/// The client side of one connection: list-changed, resource and progress notifications.
#[derive(Clone)]
struct Events {
    server: String,
    list_changed: Arc<Notify>,
    resources_changed: Arc<Notify>,
    prompts_changed: Arc<Notify>,
    offers: broadcast::Sender<Offer>,
    progress: Arc<Mutex<HashMap<String, ProgressSink>>>,
    /// Its calls in flight, whose callers its requests are relayed to.
    calls: InFlight,
    /// How long a relayed request may wait for its answer (the server's `callTimeoutMs`).
    call_timeout: Duration,
}

impl ClientHandler for Events {
    #[allow(deprecated)] // logging: see `super::asking`
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        match self.calls.sole_caller() {
            Some(caller) => caller.log(&self.server, params).await,
            None => tracing::debug!(
                server = %self.server,
                message = ?crate::config::input::echo(&params.data.to_string()),
                "a log message of an MCP server was not relayed: no single client has calls on it"
            ),
        }
    }

    #[allow(deprecated)] // sampling: see `super::asking`
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match self.relay(Ask::Sampling(params), &context).await? {
            Answer::Sampling(result) => Ok(result),
            _ => Err(mismatched("sampling/createMessage")),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match self.relay(Ask::Elicitation(params), &context).await? {
            Answer::Elicitation(result) => Ok(result),
            _ => Err(mismatched("elicitation/create")),
        }
    }

    #[allow(deprecated)] // roots: see `super::asking`
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        match self.relay(Ask::Roots, &context).await? {
            Answer::Roots(result) => Ok(result),
            _ => Err(mismatched("roots/list")),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.resources_changed.notify_one();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.prompts_changed.notify_one();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.offers.send(Offer::ResourceUpdated {
            server: self.server.clone(),
            uri: params.uri,
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = token_key(&params.progress_token);
        let sink = lock(&self.progress).get(&key).cloned();
        if let Some(sink) = sink {
            sink(params.progress, params.total, params.message);
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            super::asking::declared(),
            Implementation::new("toolsearch", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl Events {
    async fn relay(
        &self,
        ask: Ask,
        context: &RequestContext<RoleClient>,
    ) -> Result<Answer, ErrorData> {
        self.calls
            .relay(&self.server, ask, context, self.call_timeout)
            .await
    }
}

/// The client answered `method` with the result of another request.
fn mismatched(method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the client answered {method} with the result of another request"),
        None,
    )
}

/// How a connection is opened for the server's `protocol` setting.
fn lifecycle(protocol: crate::config::McpProtocol) -> rmcp::ClientLifecycleMode {
    use crate::config::McpProtocol;
    use rmcp::model::ProtocolVersion;
    match protocol {
        McpProtocol::Handshake => rmcp::ClientLifecycleMode::Initialize,
        McpProtocol::Discover => rmcp::ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        McpProtocol::Auto => rmcp::ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
    }
}

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

/// A live connection: the service (whose end means the connection ended) and the child.
struct Connection {
    service: RunningService<RoleClient, Events>,
    child: Option<ChildGroup>,
}

/// How serving a connection ended.
enum Ended {
    /// The gateway is stopping.
    Stopped,
    /// A call found the transport broken: reconnect at once (an HTTP session expired).
    Reconnect,
    /// The connection died, for this reason.
    Died(String),
}

/// One configured MCP server.
pub struct Upstream {
    config: McpServer,
    filters: Filters,
    status: watch::Sender<UpstreamStatus>,
    /// The live connection and its generation (one per connection, so a caller whose request
    /// could not be sent can wait for the next one).
    peer: Mutex<Option<(u64, Peer<RoleClient>)>>,
    generation: std::sync::atomic::AtomicU64,
    tools: Mutex<Vec<Descriptor>>,
    /// Its resources and templates, when it offers them.
    offered: Mutex<Offered>,
    resources_changed: Arc<Notify>,
    prompts_changed: Arc<Notify>,
    /// Where resource notifications go (shared by every server of the run).
    offers: broadcast::Sender<Offer>,
    issues: Mutex<Vec<String>>,
    stderr: Arc<Mutex<StderrTail>>,
    list_changed: Arc<Notify>,
    progress: Arc<Mutex<HashMap<String, ProgressSink>>>,
    /// Its calls in flight (for relaying its requests to their callers).
    calls: InFlight,
    /// Told whenever the tools or the status changed (the manager republishes the catalog).
    changed: Arc<Notify>,
    /// Asked by a call whose HTTP transport broke.
    reconnect: Notify,
    shutdown: watch::Sender<bool>,
    /// Why the current connection's stream was cut at a message bound, once it was
    /// (`super::transport`); reset on every connection.
    violation: Violation,
    /// The binary whose supervisor role runs between the gateway and a stdio server (`None`:
    /// the server is started directly).
    supervisor: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.config.name)
            .field("status", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(crate) fn new(
        config: McpServer,
        filters: Filters,
        changed: Arc<Notify>,
        offers: broadcast::Sender<Offer>,
        supervisor: Option<std::path::PathBuf>,
    ) -> Arc<Upstream> {
        let (status, _) = watch::channel(UpstreamStatus::Starting);
        let (shutdown, _) = watch::channel(false);
        Arc::new(Upstream {
            config,
            filters,
            status,
            peer: Mutex::new(None),
            generation: std::sync::atomic::AtomicU64::new(0),
            tools: Mutex::new(Vec::new()),
            offered: Mutex::new(Offered::default()),
            resources_changed: Arc::new(Notify::new()),
            prompts_changed: Arc::new(Notify::new()),
            offers,
            issues: Mutex::new(Vec::new()),
            stderr: Arc::new(Mutex::new(StderrTail::default())),
            list_changed: Arc::new(Notify::new()),
            progress: Arc::new(Mutex::new(HashMap::new())),
            calls: InFlight::default(),
            changed,
            reconnect: Notify::new(),
            violation: Violation::default(),
            shutdown,
            supervisor,
        })
    }

    /// The server's name (the owner of its tools).
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Where it is now.
    pub fn status(&self) -> UpstreamStatus {
        self.status.borrow().clone()
    }

    /// A receiver of its status.
    pub fn watch_status(&self) -> watch::Receiver<UpstreamStatus> {
        self.status.subscribe()
    }

    /// Its current tools (executors attached); empty until it first listed them.
    pub fn tools(&self) -> Vec<Descriptor> {
        lock(&self.tools).clone()
    }

    /// What the last listing skipped or repaired.
    pub fn issues(&self) -> Vec<String> {
        lock(&self.issues).clone()
    }

    /// The last lines it wrote on stderr (stdio servers), control characters removed.
    pub fn stderr_tail(&self, lines: usize) -> Vec<String> {
        lock(&self.stderr).last(lines)
    }

    fn set_status(&self, status: UpstreamStatus) {
        self.status.send_replace(status);
        self.changed.notify_one();
    }

    /// Stops the server: the supervisor loop ends and the child's process group is killed.
    pub fn stop(&self) {
        self.shutdown.send_replace(true);
    }

    /// The supervisor loop: start, list, serve, and restart after a failure (see the module
    /// doc). Returns when the gateway stops the server.
    pub(crate) async fn run(self: Arc<Upstream>) {
        let mut shutdown = self.shutdown.subscribe();
        let mut backoff = FIRST_BACKOFF;
        // Deaths answered by an immediate restart since the server last ran for a while.
        let mut fast_restarts = 0u32;
        loop {
            if *shutdown.borrow() {
                break;
            }
            self.set_status(UpstreamStatus::Starting);
            let started = tokio::select! {
                started = tokio::time::timeout(self.config.startup_timeout, self.connect()) => started,
                _ = shutdown.changed() => break,
            };
            let reason = match started {
                Err(_elapsed) => {
                    UpstreamError::StartTimeout(self.config.startup_timeout.as_millis()).to_string()
                }
                Ok(Err(reason)) => reason.to_string(),
                Ok(Ok(connection)) => {
                    backoff = FIRST_BACKOFF;
                    self.set_status(UpstreamStatus::Ready);
                    let up_since = std::time::Instant::now();
                    let ended = self.serve(connection, &mut shutdown).await;
                    *lock(&self.peer) = None;
                    if up_since.elapsed() >= STABLE_AFTER {
                        fast_restarts = 0;
                    }
                    match ended {
                        Ended::Stopped => break,
                        Ended::Reconnect => continue,
                        Ended::Died(reason)
                            if self.config.restart && fast_restarts < FAST_RESTARTS =>
                        {
                            // Restart at once, without marking an outage: calls wait for it.
                            fast_restarts += 1;
                            tracing::warn!(server = %self.config.name, reason = %self.with_stderr(reason), "MCP server died; restarting");
                            continue;
                        }
                        Ended::Died(reason) => reason,
                    }
                }
            };
            let reason = self.with_stderr(reason);
            // Reported once by whoever started the servers; this is the log line for operators.
            tracing::info!(server = %self.config.name, %reason, "MCP server unavailable");
            self.set_status(UpstreamStatus::Down(reason));
            let restartable =
                self.config.restart || matches!(self.config.transport, McpTransport::Http { .. });
            if !restartable {
                let _ = shutdown.wait_for(|stop| *stop).await;
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        *lock(&self.peer) = None;
        self.set_status(UpstreamStatus::Stopped);
    }

    /// Appends the last stderr line, when there is one, to a failure reason (after
    /// [`STDERR_NOTE`]; [`without_stderr`] takes it off again).
    fn with_stderr(&self, reason: String) -> String {
        match self.stderr_tail(1).pop() {
            Some(line) if !line.trim().is_empty() => {
                let line: String = line.chars().take(200).collect();
                format!("{reason}{STDERR_NOTE}{line}")
            }
            _ => reason,
        }
    }

    /// Serves a live connection until it ends.
    async fn serve(
        self: &Arc<Self>,
        connection: Connection,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Ended {
        let Connection { service, mut child } = connection;
        let peer = service.peer().clone();
        let quit = service.waiting();
        tokio::pin!(quit);
        loop {
            tokio::select! {
                _ = &mut quit => {
                    return Ended::Died(exit_reason(child.as_mut()).await);
                }
                _ = self.reconnect.notified() => {
                    return Ended::Reconnect;
                }
                _ = self.list_changed.notified() => {
                    // Coalesce a burst of notifications into one listing.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    match tokio::time::timeout(self.config.startup_timeout, self.list(&peer)).await {
                        Ok(Ok(())) => self.changed.notify_one(),
                        Ok(Err(reason)) => tracing::warn!(server = %self.config.name, %reason, "re-listing failed"),
                        Err(_) => tracing::warn!(server = %self.config.name, "re-listing timed out"),
                    }
                }
                _ = self.resources_changed.notified() => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if tokio::time::timeout(self.config.startup_timeout, self.list_resources(&peer)).await.is_err() {
                        tracing::warn!(server = %self.config.name, "re-listing resources timed out");
                    }
                    let _ = self.offers.send(Offer::ResourcesListed);
                }
                _ = self.prompts_changed.notified() => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if tokio::time::timeout(self.config.startup_timeout, self.list_prompts(&peer)).await.is_err() {
                        tracing::warn!(server = %self.config.name, "re-listing prompts timed out");
                    }
                    let _ = self.offers.send(Offer::PromptsListed);
                }
                _ = shutdown.changed() => {
                    if *shutdown.borrow() {
                        return Ended::Stopped;
                    }
                }
            }
        }
    }

    /// Starts the transport, shakes hands and lists the tools.
    async fn connect(self: &Arc<Self>) -> Result<Connection, UpstreamError> {
        let events = Events {
            server: self.config.name.clone(),
            list_changed: self.list_changed.clone(),
            resources_changed: self.resources_changed.clone(),
            prompts_changed: self.prompts_changed.clone(),
            offers: self.offers.clone(),
            progress: self.progress.clone(),
            calls: self.calls.clone(),
            call_timeout: self.config.call_timeout,
        };
        let (service, child) = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (service, group) = self
                    .start_stdio(events, command, args, env, cwd.as_deref())
                    .await?;
                (service, Some(group))
            }
            McpTransport::Http { url, headers } => {
                (self.connect_http(events, url, headers).await?, None)
            }
        };
        let peer = service.peer().clone();
        if let Err(e) = self.list(&peer).await {
            return Err(self.cut().map_or(e, UpstreamError::Cut));
        }
        self.note_completions(&peer);
        self.list_resources(&peer).await;
        self.list_prompts(&peer).await;
        let _ = self.offers.send(Offer::ResourcesListed);
        let _ = self.offers.send(Offer::PromptsListed);
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        *lock(&self.peer) = Some((generation, peer));
        Ok(Connection { service, child })
    }

    /// Attaches an executor to each listed tool and makes the listing current.
    fn publish(self: &Arc<Self>, ingested: Ingested) {
        for issue in &ingested.issues {
            tracing::warn!(server = %self.config.name, "{issue}");
        }
        let tools: Vec<Descriptor> = ingested
            .tools
            .into_iter()
            .map(|listed| {
                listed.descriptor.tool(Arc::new(McpTool {
                    upstream: Arc::downgrade(self),
                    raw_name: listed.raw_name,
                }))
            })
            .collect();
        *lock(&self.tools) = tools;
        *lock(&self.issues) = ingested.issues;
    }

    /// Why the current connection's stream was cut at a message bound, if it was.
    fn cut(&self) -> Option<String> {
        self.violation.lock().ok().and_then(|v| v.clone())
    }
}
