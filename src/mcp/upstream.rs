//! One upstream MCP server: its connection, its tools, its failures and restarts (SPEC,
//!
//!
//! Owns: starting the server (a child process that gets only the configured environment, in
//! its own process group — under a supervisor process ([`super::supervise`]) that kills every
//! descendant of the server when the server exits or the gateway goes away, `kill -9` included;
//! without one, killed with the group when the gateway drops it — or a streamable-HTTP
//! connection; a stdio child speaks through [`super::transport`]), the MCP handshake and
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

use std::collections::{HashMap, VecDeque};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    CustomResult, Implementation, PaginatedRequestParams, ProgressNotificationParam, Request,
    RequestOptionalParam, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, watch};

use super::bounded::Violation;
use super::ingest::{self, Filters, Ingest, Ingested};
use super::transport::{StdioClient, TRANSPORT_ERROR};
use super::{PROGRESS, ProgressSink};
use crate::catalog::{
    BoxFuture, CallContext, Descriptor, FailureKind, Tool, ToolError, ToolOutput,
};
use crate::config::{McpServer, McpTransport};

/// Most `tools/list` pages followed per listing.
pub const MAX_PAGES: usize = 100;
/// Longest stderr line kept (longer ones are cut).
pub const STDERR_LINE_BYTES: usize = 2 * 1024;
/// Bytes of stderr kept per server (the most recent lines).
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// First restart delay; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest restart delay.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Immediate restarts (no outage, no backoff) after a running server dies, before deaths count
/// as failures with backoff; reset once a server has run for [`STABLE_AFTER`].
pub const FAST_RESTARTS: u32 = 3;
/// How long a server must run for its deaths to be answered by an immediate restart again.
pub const STABLE_AFTER: Duration = Duration::from_secs(10);

/// What separates an outage reason from the server's last stderr line in [`Status::Down`].
pub const STDERR_NOTE: &str = "; its last stderr line: ";

/// An outage reason without the server's own stderr text (which may carry anything the server
/// printed, secrets included): for reports to parties that are not the operator, e.g. `/health`.
pub fn without_stderr(reason: &str) -> &str {
    reason.find(STDERR_NOTE).map_or(reason, |at| &reason[..at])
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Starting (or restarting): calls wait up to `startupTimeoutMs` for it.
    Starting,
    /// Connected; its tools are listed.
    Ready,
    /// Failed to start or died; calls answer with the outage (the reason).
    Down(String),
    /// Shut down with the gateway.
    Stopped,
}

/// The recent stderr of a server, bounded per line and in total, made terminal-safe
/// ([`crate::telemetry::terminal_safe`]).
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    fn push(&mut self, line: &str) {
        // The one terminal-safety filter (controls, bidi, zero-width), and no line breaks.
        let mut clean = crate::telemetry::terminal_safe(line).replace('\n', " ");
        if clean.len() > STDERR_LINE_BYTES {
            let mut end = STDERR_LINE_BYTES;
            while !clean.is_char_boundary(end) {
                end -= 1;
            }
            clean.truncate(end);
            clean.push('…');
        }
        self.bytes += clean.len();
        self.lines.push_back(clean);
        while self.bytes > STDERR_TAIL_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    /// The last `n` lines, oldest first.
    pub fn last(&self, n: usize) -> Vec<String> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines.iter().skip(skip).cloned().collect()
    }
}

/// The client side of one connection: list-changed and progress notifications.
#[derive(Clone)]
struct Events {
    list_changed: Arc<Notify>,
    progress: Arc<Mutex<HashMap<String, ProgressSink>>>,
}

impl ClientHandler for Events {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
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
            ClientCapabilities::default(),
            Implementation::new("toolsearch", env!("CARGO_PKG_VERSION")),
        )
    }
}

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A child process in its own process group; dropping it kills the whole group — or, for a
/// supervised server, makes its supervisor kill every descendant ([`super::supervise`]).
struct ChildGroup {
    child: tokio::process::Child,
    pgid: Option<i32>,
    /// The write end of a supervisor's watch pipe: closing it (or the gateway's death) makes
    /// the supervisor kill the server and all its descendants, then exit.
    watch: Option<std::os::fd::OwnedFd>,
    /// The task draining its stderr into the tail ([`drain_stderr`]).
    stderr: Option<tokio::task::JoinHandle<()>>,
}

impl ChildGroup {
    fn kill(&mut self) {
        if let Some(watch) = self.watch.take() {
            // Never SIGKILL a supervisor: it could not kill the server's descendants then.
            drop(watch);
            if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
                // SAFETY: SIGTERM to our own child, not yet reaped (so the pid is still ours).
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            return;
        }
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg on the group this child leads; harmless if it is already gone.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.kill();
    }
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
    status: watch::Sender<Status>,
    /// The live connection and its generation (one per connection, so a caller whose request
    /// could not be sent can wait for the next one).
    peer: Mutex<Option<(u64, Peer<RoleClient>)>>,
    generation: std::sync::atomic::AtomicU64,
    tools: Mutex<Vec<Descriptor>>,
    issues: Mutex<Vec<String>>,
    stderr: Arc<Mutex<StderrTail>>,
    list_changed: Arc<Notify>,
    progress: Arc<Mutex<HashMap<String, ProgressSink>>>,
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
        supervisor: Option<std::path::PathBuf>,
    ) -> Arc<Upstream> {
        let (status, _) = watch::channel(Status::Starting);
        let (shutdown, _) = watch::channel(false);
        Arc::new(Upstream {
            config,
            filters,
            status,
            peer: Mutex::new(None),
            generation: std::sync::atomic::AtomicU64::new(0),
            tools: Mutex::new(Vec::new()),
            issues: Mutex::new(Vec::new()),
            stderr: Arc::new(Mutex::new(StderrTail::default())),
            list_changed: Arc::new(Notify::new()),
            progress: Arc::new(Mutex::new(HashMap::new())),
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
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// A receiver of its status.
    pub fn watch_status(&self) -> watch::Receiver<Status> {
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

    fn set_status(&self, status: Status) {
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
            self.set_status(Status::Starting);
            let started = tokio::select! {
                started = tokio::time::timeout(self.config.startup_timeout, self.connect()) => started,
                _ = shutdown.changed() => break,
            };
            let reason = match started {
                Err(_elapsed) => format!(
                    "it did not start within {} ms",
                    self.config.startup_timeout.as_millis()
                ),
                Ok(Err(reason)) => reason,
                Ok(Ok(connection)) => {
                    backoff = FIRST_BACKOFF;
                    self.set_status(Status::Ready);
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
            self.set_status(Status::Down(reason));
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
        self.set_status(Status::Stopped);
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
                _ = shutdown.changed() => {
                    if *shutdown.borrow() {
                        return Ended::Stopped;
                    }
                }
            }
        }
    }

    /// Starts the transport, shakes hands and lists the tools.
    async fn connect(self: &Arc<Self>) -> Result<Connection, String> {
        let events = Events {
            list_changed: self.list_changed.clone(),
            progress: self.progress.clone(),
        };
        let (service, child) = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                // Supervised: `toolsearch ROLE <watch fd> <program> <argv[0]> args…`, the watch
                // pipe's read end inherited by the supervisor only.
                let watch = match &self.supervisor {
                    Some(_) => Some(watch_pipe()?),
                    None => None,
                };
                let mut cmd = match (&self.supervisor, &watch) {
                    (Some(binary), Some((read, _))) => {
                        let mut cmd = tokio::process::Command::new(binary);
                        cmd.arg(super::supervise::ROLE)
                            .arg(read.as_raw_fd().to_string())
                            .arg(resolve_program(command, env))
                            .arg(command)
                            .args(args);
                        cmd
                    }
                    _ => {
                        let mut cmd = tokio::process::Command::new(command);
                        cmd.args(args);
                        cmd
                    }
                };
                cmd.env_clear()
                    .envs(env)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .process_group(0)
                    .kill_on_drop(watch.is_none());
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let inherited = watch.as_ref().map(|(read, _)| read.as_raw_fd());
                // SAFETY: only async-signal-safe calls between fork and exec.
                unsafe {
                    cmd.pre_exec(move || {
                        match inherited {
                            // The supervisor keeps the watch pipe across exec; it must not get
                            // PDEATHSIG (it would die before it killed the server's descendants).
                            Some(fd) => {
                                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                                    return Err(std::io::Error::last_os_error());
                                }
                            }
                            // The child dies with the gateway even when the gateway is
                            // SIGKILLed.
                            None => {
                                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                            }
                        }
                        Ok(())
                    });
                }
                let mut child = cmd
                    .spawn()
                    .map_err(|e| format!("{command:?} could not be started: {e}"))?;
                let watch = watch.map(|(_read, write)| write);
                let pgid = child.id().and_then(|id| i32::try_from(id).ok());
                let stdout = child.stdout.take();
                let stdin = child.stdin.take();
                let stderr = child.stderr.take().map(|stderr| {
                    tokio::spawn(drain_stderr(
                        stderr,
                        self.stderr.clone(),
                        self.config.name.clone(),
                    ))
                });
                let mut group = ChildGroup {
                    child,
                    pgid,
                    watch,
                    stderr,
                };
                let (Some(stdout), Some(stdin)) = (stdout, stdin) else {
                    return Err("its stdio pipes could not be opened".into());
                };
                if let Ok(mut slot) = self.violation.lock() {
                    *slot = None;
                }
                let transport = StdioClient::new(
                    stdout,
                    stdin,
                    format!("the MCP server {:?}", self.config.name),
                    self.violation.clone(),
                );
                let service = match events.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        if let Some(cut) = self.cut() {
                            return Err(cut);
                        }
                        let exit = exit_reason(Some(&mut group)).await;
                        return Err(format!(
                            "the MCP handshake failed ({}); {exit}",
                            crate::config::input::echo(&e.to_string())
                        ));
                    }
                };
                (service, Some(group))
            }
            McpTransport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header {name:?} is not valid: {e}"))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| format!("the value of header {name} is not valid: {e}"))?;
                    custom.insert(name, value);
                }
                super::install_tls_provider();
                let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                let service = events
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        if let Err(e) = self.list(&peer).await {
            return Err(self.cut().unwrap_or(e));
        }
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        *lock(&self.peer) = Some((generation, peer));
        Ok(Connection { service, child })
    }

    /// `tools/list` through every page, up to the per-server tool cap (the pages after it are
    /// not asked for); publishes the new tools. A stdio page arrives as its message's text and
    /// is read entry by entry (`transport.rs`, `ingest::read_page`); an HTTP page as rmcp
    /// decoded it (a typed list, or the plain JSON value when one of its tools did not decode).
    async fn list(self: &Arc<Self>, peer: &Peer<RoleClient>) -> Result<(), String> {
        let mut ingest = Ingest::new(&self.config, &self.filters);
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let request = ClientRequest::ListToolsRequest(RequestOptionalParam::with_param(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ));
            let answer = peer
                .send_request(request)
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            let next = match answer {
                ServerResult::CustomResult(CustomResult(Value::String(message))) => {
                    ingest::read_page(&message, &mut ingest)?
                }
                ServerResult::ListToolsResult(page) => {
                    for entry in page_entries(page.tools) {
                        ingest.value(&entry);
                    }
                    page.next_cursor
                }
                ServerResult::CustomResult(CustomResult(Value::Object(mut page))) => {
                    let Some(Value::Array(tools)) = page.remove("tools") else {
                        return Err("the tools/list answer has no tools array".into());
                    };
                    for entry in &tools {
                        ingest.value(entry);
                    }
                    page.remove("nextCursor")
                        .and_then(|c| c.as_str().map(str::to_string))
                }
                _ => return Err("the tools/list answer is not a list of tools".into()),
            };
            match next {
                Some(next) if !next.is_empty() && Some(&next) != cursor.as_ref() => {
                    if ingest.full() {
                        // The cap is reached: the pages after this one are not asked for.
                        ingest.pages_left_unread();
                        self.publish(ingest.finish());
                        return Ok(());
                    }
                    cursor = Some(next);
                }
                _ => {
                    self.publish(ingest.finish());
                    return Ok(());
                }
            }
        }
        Err(format!("tools/list had more than {MAX_PAGES} pages"))
    }

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

    /// The live connection's peer, waiting (up to `startupTimeoutMs`) while the server starts.
    /// The live connection once the server is ready; `not` skips a connection already found
    /// broken (waiting for the restart instead).
    async fn ready_peer(&self, not: Option<u64>) -> Result<(u64, Peer<RoleClient>), ToolError> {
        let mut status = self.status.subscribe();
        let waited = tokio::time::timeout(self.config.startup_timeout, async {
            loop {
                let current = status.borrow_and_update().clone();
                match current {
                    Status::Ready => {
                        if let Some((generation, peer)) = lock(&self.peer).clone()
                            && Some(generation) != not
                        {
                            return Ok((generation, peer));
                        }
                    }
                    Status::Down(reason) => return Err(reason),
                    Status::Stopped => return Err("the gateway stopped it".to_string()),
                    Status::Starting => {}
                }
                if status.changed().await.is_err() {
                    return Err("the gateway stopped it".to_string());
                }
            }
        })
        .await;
        match waited {
            Ok(Ok(peer)) => Ok(peer),
            Ok(Err(reason)) => Err(ToolError::of(
                FailureKind::UpstreamUnavailable,
                format!("the MCP server {:?} is down: {reason}", self.config.name),
            )),
            Err(_) => Err(ToolError::of(
                FailureKind::UpstreamUnavailable,
                format!(
                    "the MCP server {:?} did not come up within {} ms",
                    self.config.name,
                    self.config.startup_timeout.as_millis()
                ),
            )),
        }
    }

    /// Calls `raw_name` upstream (see [`McpTool`]).
    async fn call(&self, raw_name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::of(
                    FailureKind::BadArguments,
                    format!(
                        "MCP tool arguments must be an object, got {}",
                        crate::catalog::json_kind(&other)
                    ),
                ));
            }
        };
        let http = matches!(self.config.transport, McpTransport::Http { .. });
        let mut retried = false;
        let mut broken = None;
        loop {
            let (generation, peer) = self.ready_peer(broken).await?;
            match self.call_once(&peer, raw_name, arguments.clone()).await {
                Err(Broken::NotSent(_)) if !retried => {
                    // The connection died before the request left (e.g. just after a crash the
                    // supervisor has not seen yet): nothing ran upstream, so wait for the
                    // restart and send it once more.
                    retried = true;
                    broken = Some(generation);
                    if http {
                        self.reconnect.notify_one();
                    }
                    continue;
                }
                Err(Broken::NotSent(reason)) => {
                    return Err(ToolError::of(
                        FailureKind::UpstreamUnavailable,
                        format!(
                            "the MCP server {:?} could not be reached ({reason})",
                            self.config.name
                        ),
                    ));
                }
                Err(Broken::Transport(reason)) => {
                    if http && !retried {
                        // An expired session (404, or 400 from some servers): re-initialize
                        // and retry once.
                        retried = true;
                        self.reconnect.notify_one();
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    return Err(ToolError::of(
                        FailureKind::UpstreamUnavailable,
                        format!(
                            "the MCP server {:?} stopped answering during the call ({})",
                            self.config.name,
                            // A transport error can quote the server's whole answer.
                            crate::config::input::echo(&reason.to_string())
                        ),
                    ));
                }
                Err(Broken::Tool(error)) => return Err(error),
                Ok(output) => return Ok(output),
            }
        }
    }

    async fn call_once(
        &self,
        peer: &Peer<RoleClient>,
        raw_name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutput, Broken> {
        let params = CallToolRequestParams::new(raw_name.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(self.config.call_timeout);
        let handle = peer
            .send_request_with_option(request, options)
            .await
            .map_err(|e| Broken::NotSent(e.to_string()))?;
        // Progress notifications of this request go to the caller's sink, if it has one.
        let token = token_key(&handle.progress_token);
        let registered = PROGRESS
            .try_with(|sink| lock(&self.progress).insert(token.clone(), sink.clone()))
            .is_ok();
        let mut cancel = CancelOnDrop {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        let answer = handle.await_response().await;
        cancel.peer = None;
        if registered {
            lock(&self.progress).remove(&token);
        }
        match answer {
            Ok(ServerResult::CallToolResult(result)) => result_output(&self.config.name, result),
            Ok(other) => Err(Broken::Tool(ToolError::new(format!(
                "the MCP server {:?} answered tools/call with something else ({})",
                self.config.name,
                serde_json::to_string(&other)
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect::<String>()
            )))),
            Err(ServiceError::Timeout { timeout }) => Err(Broken::Tool(ToolError::of(
                FailureKind::Timeout,
                format!(
                    "the MCP server {:?} did not answer within {} ms; the call was cancelled",
                    self.config.name,
                    timeout.as_millis()
                ),
            ))),
            Err(ServiceError::McpError(error)) if error.code == TRANSPORT_ERROR => {
                // The transport refused the answer (a bound, not UTF-8, the wrong shape): the
                // message names the server and why.
                Err(Broken::Tool(ToolError::of(
                    FailureKind::ToolFailed,
                    error.message.into_owned(),
                )))
            }
            Err(ServiceError::McpError(error)) => {
                let kind = if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    FailureKind::BadArguments
                } else {
                    FailureKind::ToolFailed
                };
                Err(Broken::Tool(ToolError::of(
                    kind,
                    format!(
                        "the MCP server {:?} refused the call: {}",
                        self.config.name, error.message
                    ),
                )))
            }
            Err(ServiceError::TransportClosed) => match self.cut() {
                // Its stream passed a message bound: a definite answer, not an outage to retry.
                Some(cut) => Err(Broken::Tool(ToolError::of(
                    FailureKind::UpstreamUnavailable,
                    cut,
                ))),
                None => Err(Broken::Transport("its connection closed".into())),
            },
            Err(ServiceError::TransportSend(e)) => Err(Broken::Transport(e.to_string())),
            Err(other) => Err(Broken::Tool(ToolError::new(format!(
                "the call to the MCP server {:?} failed: {other}",
                self.config.name
            )))),
        }
    }
}

impl Upstream {
    /// Why the current connection's stream was cut at a message bound, if it was.
    fn cut(&self) -> Option<String> {
        self.violation.lock().ok().and_then(|v| v.clone())
    }
}

/// Why a call did not produce a result.
enum Broken {
    /// The request never left: the connection was already gone.
    NotSent(String),
    /// The transport is gone (retry on a new connection for HTTP).
    Transport(String),
    /// A definite answer: the tool's error.
    Tool(ToolError),
}

/// Sends `notifications/cancelled` for a request whose caller went away (the call was dropped:
/// the model's client cancelled, a cell ended, a gateway timeout fired).
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let id = self.id.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(rmcp::model::CancelledNotificationParam::new(
                        Some(id),
                        Some("the caller cancelled the call".into()),
                    ))
                    .await;
            });
        }
    }
}

/// A `tools/call` result as the catalog's output: text content joined, `structuredContent` (or
/// the non-text content) as details; `isError: true` is the tool's own error.
fn result_output(server: &str, result: CallToolResult) -> Result<ToolOutput, Broken> {
    let mut texts: Vec<String> = Vec::new();
    let mut other: Vec<Value> = Vec::new();
    for block in &result.content {
        let value = serde_json::to_value(block).unwrap_or(Value::Null);
        match value.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(
                value
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => other.push(value),
        }
    }
    let text = texts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            format!("the MCP server {server:?} reported an error without text")
        } else {
            text
        };
        return Err(Broken::Tool(ToolError::new(message)));
    }
    let details = match result.structured_content {
        Some(structured) => Some(structured),
        None if !other.is_empty() => Some(json!({"content": other})),
        None => None,
    };
    Ok(ToolOutput {
        text: (!text.is_empty()).then_some(text),
        details,
    })
}

/// A pipe for a supervisor to watch: (read end, write end), both close-on-exec (the read end is
/// made inheritable in the supervisor's child only).
fn watch_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), String> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array with two new descriptors, owned from here on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(format!(
                "cannot create the supervisor's pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok((
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        ))
    }
}

/// The program a stdio server's `command` names, found as the gateway would find it: a path
/// with a `/` as given, else the first executable of that name in the server's configured
/// `PATH`, else in the gateway's own. (The supervisor runs with the server's environment, which
/// usually has no `PATH` at all.) Unfound: the name as given, and the supervisor reports it.
fn resolve_program(
    command: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if command.contains('/') {
        return std::path::PathBuf::from(command);
    }
    let path = env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| std::path::PathBuf::from(command))
}

/// How long a reason waits for an exited child's last stderr lines (a grandchild that keeps the
/// pipe open would otherwise hold it up).
const STDERR_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Why a connection ended: the child's exit, when there is a child. After an exit it lets the
/// stderr drain reach the end of the pipe (bounded), so that the reason built next carries the
/// last line the child wrote, not whatever the drain had read when the exit was noticed.
async fn exit_reason(child: Option<&mut ChildGroup>) -> String {
    match child {
        Some(group) => {
            match tokio::time::timeout(Duration::from_secs(2), group.child.wait()).await {
                Ok(Ok(status)) => {
                    if let Some(drain) = group.stderr.take() {
                        let _ = tokio::time::timeout(STDERR_AFTER_EXIT, drain).await;
                    }
                    format!("it exited ({status})")
                }
                Ok(Err(e)) => format!("it stopped ({e})"),
                Err(_) => "its connection closed".to_string(),
            }
        }
        None => "its connection closed".to_string(),
    }
}

/// Drains a child's stderr line by line into its bounded tail (never blocks the child).
async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<StderrTail>>,
    server: String,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let read = (&mut reader)
            .take(STDERR_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') && line.len() > STDERR_LINE_BYTES {
                    // Skip the rest of an over-long line.
                    let mut rest = Vec::new();
                    loop {
                        rest.clear();
                        match (&mut reader)
                            .take(64 * 1024)
                            .read_until(b'\n', &mut rest)
                            .await
                        {
                            Ok(0) | Err(_) => break,
                            Ok(_) if rest.last() == Some(&b'\n') => break,
                            Ok(_) => {}
                        }
                    }
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                tracing::debug!(server = %server, "stderr: {}", text.escape_debug());
                lock(&tail).push(text);
            }
        }
    }
}

/// The executor of one listed MCP tool: the raw name goes upstream.
struct McpTool {
    upstream: Weak<Upstream>,
    raw_name: String,
}

impl Tool for McpTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a CallContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(upstream) = self.upstream.upgrade() else {
                return Err(ToolError::of(
                    FailureKind::UpstreamUnavailable,
                    "its MCP server was shut down",
                ));
            };
            upstream.call(&self.raw_name, args).await
        })
    }
}

/// One `tools/list` page's tools as the JSON entries [`ingest::ingest`] reads (a tool that does
/// not serialize is left out).
pub(crate) fn page_entries(tools: Vec<rmcp::model::Tool>) -> impl Iterator<Item = Value> {
    tools
        .into_iter()
        .filter_map(|tool| serde_json::to_value(&tool).ok())
}
