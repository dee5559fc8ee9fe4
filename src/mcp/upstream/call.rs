//! A call of one listed tool: the raw name goes upstream, `callTimeoutMs` bounds it, progress
//! reaches the caller's sink, a dropped call sends `notifications/cancelled`, a connection that
//! broke before the request left (or an expired HTTP session) is retried once; an
//! `input_required` answer (the 2026-07-28 revision) is answered by the call's caller and the
//! call sent again, at most [`MAX_INPUT_ROUNDS`] times; the result as the catalog's output.
//!
//! Never does: word a failure for the model beyond naming the server and why.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, Request, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Map, Value, json};

use super::{Upstream, UpstreamStatus, lock, token_key};
use crate::catalog::{
    BoxFuture, CallContext, FailureKind, SentResult, Tool, ToolError, ToolOutput,
};
use crate::config::McpTransport;
use crate::mcp::PROGRESS;
use crate::mcp::asking::{Ask, MAX_ASKS_PER_CALL};
use crate::mcp::transport::TRANSPORT_ERROR;

/// How many times a call that got its answer yields before it leaves the upstream's calls, so
/// that the tasks handling the server's notifications sent before that answer run first.
const NOTIFICATION_TURNS: usize = 4;

impl Upstream {
    /// The live connection's peer, waiting (up to `startupTimeoutMs`) while the server starts.
    /// The live connection once the server is ready; `not` skips a connection already found
    /// broken (waiting for the restart instead).
    pub(super) async fn ready_peer(
        &self,
        not: Option<u64>,
    ) -> Result<(u64, Peer<RoleClient>), ToolError> {
        let mut status = self.status.subscribe();
        let waited = tokio::time::timeout(self.config.startup_timeout, async {
            loop {
                let current = status.borrow_and_update().clone();
                match current {
                    UpstreamStatus::Ready => {
                        if let Some((generation, peer)) = lock(&self.peer).clone()
                            && Some(generation) != not
                        {
                            return Ok((generation, peer));
                        }
                    }
                    UpstreamStatus::Down(reason) => return Err(reason),
                    UpstreamStatus::Stopped => return Err("the gateway stopped it".to_string()),
                    UpstreamStatus::Starting => {}
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
        let mut params = CallToolRequestParams::new(raw_name.to_string()).with_arguments(arguments);
        let (mut round, mut asked_in_all) = (0, 0);
        loop {
            let request = ClientRequest::CallToolRequest(Request::new(params.clone()));
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
            // Its requests to the client are relayed to this call's caller until it ends.
            let id = handle.id.clone();
            let _asking = self.calls.register(id.clone());
            let mut cancel = CancelOnDrop {
                peer: Some(peer.clone()),
                id: id.clone(),
            };
            let answer = handle.await_response().await;
            cancel.peer = None;
            // The server's notifications sent before its answer (log messages) are handled on
            // tasks of their own, which may not have run yet: this call stays registered, so
            // they still find its caller, until they had their turn.
            for _ in 0..NOTIFICATION_TURNS {
                tokio::task::yield_now().await;
            }
            if registered {
                lock(&self.progress).remove(&token);
            }
            // A server of the 2026-07-28 revision asks in its answer (SEP-2322): its caller
            // answers, and the call is sent again with the answers and the server's state.
            let asked = match answer {
                Ok(ServerResult::InputRequiredResult(asked)) => asked,
                answer => return self.outcome(answer),
            };
            let requests = asked.input_requests.unwrap_or_default();
            asked_in_all += requests.len();
            if round == MAX_INPUT_ROUNDS || asked_in_all > MAX_ASKS_PER_CALL as usize {
                return Err(Broken::Tool(ToolError::new(format!(
                    "the MCP server {:?} kept asking for input (input_required) past \
                     {MAX_INPUT_ROUNDS} rounds or {MAX_ASKS_PER_CALL} requests in one call; the \
                     call was given up",
                    self.config.name
                ))));
            }
            params.input_responses = Some(self.answers(&id, requests).await?);
            params.request_state = asked.request_state;
            round += 1;
        }
    }

    /// The caller's answers to what the server asked in an `input_required` answer of the
    /// call sent as `id`, asked at once (a 2026-07-28 caller gets them in one round).
    async fn answers(
        &self,
        id: &rmcp::model::RequestId,
        requests: rmcp::model::InputRequests,
    ) -> Result<rmcp::model::InputResponses, Broken> {
        let mut asking = tokio::task::JoinSet::new();
        for (key, request) in requests {
            let Some(ask) = Ask::from_input(request) else {
                return Err(Broken::Tool(ToolError::new(format!(
                    "the MCP server {:?} asked for input of a kind toolsearch does not know",
                    self.config.name
                ))));
            };
            let (calls, server, id) = (self.calls.clone(), self.config.name.clone(), id.clone());
            let timeout = self.config.call_timeout;
            asking.spawn(async move {
                let never = tokio_util::sync::CancellationToken::new();
                (key, calls.ask(&server, &id, ask, &never, timeout).await)
            });
        }
        let mut responses = rmcp::model::InputResponses::new();
        while let Some(joined) = asking.join_next().await {
            let Ok((key, answer)) = joined else {
                return Err(Broken::Tool(ToolError::new(
                    "asking the caller failed inside toolsearch (a bug: its task panicked)",
                )));
            };
            let answer = answer.map_err(|refused| {
                Broken::Tool(ToolError::new(format!(
                    "the MCP server {:?} asked for input and got none: {}",
                    self.config.name, refused.message
                )))
            })?;
            responses.insert(key, answer.into_value());
        }
        Ok(responses)
    }

    /// The call's outcome from the server's final answer.
    fn outcome(&self, answer: Result<ServerResult, ServiceError>) -> Result<ToolOutput, Broken> {
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

/// Rounds of `input_required` answers one call may take (SEP-2322; the SDKs' default).
pub const MAX_INPUT_ROUNDS: usize = 10;

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

/// A `tools/call` result as the catalog's output: the result as sent (passed on unchanged by
/// `serve`), and the model's view of it — text blocks joined as the text, `structuredContent`
/// (or else the non-text blocks, each without its data: [`model_view`]) as details.
/// `isError: true` is the tool's own error, carrying the result as sent too.
fn result_output(server: &str, result: CallToolResult) -> Result<ToolOutput, Broken> {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
    let mut texts: Vec<&str> = Vec::new();
    let mut other: Vec<Value> = Vec::new();
    for block in &content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            _ => other.push(model_view(block)),
        }
    }
    let text = texts.join("\n");
    let details = match &result.structured_content {
        Some(structured) => Some(structured.clone()),
        None if !other.is_empty() => Some(json!({"content": other})),
        None => None,
    };
    let sent = Arc::new(SentResult {
        content,
        structured: result.structured_content,
        is_error: result.is_error,
        meta: result.meta.and_then(|meta| serde_json::to_value(meta).ok()),
    });
    if sent.is_error == Some(true) {
        let message = if text.is_empty() {
            format!("the MCP server {server:?} reported an error without text")
        } else {
            text
        };
        return Err(Broken::Tool(ToolError::new(message).with_sent(sent)));
    }
    Ok(ToolOutput {
        text: (!text.is_empty()).then_some(text),
        details,
        sent: Some(sent),
    })
}

/// A non-text content block as the model reads it (in details and code cells): an image's or
/// audio's base64 data, and an embedded resource's blob, become their decoded size in `bytes`;
/// everything else (a resource link, an embedded resource's text, annotations) stays.
fn model_view(block: &Value) -> Value {
    let mut view = block.clone();
    let Some(object) = view.as_object_mut() else {
        return view;
    };
    match object.get("type").and_then(Value::as_str) {
        Some("image" | "audio") => {
            if let Some(Value::String(data)) = object.remove("data") {
                object.insert("bytes".into(), base64_len(&data).into());
            }
        }
        Some("resource") => {
            if let Some(resource) = object.get_mut("resource").and_then(Value::as_object_mut)
                && let Some(Value::String(blob)) = resource.remove("blob")
            {
                resource.insert("bytes".into(), base64_len(&blob).into());
            }
        }
        _ => {}
    }
    view
}

/// How many bytes a base64 string decodes to (padding and whitespace aside; not validated).
fn base64_len(data: &str) -> usize {
    let digits = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    digits * 3 / 4
}

/// The executor of one listed MCP tool: the raw name goes upstream.
pub(super) struct McpTool {
    pub(super) upstream: Weak<Upstream>,
    pub(super) raw_name: String,
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
