//! Serve mode (SPEC ): one [`Session`] as an MCP server, over stdio or streamable HTTP.
//!
//! Owns: the MCP server handler (`tools/list` — paginated, [`ServeOptions::page_size`] per
//! page — and `tools/call` answered by [`Session::handle`]; `notifications/tools/list_changed`
//! when a catalog change altered the declared tools; progress notifications of upstream calls
//! forwarded to the caller; a client's cancellation drops the call, which cancels it upstream),
//! and the HTTP front: `/mcp` (rmcp's streamable-HTTP service: session ids, `DELETE`, `Host`
//! and `Origin` validation against loopback names unless told otherwise, idle expiry), a bearer
//! token when one is set (required for a non-loopback bind), a bounded number of live
//! sessions, and `GET /health`. On SIGTERM or Ctrl-C it stops accepting, lets in-flight
//! requests finish within a grace period, and returns so the caller can finish the session.
//!
//! Results: a control's JSON result is the call's `structuredContent` (an array is wrapped as
//! `{"result": […]}`) and its compact text the content; a failure is `isError: true` with the
//! worded message as text and the error object as `structuredContent`. A name that is neither
//! declared nor resolvable is a protocol error (`-32602`, "Unknown tool").
//! Never does: print anything but JSON-RPC on stdout in stdio mode (logs go to stderr).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData as McpError,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use super::front::{self, Body, respond, rpc_error};
use super::{PROGRESS, ProgressSink};
use crate::config::Mode;
use crate::config::input::{self, MAX_MCP_MESSAGE_BYTES};
use crate::session::{Reply, Session};
use crate::surface::Format;

/// How `serve` listens.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Tools per `tools/list` page (default 100).
    pub page_size: usize,
    /// The bearer token HTTP clients must send (`Authorization: Bearer …`); required for a
    /// non-loopback bind.
    pub auth_token: Option<String>,
    /// Extra `Host` names accepted (beyond localhost, 127.0.0.1 and ::1).
    pub allowed_hosts: Vec<String>,
    /// Live HTTP sessions at most (default 64); a new one beyond it gets 503.
    pub max_sessions: usize,
    /// An HTTP session idle this long is closed (default 10 minutes).
    pub session_idle: Duration,
    /// How long in-flight requests may finish after SIGTERM (default 10 s).
    pub grace: Duration,
    /// A connection must deliver a complete request head within this, whether it is new or
    /// idle between requests (default 10 s); else it is closed.
    pub header_timeout: Duration,
    /// A request body must arrive within this once its head has (default 30 s); else 408.
    pub body_timeout: Duration,
    /// Client connections at most (default 256, lowered to stay below the descriptor limit);
    /// further ones wait in the listen backlog until one closes.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            page_size: 100,
            auth_token: None,
            allowed_hosts: Vec::new(),
            max_sessions: 64,
            session_idle: Duration::from_secs(600),
            grace: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 256,
        }
    }
}

/// A serve-mode failure (set-up; requests never fail the server).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address and no --auth-token was given (clients on the network could call your tools); pass --auth-token TOKEN or bind 127.0.0.1"
    )]
    NeedsToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The token is too weak to guard a server (`mcp::front::check_token`).
    #[error("refusing --auth-token: {0}")]
    Token(String),
    /// The listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The stdio transport failed to start.
    #[error("the MCP stdio server failed: {0}")]
    Stdio(String),
}

/// The MCP server handler over a session.
#[derive(Clone)]
pub struct Handler {
    session: Session,
    page_size: usize,
    drain: Arc<Drain>,
}

impl Handler {
    /// A handler answering with `session`.
    pub fn new(session: Session, options: &ServeOptions) -> Handler {
        Handler {
            session,
            page_size: options.page_size.clamp(1, 10_000),
            drain: Arc::new(Drain::default()),
        }
    }

    /// Refuses new `tools/call` requests from now on and waits, up to `grace`, until the calls in
    /// flight finished. Returns how many were still running at the end of the grace period.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.drain.closing.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        let left = settle(&self.drain.inflight, &self.drain.idle, deadline).await;
        if left > 0 {
            // The calls still running answer their callers with a JSON-RPC error saying why.
            self.drain.grace_over.cancel();
            self.drain
                .grace_secs
                .store(grace.as_secs(), Ordering::SeqCst);
        }
        left
    }

    /// Waits, until `deadline`, for the HTTP answers to POSTed messages still being written
    /// (a call's result travels on its POST's event stream after the call returned: ending
    /// the MCP sessions before that stream is flushed would lose the answer). Returns how many
    /// were still open at the deadline.
    async fn finish_answers(&self, deadline: tokio::time::Instant) -> usize {
        settle(&self.drain.answering, &self.drain.answered, deadline).await
    }
}

/// Waits until `counter` is 0 (woken by `zero`) or `deadline`; returns the count at the end.
async fn settle(
    counter: &AtomicUsize,
    zero: &tokio::sync::Notify,
    deadline: tokio::time::Instant,
) -> usize {
    loop {
        let woken = zero.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if counter.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        if tokio::time::timeout_at(deadline, woken).await.is_err() {
            return counter.load(Ordering::SeqCst);
        }
    }
}

/// Calls in flight, and whether new ones are refused (the server is shutting down).
#[derive(Default)]
struct Drain {
    closing: AtomicBool,
    /// Cancelled when the grace period ended with calls still running (they answer at once).
    grace_over: tokio_util::sync::CancellationToken,
    grace_secs: std::sync::atomic::AtomicU64,
    inflight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// HTTP answers to POSTed messages whose body is still being written.
    answering: AtomicUsize,
    answered: tokio::sync::Notify,
}

/// One HTTP answer being written; counted out (waking a shutdown) when its body is dropped.
struct Answering(Arc<Drain>);

impl Answering {
    fn start(drain: &Arc<Drain>) -> Answering {
        drain.answering.fetch_add(1, Ordering::SeqCst);
        Answering(drain.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if self.0.answering.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.answered.notify_waiters();
        }
    }
}

/// One call in flight; counted out (waking a drain) when dropped.
struct InFlight<'a>(&'a Drain);

impl Drain {
    fn enter(&self) -> Option<InFlight<'_>> {
        self.inflight.fetch_add(1, Ordering::SeqCst);
        let call = InFlight(self);
        // Checked after counting in, so a drain that saw 0 in flight never misses this call.
        (!self.closing.load(Ordering::SeqCst)).then_some(call)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.inflight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// A reply as an MCP tool result.
fn tool_result(reply: Reply) -> CallToolResult {
    match reply {
        Reply::Ok(value) => {
            let text = value.to_string();
            let structured = match value {
                Value::Object(_) => value,
                other => json!({"result": other}),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            result
        }
        Reply::Searched(searched) => {
            // The hits as shapes them, then the note as a block of its own; structured:
            // the single form's `{result: [...], matched, truncated, not_found?}`.
            let mut content = vec![ContentBlock::text(searched.body.to_string())];
            if let Some(note) = searched.note {
                content.push(ContentBlock::text(note));
            }
            let structured = match (searched.body, searched.signal) {
                (body @ Value::Object(_), _) => body,
                (body, Some(Value::Object(mut signal))) => {
                    signal.insert("result".into(), body);
                    Value::Object(signal)
                }
                (body, _) => json!({"result": body}),
            };
            let mut result = CallToolResult::success(content);
            result.structured_content = Some(structured);
            result
        }
        Reply::Failed { body, .. } => {
            let text = body["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| body.to_string());
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            result.structured_content = Some(body);
            result
        }
        Reply::Recovered { reply, recovered } => {
            let mut result = tool_result(*reply);
            result.content.push(ContentBlock::text(recovered.hint));
            result
        }
        Reply::ClientCall(call) => CallToolResult::error(vec![ContentBlock::text(format!(
            "{} is a client tool: the application runs it, and no application is connected to this server",
            call.tool.id
        ))]),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolsearch", env!("CARGO_PKG_VERSION")));
        let prompt = self.session.system_prompt();
        if !prompt.is_empty() {
            info = info.with_instructions(prompt);
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let all = self.session.tools(Format::Anthropic);
        let all = all.as_array().cloned().unwrap_or_default();
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start < all.len())
                .ok_or_else(|| {
                    McpError::invalid_params(format!("unknown cursor {cursor:?}"), None)
                })?,
        };
        let end = (start + self.page_size).min(all.len());
        let tools = all[start..end]
            .iter()
            .map(|definition| {
                McpTool::new(
                    definition["name"].as_str().unwrap_or_default().to_string(),
                    definition["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    object(definition["input_schema"].clone()),
                )
            })
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        if end < all.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(_inflight) = self.drain.enter() else {
            return Err(McpError::internal_error(
                "the server is shutting down (SIGTERM or Ctrl-C): no new calls are accepted; \
                 calls already running finish within the grace period",
                None,
            ));
        };
        let name = request.name.to_string();
        let surface = self.session.surface();
        if surface.target_of(&name).is_none() && surface.mode != Mode::Directory {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {:?}", input::echo(&name)),
                None,
            ));
        }
        let arguments = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        // Code cells are scheduled fairly between clients: the HTTP session (or, without one,
        // the connection) this request came on; over stdio there is one client.
        let client = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<ClientKey>())
            .map_or_else(|| Arc::from("stdio"), |key| key.0.clone());
        let call =
            crate::sandbox::fair::CLIENT.scope(client, self.session.handle(&name, &arguments));
        let grace_over = self.drain.grace_over.clone();
        let call = async move {
            tokio::select! {
                reply = call => Ok(reply),
                _ = grace_over.cancelled() => Err(()),
            }
        };
        let reply = match context.meta.get_progress_token() {
            Some(token) => {
                let peer = context.peer.clone();
                let sink: ProgressSink = Arc::new(move |progress, total, message| {
                    let mut params = ProgressNotificationParam::new(token.clone(), progress);
                    if let Some(total) = total {
                        params = params.with_total(total);
                    }
                    if let Some(message) = message {
                        params = params.with_message(message);
                    }
                    let peer = peer.clone();
                    tokio::spawn(async move {
                        let _ = peer.notify_progress(params).await;
                    });
                });
                tokio::select! {
                    reply = PROGRESS.scope(sink, call) => reply,
                    _ = context.ct.cancelled() => return Err(cancelled()),
                }
            }
            None => tokio::select! {
                reply = call => reply,
                _ = context.ct.cancelled() => return Err(cancelled()),
            },
        };
        match reply {
            Ok(reply) => Ok(CallToolResponse::Complete(tool_result(reply))),
            Err(()) => Err(McpError::internal_error(
                format!(
                    "the server is shutting down (SIGTERM or Ctrl-C) and this call was still \
                     running at the end of the {} s grace period: it was cancelled",
                    self.drain.grace_secs.load(Ordering::SeqCst)
                ),
                None,
            )),
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.session.changes();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }
}

fn cancelled() -> McpError {
    McpError::internal_error("the request was cancelled", None)
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

/// Serves `session` over stdin/stdout until the client disconnects or a signal arrives.
pub async fn serve_stdio(session: Session, options: &ServeOptions) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let handler = Handler::new(session, options);
    // The client's messages are bounded like an upstream's (`super::bounded`): past a bound the
    // stream is cut with an error naming it.
    let stdin = super::bounded::Bounded::new(
        tokio::io::stdin(),
        "the MCP client",
        super::bounded::Violation::default(),
    );
    let running = match handler.clone().serve((stdin, tokio::io::stdout())).await {
        Ok(running) => running,
        // The client left before initializing (stdin closed): nothing to serve, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("the MCP client closed stdin before initializing");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Stdio(e.to_string())),
    };
    let token = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => {}
        _ = shutdown_signal() => {
            // New calls are refused; those in flight finish (within the grace period) before
            // the connection is cancelled.
            let started = tokio::time::Instant::now();
            tokio::select! {
                _ = &mut waiting => return Ok(()),
                left = handler.drain(options.grace) => if left > 0 {
                    tracing::warn!("{left} call(s) still running after the {} s grace period were cancelled", options.grace.as_secs());
                },
            }
            token.cancel();
            let rest = options.grace.saturating_sub(started.elapsed());
            let _ = tokio::time::timeout(rest.max(Duration::from_millis(100)), &mut waiting).await;
        }
    }
    Ok(())
}

/// What `/health` reports beside the session's own state: an object whose fields are added
/// to the answer (e.g. `upstreams`, `upstream_issues`).
pub type HealthExtra = Arc<dyn Fn() -> Value + Send + Sync>;

/// A bound HTTP listener, before serving (so callers can print the address first).
pub struct HttpListener {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
}

impl HttpListener {
    /// Binds `addr`; a non-loopback address needs a token, and a token must be strong enough
    /// (`mcp::front::check_token`).
    pub async fn bind(
        addr: SocketAddr,
        options: &ServeOptions,
    ) -> Result<HttpListener, ServeError> {
        if !addr.ip().is_loopback() && options.auth_token.is_none() {
            return Err(ServeError::NeedsToken { addr });
        }
        if let Some(token) = &options.auth_token {
            front::check_token(token).map_err(ServeError::Token)?;
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        Ok(HttpListener { listener, addr })
    }

    /// The bound address (the port is known even when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `session` at `/mcp` (and `/health`) until a signal arrives.
    pub async fn serve(
        self,
        session: Session,
        options: &ServeOptions,
        health: HealthExtra,
    ) -> Result<(), ServeError> {
        let HttpListener { listener, addr } = self;
        let handler = Handler::new(session.clone(), options);
        let drain = handler.clone();
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(options.session_idle);
        let manager = Arc::new(manager);
        let port = addr.port();
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        hosts.extend(options.allowed_hosts.iter().cloned());
        if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
            hosts.push(addr.ip().to_string());
        }
        let origins: Vec<String> = hosts
            .iter()
            .flat_map(|h| [format!("http://{h}:{port}"), format!("https://{h}:{port}")])
            .collect();
        let guard = front::Guard::new(&hosts, port, options.auth_token.clone());
        let cancel = tokio_util::sync::CancellationToken::new();
        // Sessions stay for clients of the legacy protocols (initialize, Mcp-Session-Id, a GET
        // stream for list_changed). A request of the sessionless protocol (2026-07-28: per-request
        // version, no initialize) is served statelessly by rmcp whatever this says; with
        // `json_response` its answer is one `application/json` body instead of an event stream
        // (it falls back to the stream when the call sends progress before its result). Measured
        // with `toolsearch bench serve`: see ARCHITECTURE.md. The body bound is the front's
        // (checked before the service reads it), so the service's own is the same.
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .with_json_response(true)
            .with_max_request_body_bytes(MAX_MCP_MESSAGE_BYTES);
        config.cancellation_token = cancel.clone();
        let service = Arc::new(StreamableHttpService::new(
            move || Ok(handler.clone()),
            manager.clone(),
            config,
        ));
        let routes = Arc::new(Routes {
            service,
            manager,
            guard,
            max_sessions: options.max_sessions.max(1),
            body_timeout: options.body_timeout.max(Duration::from_millis(100)),
            health,
            session,
            answers: drain.drain.clone(),
        });
        let (cap, lowered) = front::connection_cap(options.max_connections);
        if let Some(lowered) = lowered {
            tracing::warn!("{lowered}");
        }
        let connections = Arc::new(tokio::sync::Semaphore::new(cap));
        let mut http1 = hyper::server::conn::http1::Builder::new();
        http1
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(options.header_timeout.max(Duration::from_millis(100)));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let signal = shutdown_signal();
        tokio::pin!(signal);
        let mut backoff = front::AcceptBackoff::default();
        // When the cap was last reported (at most once a minute).
        let mut cap_reported: Option<tokio::time::Instant> = None;
        loop {
            // A connection is only accepted with a free slot: at the cap, new clients wait in the
            // kernel's listen backlog (no descriptor of ours) until a connection closes.
            if connections.available_permits() == 0
                && cap_reported.is_none_or(|at| at.elapsed() >= Duration::from_secs(60))
            {
                cap_reported = Some(tokio::time::Instant::now());
                tracing::warn!(
                    "{cap} client connections open (the connection cap, --max-connections); new \
                     ones wait until one closes (idle ones close after the {} s header timeout)",
                    options.header_timeout.as_secs_f64()
                );
            }
            let permit = tokio::select! {
                permit = connections.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                _ = &mut signal => break,
            };
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => {
                        backoff.succeeded();
                        accepted
                    }
                    Err(error) => {
                        let pause = backoff.failed(&error);
                        drop(permit);
                        tokio::select! {
                            _ = tokio::time::sleep(pause) => continue,
                            _ = &mut signal => break,
                        }
                    }
                },
                _ = &mut signal => break,
            };
            let routes = routes.clone();
            let connection_key: Arc<str> = Arc::from(format!("connection {peer}"));
            let route = hyper::service::service_fn(
                move |mut request: hyper::Request<hyper::body::Incoming>| {
                    let routes = routes.clone();
                    let key = request
                        .headers()
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map_or_else(
                            || connection_key.clone(),
                            |id| Arc::from(format!("session {id}")),
                        );
                    request.extensions_mut().insert(ClientKey(key));
                    async move { Ok::<_, std::convert::Infallible>(routes.route(request).await) }
                },
            );
            let connection = http1.serve_connection(hyper_util::rt::TokioIo::new(stream), route);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                let _ = connection.await;
                drop(permit);
            });
        }
        // Stop accepting (the listener is dropped) and refuse new calls, let the calls in flight
        // finish within the grace period (those still running then are answered with a JSON-RPC
        // error saying so), then end the MCP sessions (their event streams would otherwise hold
        // the connections open) and the connections.
        drop(listener);
        let started = tokio::time::Instant::now();
        let left = drain.drain(options.grace).await;
        if left > 0 {
            tracing::warn!(
                "{left} call(s) still running after the {} s grace period were cancelled",
                options.grace.as_secs()
            );
        }
        // A call that returned (or was cut) still has its answer to write.
        let deadline =
            (started + options.grace).max(tokio::time::Instant::now() + Duration::from_millis(500));
        let unwritten = drain.finish_answers(deadline).await;
        if unwritten > 0 {
            tracing::warn!(
                "{unwritten} answer(s) still being written at the end of the grace period were cut off"
            );
        }
        cancel.cancel();
        let rest = options.grace.saturating_sub(started.elapsed());
        let _ =
            tokio::time::timeout(rest.max(Duration::from_millis(500)), graceful.shutdown()).await;
        Ok(())
    }
}

/// Whether a request body is a JSON-RPC `initialize` request (which opens a session).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(body)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|m| m == "initialize")
}

/// Who an HTTP request is from, for the sandbox's fair scheduling: its MCP session, else its
/// connection.
#[derive(Clone)]
struct ClientKey(Arc<str>);

/// What every HTTP request is routed with.
struct Routes {
    service: Arc<StreamableHttpService<Handler, LocalSessionManager>>,
    manager: Arc<LocalSessionManager>,
    guard: front::Guard,
    max_sessions: usize,
    body_timeout: Duration,
    health: HealthExtra,
    session: Session,
    /// Counts the answers to POSTs being written (see [`Handler::finish_answers`]).
    answers: Arc<Drain>,
}

impl Routes {
    async fn route(&self, request: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Body> {
        // Every path, `/health` included, is behind the Host/Origin check and the token.
        if let Some(refused) = self.guard.refusal(&request) {
            return refused;
        }
        match request.uri().path() {
            "/health" => self.health(&request).await,
            "/mcp" => self.mcp(request).await,
            _ => respond(404, json!({"error": "not found; the MCP endpoint is /mcp"})),
        }
    }

    async fn health(
        &self,
        request: &hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Body> {
        if request.method() != hyper::Method::GET {
            return respond(405, json!({"error": "use GET /health"}));
        }
        let sessions = self.manager.sessions.read().await.len();
        let mut body = json!({
            "status": "ok",
            "mode": self.session.mode().as_str(),
            "declared_tools": self.session.tool_definitions().len(),
            "catalog_size": self.session.telemetry()["catalog_size"],
            "http_sessions": sessions,
        });
        if let (Value::Object(body), Value::Object(extra)) = (&mut body, (self.health)()) {
            body.extend(extra);
        }
        respond(200, body)
    }

    async fn mcp(&self, request: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Body> {
        let session_id = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // A POST without a session id is a legacy `initialize` (a new session) or a request of
        // the sessionless protocol (none); the body tells which, and is only looked at when the
        // sessions are at their bound.
        let no_session = request.method() == hyper::Method::POST && session_id.is_none();
        let delete = request.method() == hyper::Method::DELETE;
        if delete
            && let Some(id) = &session_id
            && !self.manager.sessions.read().await.contains_key(id.as_str())
        {
            return rpc_error(
                404,
                -32001,
                format!(
                    "no MCP session {:?} (it ended, expired or never existed)",
                    input::echo(id)
                ),
            );
        }
        // The answer to a POST (a call's result on its event stream) is counted until its body
        // is written or dropped, so a shutdown ends the sessions only after it.
        let answering =
            (request.method() == hyper::Method::POST).then(|| Answering::start(&self.answers));
        let (request, body) = match front::read_body(request, self.body_timeout).await {
            Ok(read) => read,
            Err(response) => return response,
        };
        if no_session
            && self.manager.sessions.read().await.len() >= self.max_sessions
            && is_initialize(&body)
        {
            return rpc_error(
                503,
                -32000,
                format!(
                    "too many MCP sessions (at most {}, --max-sessions); close one with DELETE \
                     /mcp or retry later",
                    self.max_sessions
                ),
            );
        }
        let mut response = self.service.handle(request).await;
        // A session closed by DELETE: 204 (clients expect 200 or 204, not 202).
        if delete && response.status() == hyper::StatusCode::ACCEPTED {
            *response.status_mut() = hyper::StatusCode::NO_CONTENT;
        }
        match answering {
            Some(answering) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &answering;
                    frame
                })
                .boxed()
            }),
            None => response,
        }
    }
}
