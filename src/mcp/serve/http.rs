//! The HTTP front of serve mode: `/mcp` (rmcp's streamable-HTTP service), `GET /health`, the
//! bearer token, `Host` and `Origin` checks, session and connection bounds, timeouts, and the
//! graceful stop on a signal.
//!
//! Never does: answer MCP itself (the handler does).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use super::handler::{Answering, Drain, Handler};
use super::stdio::shutdown_signal;
use super::{ServeError, ServeOptions};
use crate::config::input::{self, MAX_MCP_MESSAGE_BYTES};
use crate::mcp::Federated;
use crate::mcp::front::{self, Body, respond, rpc_error};
use crate::session::Session;

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
        federated: Federated,
        options: &ServeOptions,
        health: HealthExtra,
    ) -> Result<(), ServeError> {
        let HttpListener { listener, addr } = self;
        let handler = Handler::new(session.clone(), federated, options);
        let drain = handler.clone();
        let cancel = tokio_util::sync::CancellationToken::new();
        let routes = Arc::new(build_routes(
            addr,
            handler,
            session,
            options,
            health,
            cancel.clone(),
        ));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        // The listener is dropped when this returns: no more connections are accepted.
        accept_connections(listener, &routes, options, &graceful).await;
        shut_down(&drain, options, cancel, graceful).await;
        Ok(())
    }
}

/// The routes of a listener bound at `addr`: `/health`, and the MCP service (stopped by
/// `cancel`) behind the Host, Origin and token checks.
fn build_routes(
    addr: SocketAddr,
    handler: Handler,
    session: Session,
    options: &ServeOptions,
    health: HealthExtra,
    cancel: tokio_util::sync::CancellationToken,
) -> Routes {
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
    config.cancellation_token = cancel;
    let answers = handler.drain.clone();
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(handler.for_client()),
        manager.clone(),
        config,
    ));
    Routes {
        service,
        manager,
        guard,
        max_sessions: options.max_sessions.max(1),
        body_timeout: options.body_timeout.max(Duration::from_millis(100)),
        health,
        session,
        answers,
    }
}

/// Accepts connections until a signal arrives, at most `--max-connections` open at once, each
/// served on its own task watched by `graceful`.
async fn accept_connections(
    listener: tokio::net::TcpListener,
    routes: &Arc<Routes>,
    options: &ServeOptions,
    graceful: &hyper_util::server::graceful::GracefulShutdown,
) {
    let (cap, lowered) = front::connection_cap(options.max_connections);
    if let Some(lowered) = lowered {
        tracing::warn!("{lowered}");
    }
    let connections = Arc::new(tokio::sync::Semaphore::new(cap));
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(options.header_timeout.max(Duration::from_millis(100)));
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
        spawn_connection(&http1, graceful, routes.clone(), stream, peer, permit);
    }
}

/// Serves an accepted connection on its own task; its slot (`permit`) is freed when it closes.
fn spawn_connection(
    http1: &hyper::server::conn::http1::Builder,
    graceful: &hyper_util::server::graceful::GracefulShutdown,
    routes: Arc<Routes>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let connection_key: Arc<str> = Arc::from(format!("connection {peer}"));
    let route =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
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
        });
    let connection = http1.serve_connection(hyper_util::rt::TokioIo::new(stream), route);
    let connection = graceful.watch(connection);
    tokio::spawn(async move {
        let _ = connection.await;
        drop(permit);
    });
}

/// After accepting stopped: refuses new calls, lets the calls in flight finish within the
/// grace period (those still running then are answered with a JSON-RPC error saying so), then
/// ends the MCP sessions (their event streams would otherwise hold the connections open) and
/// the connections.
async fn shut_down(
    drain: &Handler,
    options: &ServeOptions,
    cancel: tokio_util::sync::CancellationToken,
    graceful: hyper_util::server::graceful::GracefulShutdown,
) {
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
    let _ = tokio::time::timeout(rest.max(Duration::from_millis(500)), graceful.shutdown()).await;
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
pub(super) struct ClientKey(pub(super) Arc<str>);

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
