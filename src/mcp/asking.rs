//! Requests an upstream server sends its client (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`), relayed to the MCP client whose tool call it is; and its log messages
//! (`notifications/message`), relayed to that client at the level it set.
//!
//! Owns: who the caller of the request `serve` is serving on this task is ([`CALLER`], set
//! by `serve` around a call); the calls in flight on one upstream, by the request id sent
//! upstream ([`InFlight`]); and which call an upstream's request belongs to — over streamable
//! HTTP the response stream it arrived on names the call (SEP-2260); over stdio nothing on
//! the wire does, so it belongs to the one client with calls in flight on that server, and
//! when two clients have calls there it is refused, never guessed. The bounds of a relay:
//! [`MAX_ASKS_PER_CALL`] per call, the upstream's `callTimeoutMs` each, and none after the
//! call ends (a pending one is cancelled at the client). A client of the 2026-07-28 revision
//! takes no requests from its server: what its call's upstream asks goes to the call's
//! [`Pending`] queue instead, which `serve` answers `input_required` (SEP-2322), the client's
//! retry carrying the answer back. Elicitation from within a code cell
//! is refused (a person would answer while the cell's deadline runs; see ARCHITECTURE.md).
//! A log message carries no stream association even over HTTP: it goes to the one client with
//! calls in flight on that server, tagged with the server as its logger, if the client's level
//! admits it; otherwise it is not relayed.
//!
//! Never does: send a request to a client other than the caller; relay what the caller did
//! not declare it can answer; change what is asked or answered (an answer carried in an
//! `input_required` retry is decoded as the result it must be, and passed on as such).

// Sampling, roots and logging are deprecated by the 2026-07-28 revision (SEP-2577), which rmcp
// marks; clients of the revisions before it (every one in use today) still use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::lock;
use rmcp::ServiceError;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ErrorData, GetExtensions, InputRequest, ListRootsRequest, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParam, RequestId, ServerRequest,
};
use rmcp::service::{
    InboundStreamOrigin, OriginatingRequestId, Peer, PeerRequestOptions, RequestContext,
    RoleClient, RoleServer,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Requests one upstream tool call may have relayed to its caller; a further one is refused
/// naming this bound.
pub const MAX_ASKS_PER_CALL: u32 = 64;

/// The MCP client whose request `serve` is serving.
#[derive(Clone)]
pub struct Caller {
    /// Which client (its HTTP session or connection; one over stdio), to tell callers apart.
    client: Arc<str>,
    peer: Peer<RoleServer>,
    /// The client's request being served: a relayed request goes out on its response stream.
    request: RequestId,
    /// The level the client set.
    level: Arc<ClientLevel>,
    /// What the client declared it can answer (at its handshake, or with this request).
    capabilities: ClientCapabilities,
    /// For a client without requests from its server (2026-07-28): where what is asked of it
    /// waits for its retry.
    rounds: Option<mpsc::Sender<Pending>>,
}

/// Something asked of a client of the 2026-07-28 revision, waiting to be carried to it in an
/// `input_required` result; its retry's answer (a result as JSON) goes to `answer`.
pub struct Pending {
    /// What is asked.
    pub request: InputRequest,
    /// Where the answer goes (dropped: the retry did not answer it).
    pub answer: oneshot::Sender<Value>,
}

/// The level an MCP client asked for with `logging/setLevel` (until it does, every message is
/// relayed).
#[derive(Debug, Default)]
pub struct ClientLevel(Mutex<Option<LoggingLevel>>);

impl ClientLevel {
    /// `logging/setLevel`; whether it is the client's first.
    pub fn set(&self, level: LoggingLevel) -> bool {
        lock(&self.0).replace(level).is_none()
    }

    /// Whether a message at `level` is relayed.
    pub fn admits(&self, level: LoggingLevel) -> bool {
        lock(&self.0).is_none_or(|least| level as u8 >= least as u8)
    }
}

impl Caller {
    /// The client `client` whose request of `context` is being served; what is asked of it goes
    /// to `rounds` when given (a client without requests from its server), else out as a
    /// request on its call's response stream.
    pub fn new(
        client: Arc<str>,
        context: &RequestContext<RoleServer>,
        level: Arc<ClientLevel>,
        rounds: Option<mpsc::Sender<Pending>>,
    ) -> Caller {
        Caller {
            client,
            peer: context.peer.clone(),
            request: context.id.clone(),
            level,
            capabilities: context.client_capabilities().unwrap_or_default(),
            rounds,
        }
    }

    /// Relays `server`'s log message if the client's level admits it, the server named as its
    /// logger (`<server>` or `<server>/<logger>`).
    pub async fn log(&self, server: &str, mut params: LoggingMessageNotificationParam) {
        if !self.level.admits(params.level) {
            return;
        }
        params.logger = Some(match params.logger.take() {
            Some(logger) => format!("{server}/{logger}"),
            None => server.to_string(),
        });
        let _ = self.peer.notify_logging_message(params).await;
    }
}

tokio::task_local! {
    /// The caller of the MCP request being served on this task, if any: an upstream call made
    /// while it is set relays the upstream's requests to it.
    pub static CALLER: Caller;
}

/// What an upstream asks its client.
pub enum Ask {
    /// `sampling/createMessage`.
    Sampling(CreateMessageRequestParams),
    /// `elicitation/create`.
    Elicitation(ElicitRequestParams),
    /// `roots/list`.
    Roots,
}

/// What the client answered.
pub enum Answer {
    /// To `sampling/createMessage`.
    Sampling(CreateMessageResult),
    /// To `elicitation/create`.
    Elicitation(ElicitResult),
    /// To `roots/list`.
    Roots(ListRootsResult),
}

impl Ask {
    /// What an upstream's `input_required` result asks (SEP-2322); `None` for a kind this
    /// revision does not know.
    pub fn from_input(request: InputRequest) -> Option<Ask> {
        match request {
            InputRequest::CreateMessage(request) => Some(Ask::Sampling(request.params)),
            InputRequest::Elicitation(request) => Some(Ask::Elicitation(request.params)),
            InputRequest::ListRoots(_) => Some(Ask::Roots),
            _ => None,
        }
    }

    fn method(&self) -> &'static str {
        match self {
            Ask::Sampling(_) => "sampling/createMessage",
            Ask::Elicitation(_) => "elicitation/create",
            Ask::Roots => "roots/list",
        }
    }

    /// The capability the caller must have declared for this request, if it lacks it.
    fn missing(&self, capabilities: &ClientCapabilities) -> Option<&'static str> {
        match self {
            Ask::Sampling(params) => match &capabilities.sampling {
                None => Some("sampling"),
                Some(sampling)
                    if (params.tools.is_some() || params.tool_choice.is_some())
                        && sampling.tools.is_none() =>
                {
                    Some("sampling.tools")
                }
                Some(_) => None,
            },
            Ask::Elicitation(params) => match (&capabilities.elicitation, params) {
                (None, _) => Some("elicitation"),
                (Some(elicitation), ElicitRequestParams::UrlElicitationParams { .. })
                    if elicitation.url.is_none() =>
                {
                    Some("elicitation.url")
                }
                // An empty elicitation capability means forms (the 2025-06-18 form).
                (Some(elicitation), ElicitRequestParams::FormElicitationParams { .. })
                    if elicitation.form.is_none() && elicitation.url.is_some() =>
                {
                    Some("elicitation.form")
                }
                _ => None,
            },
            Ask::Roots => capabilities.roots.is_none().then_some("roots"),
        }
    }

    /// The request as an `input_required` result carries it.
    fn input_request(&self) -> InputRequest {
        match self {
            Ask::Sampling(params) => {
                InputRequest::CreateMessage(CreateMessageRequest::new(params.clone()))
            }
            Ask::Elicitation(params) => {
                InputRequest::Elicitation(ElicitRequest::new(params.clone()))
            }
            Ask::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
        }
    }

    /// The client's answer to this request, from the JSON of an `input_required` retry.
    fn answer(&self, answer: Value) -> Result<Answer, serde_json::Error> {
        Ok(match self {
            Ask::Sampling(_) => Answer::Sampling(serde_json::from_value(answer)?),
            Ask::Elicitation(_) => Answer::Elicitation(serde_json::from_value(answer)?),
            Ask::Roots => Answer::Roots(serde_json::from_value(answer)?),
        })
    }

    fn request(self, on: &RequestId) -> ServerRequest {
        let mut request = match self {
            Ask::Sampling(params) => {
                ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
            }
            Ask::Elicitation(params) => ServerRequest::ElicitRequest(ElicitRequest::new(params)),
            Ask::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        };
        request
            .extensions_mut()
            .insert(OriginatingRequestId(on.clone()));
        request
    }
}

impl Answer {
    /// The answer as an `input_required` retry carries it.
    pub fn into_value(self) -> Value {
        match self {
            Answer::Sampling(result) => serde_json::to_value(result),
            Answer::Elicitation(result) => serde_json::to_value(result),
            Answer::Roots(result) => serde_json::to_value(result),
        }
        .unwrap_or_default()
    }
}

/// What toolsearch, as a client of its upstreams, declares it can answer: all of it, relayed
/// (each request is then checked against what its caller declared). Roots without
/// `listChanged`: the roots asked for during a call are that call's caller's; a client's change
/// of roots is not announced to a server all clients share (which may still keep the roots it
/// was told during some client's call: roots are advice, not a boundary).
pub fn declared() -> ClientCapabilities {
    serde_json::from_value(serde_json::json!({
        "sampling": {"tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "roots": {},
    }))
    .unwrap_or_default()
}

/// One call in flight on an upstream.
struct Call {
    caller: Option<Caller>,
    in_cell: bool,
    asked: u32,
    ended: CancellationToken,
}

/// The calls in flight on one upstream, by the request id sent upstream.
#[derive(Clone, Default)]
pub struct InFlight(Arc<Mutex<HashMap<RequestId, Call>>>);

/// A call's place in [`InFlight`]; dropping it (the call answered, failed or was dropped)
/// removes it and cancels what it still has pending at its caller.
pub struct Registered {
    calls: InFlight,
    id: RequestId,
    ended: CancellationToken,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.calls.0).remove(&self.id);
        self.ended.cancel();
    }
}

impl InFlight {
    /// Registers the call sent upstream as `id`, made for the task's [`CALLER`] (if any).
    pub fn register(&self, id: RequestId) -> Registered {
        let ended = CancellationToken::new();
        let call = Call {
            caller: CALLER.try_with(Caller::clone).ok(),
            in_cell: crate::sandbox::in_cell(),
            asked: 0,
            ended: ended.clone(),
        };
        lock(&self.0).insert(id.clone(), call);
        Registered {
            calls: self.clone(),
            id,
            ended,
        }
    }

    /// The one client with calls in flight here (none: no call, or calls of several clients).
    pub fn sole_caller(&self) -> Option<Caller> {
        let calls = lock(&self.0);
        let mut callers = calls.values().map(|call| call.caller.as_ref());
        let first = callers.next()??;
        if callers.any(|caller| caller.is_none_or(|caller| caller.client != first.client)) {
            return None;
        }
        Some(first.clone())
    }

    /// Relays `ask`, which `server` sent in `context`, to the caller of the call it belongs
    /// to and returns the caller's answer, within `timeout`; refused with a named reason
    /// otherwise (see the module docs).
    pub async fn relay(
        &self,
        server: &str,
        ask: Ask,
        context: &RequestContext<RoleClient>,
        timeout: Duration,
    ) -> Result<Answer, ErrorData> {
        let refused = |why: &str| refusal(ask.method(), server, why);
        let id = {
            let calls = lock(&self.0);
            match context.extensions.get::<InboundStreamOrigin>() {
                Some(InboundStreamOrigin::OutboundRequest(id)) if calls.contains_key(id) => {
                    id.clone()
                }
                Some(_) => {
                    return Err(refused(
                        "it was sent outside any call of one of the server's tools",
                    ));
                }
                None => {
                    // Nothing on the wire says which call it is for: the one client with
                    // calls in flight, or nobody.
                    let mut clients = calls
                        .values()
                        .map(|call| call.caller.as_ref().map(|c| c.client.clone()));
                    let Some(first) = clients.next() else {
                        return Err(refused(
                            "it was sent outside any call of one of the server's tools",
                        ));
                    };
                    if clients.any(|client| client != first) {
                        return Err(refused(&format!(
                            "{} calls of different clients are running on it and its transport \
                             (stdio) does not say which one asked; serve it over streamable HTTP \
                             to have such requests relayed while calls overlap",
                            calls.len()
                        )));
                    }
                    calls.keys().next().cloned().unwrap_or(RequestId::Number(0))
                }
            }
        };
        self.ask(server, &id, ask, &context.ct, timeout).await
    }

    /// Asks the caller of the call sent upstream as `id` what `server` asks (in a request, or
    /// in an `input_required` result of that call), within `timeout`, unless `cancelled`.
    pub async fn ask(
        &self,
        server: &str,
        id: &RequestId,
        ask: Ask,
        cancelled: &CancellationToken,
        timeout: Duration,
    ) -> Result<Answer, ErrorData> {
        let method = ask.method();
        let refused = |why: String| refusal(method, server, &why);
        let (caller, ended) = {
            let mut calls = lock(&self.0);
            let Some(call) = calls.get_mut(id) else {
                return Err(refused("the call it was sent for has ended".into()));
            };
            call.asked += 1;
            if call.asked > MAX_ASKS_PER_CALL {
                return Err(refused(format!(
                    "one tool call may relay at most {MAX_ASKS_PER_CALL} requests to its client"
                )));
            }
            let Some(caller) = call.caller.clone() else {
                return Err(refused(
                    "the call it was sent for came from no MCP client (toolsearch's own agent \
                     loop or a library caller), so there is nobody to ask"
                        .into(),
                ));
            };
            if call.in_cell && matches!(ask, Ask::Elicitation(_)) {
                return Err(refused(
                    "the call came from a code cell, whose deadline would run while a person \
                     answers; call the tool directly (tool_call or its own name) to be asked"
                        .into(),
                ));
            }
            (caller, call.ended.clone())
        };
        if let Some(capability) = ask.missing(&caller.capabilities) {
            return Err(refused(format!(
                "the MCP client that made the call did not declare the {capability} capability"
            )));
        }
        let asking = Asking {
            server,
            method,
            ended,
            cancelled,
            timeout,
        };
        match &caller.rounds {
            Some(rounds) => asking.in_round(rounds, &ask).await,
            None => asking.in_request(&caller, ask).await,
        }
    }
}

/// One request being put to a caller: who asked, and what ends the wait for its answer.
struct Asking<'a> {
    server: &'a str,
    method: &'static str,
    /// Cancelled when the call it was sent for ends.
    ended: CancellationToken,
    /// Cancelled when the server cancels the request.
    cancelled: &'a CancellationToken,
    timeout: Duration,
}

impl Asking<'_> {
    /// The request refused, and `why`.
    fn refused(&self, why: String) -> ErrorData {
        refusal(self.method, self.server, &why)
    }

    /// Queues `ask` for the caller's retry (a client without requests from its server) and
    /// waits for the answer the retry carries.
    async fn in_round(
        &self,
        rounds: &mpsc::Sender<Pending>,
        ask: &Ask,
    ) -> Result<Answer, ErrorData> {
        let (answer, answered) = oneshot::channel();
        let pending = Pending {
            request: ask.input_request(),
            answer,
        };
        let asked_and_answered = async {
            if rounds.send(pending).await.is_err() {
                return None;
            }
            Some(answered.await)
        };
        let answer = tokio::select! {
            answer = asked_and_answered => match answer {
                Some(answer) => answer,
                None => return Err(self.refused("the tool call it was sent for ended".into())),
            },
            _ = tokio::time::sleep(self.timeout) => {
                return Err(self.refused(format!(
                    "the client did not retry its call with the answer within {} ms (the \
                     server's callTimeoutMs)",
                    self.timeout.as_millis()
                )));
            }
            _ = self.ended.cancelled() => {
                return Err(self.refused("the tool call it was sent for ended".into()));
            }
            _ = self.cancelled.cancelled() => {
                return Err(self.refused("the server cancelled it".into()))
            }
        };
        match answer {
            Ok(answer) => ask.answer(answer).map_err(|e| {
                self.refused(format!(
                    "the client's answer is not a {} result ({e})",
                    self.method
                ))
            }),
            Err(_) => Err(self.refused("the client retried its call without answering it".into())),
        }
    }

    /// Sends `ask` to the caller as a request on its call's response stream and waits for
    /// the answer; the request is cancelled at the client when the wait is given up.
    async fn in_request(&self, caller: &Caller, ask: Ask) -> Result<Answer, ErrorData> {
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(self.timeout);
        let handle = caller
            .peer
            .send_request_with_option(ask.request(&caller.request), options)
            .await
            .map_err(|e| self.refused(format!("the client could not be reached ({e})")))?;
        let (peer, id) = (handle.peer.clone(), handle.id.clone());
        let cancel = |reason: &str| {
            let (peer, id, reason) = (peer.clone(), id.clone(), reason.to_string());
            tokio::spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        };
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            _ = self.ended.cancelled() => {
                cancel("the tool call it was asked for ended");
                return Err(self.refused("the tool call it was sent for ended".into()));
            }
            _ = self.cancelled.cancelled() => {
                cancel("the MCP server that asked cancelled it");
                return Err(self.refused("the server cancelled it".into()));
            }
        };
        match answer {
            Ok(ClientResult::CreateMessageResult(result)) => Ok(Answer::Sampling(*result)),
            Ok(ClientResult::ElicitResult(result)) => Ok(Answer::Elicitation(result)),
            Ok(ClientResult::ListRootsResult(result)) => Ok(Answer::Roots(result)),
            Ok(_) => Err(self.refused("the client answered with something else".into())),
            // The client's own error goes back as it is.
            Err(ServiceError::McpError(error)) => Err(error),
            Err(ServiceError::Timeout { timeout }) => Err(self.refused(format!(
                "the client did not answer within {} ms (the server's callTimeoutMs)",
                timeout.as_millis()
            ))),
            Err(e) => Err(self.refused(format!("the client could not be reached ({e})"))),
        }
    }
}

/// `method` from `server` refused, and `why`.
fn refusal(method: &str, server: &str, why: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!("toolsearch did not relay {method} from the MCP server {server:?}: {why}"),
        None,
    )
}
