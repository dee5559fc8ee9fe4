//! The mock provider: an OpenAI-compatible `/v1/chat/completions` server (hyper 1 + hyper-util)
//! whose model is the deterministic script of `script.rs` — the one simulated party of the
//! end-to-end tests and benchmarks (SPEC R-12.1).
//!
//! Owns: the HTTP server (`POST /v1/chat/completions` and `/chat/completions`,
//! `GET /debug/requests` — add `?bodies=1` for raw bodies —, `DELETE /debug/requests`,
//! `GET /health`), the record of every raw request (bytes, declared tool count and names, the
//! inferred mode, what the script did), fault injection per request ([`Fault`]: HTTP errors,
//! malformed answers, an unknown tool, non-JSON arguments, a stall, a flood of calls in one
//! answer, two calls under one id), a model that repeats its first move forever, calls written
//! as text (for lenient parsing), and small-model behaviours that get the controls' shape wrong
//! ([`SmallModel`](super::script::SmallModel)). The scenario and its faults are defined with the
//! script that plays them.
//!
//! Never does: listen on a non-loopback address unless started with
//! [`MockProvider::start_any_address`]; run tools; keep state between requests beyond the
//! request counter that drives faults.
//!
//! Bounds: request bodies ≤ [`MAX_REQUEST_BYTES`] (413 beyond); ≤ [`MAX_CONNECTIONS`]
//! connections at once (more are closed); headers must arrive within 30 s; at most
//! [`MAX_RECORDS`] records, whose raw bodies are kept up to [`MAX_KEPT_BODY_BYTES`] in all
//! (older bodies are dropped first); a stall lasts at most 600 s. Token counts in `usage` are
//! estimates (⌈bytes / 4⌉), marked as such by the model name `toolsearch-mock`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use serde_json::{Value, json};

use super::script::{self, Action, Fault, MAX_FLOOD_CALLS, MockScenario, Seen};
use crate::sync::lock;

/// Largest request body accepted.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;
/// Most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Most requests recorded.
pub const MAX_RECORDS: usize = 10_000;
/// Raw bodies kept in all (newest first).
pub const MAX_KEPT_BODY_BYTES: usize = 64 << 20;
/// Longest stall.
pub const MAX_STALL: Duration = Duration::from_secs(600);

/// One request the mock received.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// 0-based, over chat requests.
    pub index: usize,
    /// The request path.
    pub path: String,
    /// Bytes of the raw body.
    pub bytes: usize,
    /// How many tools it declared.
    pub declared_tools: usize,
    /// Their names, in order.
    pub tool_names: Vec<String>,
    /// How many messages it carried.
    pub messages: usize,
    /// The mode the script inferred (`direct`, `tools`, `directory`, `code`).
    pub mode: Option<String>,
    /// What the mock did: `call NAME`, `answer`, `refuse NAME`, `fault KIND`, `bad request`.
    pub action: String,
    /// The raw body (dropped for old requests past the retention bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// The mock could not start.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// A non-loopback address without [`MockProvider::start_any_address`].
    #[error(
        "{addr} is not a loopback address; the mock provider listens on 127.0.0.1 or ::1 unless told otherwise (--allow-remote)"
    )]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

#[derive(Default)]
struct Records {
    requests: VecDeque<RecordedRequest>,
    kept_bytes: usize,
}

struct State {
    scenario: Mutex<MockScenario>,
    records: Mutex<Records>,
    counter: AtomicUsize,
}

impl State {
    fn record(&self, mut request: RecordedRequest) {
        let mut records = lock(&self.records);
        if records.requests.len() >= MAX_RECORDS
            && let Some(old) = records.requests.pop_front()
        {
            records.kept_bytes -= old.body.map_or(0, |b| b.len());
        }
        let size = request.body.as_ref().map_or(0, String::len);
        if size > MAX_KEPT_BODY_BYTES {
            request.body = None;
        } else {
            records.kept_bytes += size;
            let mut i = 0;
            while records.kept_bytes > MAX_KEPT_BODY_BYTES && i < records.requests.len() {
                if let Some(body) = records.requests[i].body.take() {
                    records.kept_bytes -= body.len();
                }
                i += 1;
            }
        }
        records.requests.push_back(request);
    }
}

/// A running mock provider. Dropping it stops the server.
pub struct MockProvider {
    addr: SocketAddr,
    state: Arc<State>,
    stop: tokio::sync::watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for MockProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockProvider")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MockProvider {
    /// Starts the mock on a loopback address (`127.0.0.1:0` picks a free port) on the current
    /// Tokio runtime.
    pub async fn start(listen: SocketAddr, scenario: MockScenario) -> Result<Self, MockError> {
        if !listen.ip().is_loopback() {
            return Err(MockError::NotLoopback { addr: listen });
        }
        Self::start_any_address(listen, scenario).await
    }

    /// Starts the mock on any address, loopback or not.
    pub async fn start_any_address(
        listen: SocketAddr,
        scenario: MockScenario,
    ) -> Result<Self, MockError> {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| MockError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| MockError::Bind {
            addr: listen,
            source,
        })?;
        let state = Arc::new(State {
            scenario: Mutex::new(scenario),
            records: Mutex::new(Records::default()),
            counter: AtomicUsize::new(0),
        });
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(serve(listener, state.clone(), stopped));
        Ok(MockProvider {
            addr,
            state,
            stop,
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL (`http://127.0.0.1:PORT`), to give an agent as the provider.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every chat request received (oldest first), raw bodies included while retained.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.records).requests.iter().cloned().collect()
    }

    /// Forgets the recorded requests and re-arms the faults.
    pub fn clear(&self) {
        let mut records = lock(&self.state.records);
        records.requests.clear();
        records.kept_bytes = 0;
        self.state.counter.store(0, Ordering::SeqCst);
    }

    /// Replaces the scenario (recorded requests are kept; faults count from the next
    /// [`MockProvider::clear`]).
    pub fn set_scenario(&self, scenario: MockScenario) {
        *lock(&self.state.scenario) = scenario;
    }

    /// Stops accepting, ends open connections and waits for the server task.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        // Out of descriptors and the like: back off instead of spinning.
                        tracing::warn!(%error, "mock provider accept failed");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    continue;
                };
                let state = state.clone();
                connections.spawn(async move {
                    let _permit = permit;
                    let service = hyper::service::service_fn(move |request| {
                        handle(state.clone(), request)
                    });
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder
                        .timer(TokioTimer::new())
                        .header_read_timeout(Duration::from_secs(30));
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
    connections.abort_all();
}

fn reply(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or_default().to_string();
    Ok(match (request.method().clone(), path.as_str()) {
        (Method::GET, "/health") => reply(StatusCode::OK, &json!({"status": "ok"})),
        (Method::GET, "/debug/requests") => {
            let bodies = query.split('&').any(|p| p == "bodies=1");
            let requests: Vec<RecordedRequest> = lock(&state.records)
                .requests
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    if !bodies {
                        r.body = None;
                    }
                    r
                })
                .collect();
            reply(StatusCode::OK, &json!({"requests": requests}))
        }
        (Method::DELETE, "/debug/requests") => {
            let mut records = lock(&state.records);
            records.requests.clear();
            records.kept_bytes = 0;
            state.counter.store(0, Ordering::SeqCst);
            reply(StatusCode::OK, &json!({"cleared": true}))
        }
        (Method::POST, "/v1/chat/completions" | "/chat/completions") => {
            chat(&state, path, request.into_body()).await
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            &json!({"error": {"message": format!("no route {path}; POST /v1/chat/completions")}}),
        ),
    })
}

async fn chat(state: &State, path: String, body: Incoming) -> Response<Full<Bytes>> {
    let bytes = match Limited::new(body, MAX_REQUEST_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                &json!({"error": {"message": format!("request body over {MAX_REQUEST_BYTES} bytes")}}),
            );
        }
    };
    let index = state.counter.fetch_add(1, Ordering::SeqCst);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut record = RecordedRequest {
        index,
        path,
        bytes: bytes.len(),
        declared_tools: 0,
        tool_names: Vec::new(),
        messages: 0,
        mode: None,
        action: String::new(),
        body: Some(text),
    };
    let request: Value = match serde_json::from_slice(&bytes) {
        Ok(value) => value,
        Err(error) => {
            record.action = "bad request".into();
            state.record(record);
            return reply(
                StatusCode::BAD_REQUEST,
                &json!({"error": {"message": format!("the body is not JSON: {error}")}}),
            );
        }
    };
    let scenario = lock(&state.scenario).clone();
    let seen = Seen::of(&request);
    record.declared_tools = seen.declared.len();
    record.tool_names = seen.declared.iter().map(|s| s.to_string()).collect();
    record.messages = seen.messages.len();
    let (mode, action) = script::next(&scenario, &seen);
    record.mode = Some(mode.to_string());
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("toolsearch-mock")
        .to_string();
    let to = Answering {
        model: &model,
        index,
        request_bytes: bytes.len(),
    };

    if let Some(fault) = scenario.faults.get(index).copied() {
        record.action = format!("fault {}", fault.label());
        let first_declared = seen.declared.first().map(|s| s.to_string());
        state.record(record);
        return fault_reply(fault, &to, &action, first_declared, scenario.text_calls).await;
    }

    record.action = match &action {
        Action::Call { name, .. } => format!("call {name}"),
        Action::Answer(_) => "answer".into(),
        Action::Refuse { name } => format!("refuse {name}"),
    };
    state.record(record);
    completion(&model, index, &action, scenario.text_calls, bytes.len())
}

/// The request an answer goes to: the model it named, its number and its size in bytes.
struct Answering<'a> {
    model: &'a str,
    index: usize,
    request_bytes: usize,
}

/// The answer with `fault` injected, in place of the scripted `action` (`first_declared` is
/// the first tool the request declared; `text_calls` as in the scenario).
async fn fault_reply(
    fault: Fault,
    to: &Answering<'_>,
    action: &Action,
    first_declared: Option<String>,
    text_calls: bool,
) -> Response<Full<Bytes>> {
    match fault {
        Fault::Status(status) => status_reply(status),
        Fault::Malformed => {
            let mut response = Response::new(Full::new(Bytes::from_static(
                b"{\"id\": \"mock\", \"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"cut of",
            )));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        Fault::UnknownTool => completion(
            to.model,
            to.index,
            &Action::Call {
                name: "no_such_tool".into(),
                arguments: json!({}),
            },
            false,
            to.request_bytes,
        ),
        Fault::BadArguments => {
            let name = match action {
                Action::Call { name, .. } => name.clone(),
                _ => first_declared.unwrap_or_else(|| "tool_search".into()),
            };
            raw_call(
                to.model,
                to.index,
                &name,
                "{\"query\": \"unterminated",
                to.request_bytes,
            )
        }
        Fault::Stall(seconds) => {
            tokio::time::sleep(Duration::from_secs(seconds).min(MAX_STALL)).await;
            completion(to.model, to.index, action, text_calls, to.request_bytes)
        }
        Fault::Flood(_) | Fault::DuplicateIds => flood_reply(fault, to, action, first_declared),
    }
}

/// An error answer with HTTP `status` (429 with `Retry-After: 1`).
fn status_reply(status: u16) -> Response<Full<Bytes>> {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = reply(
        code,
        &json!({"error": {"message": format!("mock fault: HTTP {status}")}}),
    );
    if status == 429 {
        response.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
    }
    response
}

/// One answer with many calls of the scripted tool ([`Fault::Flood`]), or two under one id
/// ([`Fault::DuplicateIds`]).
fn flood_reply(
    fault: Fault,
    to: &Answering<'_>,
    action: &Action,
    first_declared: Option<String>,
) -> Response<Full<Bytes>> {
    let index = to.index;
    let (name, arguments) = match action {
        Action::Call { name, arguments } => (name.clone(), arguments.clone()),
        _ => (
            first_declared.unwrap_or_else(|| "tool_search".into()),
            json!({}),
        ),
    };
    let with = |i: u32| {
        let mut arguments = arguments.clone();
        if let Value::Object(map) = &mut arguments {
            map.insert("flood".into(), json!(i));
        }
        arguments.to_string()
    };
    let call = |id: String, arguments: String| {
        json!({"id": id, "type": "function",
               "function": {"name": name, "arguments": arguments}})
    };
    let calls: Vec<Value> = match fault {
        Fault::Flood(n) => (0..n.min(MAX_FLOOD_CALLS))
            .map(|i| call(format!("call_{index}_{i}"), with(i)))
            .collect(),
        _ => vec![
            call(format!("call_{index}_dup"), arguments.to_string()),
            call(format!("call_{index}_dup"), with(1)),
        ],
    };
    let message = json!({"role": "assistant", "content": null, "tool_calls": calls});
    envelope(to.model, index, message, "tool_calls", to.request_bytes)
}

fn usage(request_bytes: usize, message: &Value) -> Value {
    let prompt = request_bytes.div_ceil(4);
    let completion = message.to_string().len().div_ceil(4);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

fn envelope(
    model: &str,
    index: usize,
    message: Value,
    finish: &str,
    request_bytes: usize,
) -> Response<Full<Bytes>> {
    let usage = usage(request_bytes, &message);
    reply(
        StatusCode::OK,
        &json!({
            "id": format!("mock-{index}"),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }),
    )
}

fn raw_call(
    model: &str,
    index: usize,
    name: &str,
    arguments: &str,
    request_bytes: usize,
) -> Response<Full<Bytes>> {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": format!("call_{index}_0"), "type": "function",
                        "function": {"name": name, "arguments": arguments}}],
    });
    envelope(model, index, message, "tool_calls", request_bytes)
}

fn completion(
    model: &str,
    index: usize,
    action: &Action,
    text_calls: bool,
    request_bytes: usize,
) -> Response<Full<Bytes>> {
    match action {
        Action::Call { name, arguments } if text_calls => {
            let call = json!({"name": name, "arguments": arguments}).to_string();
            let content = if index.is_multiple_of(2) {
                format!("<tool_call>\n{call}\n</tool_call>")
            } else {
                format!("I will call {name}.\n```json\n{call}\n```")
            };
            let message = json!({"role": "assistant", "content": content});
            envelope(model, index, message, "stop", request_bytes)
        }
        Action::Call { name, arguments } => {
            raw_call(model, index, name, &arguments.to_string(), request_bytes)
        }
        Action::Answer(text) => {
            let message = json!({"role": "assistant", "content": text});
            envelope(model, index, message, "stop", request_bytes)
        }
        Action::Refuse { name } => {
            let message = json!({"role": "assistant", "content": format!(
                "mock provider: refusing to call {name}: this request does not declare it"
            )});
            envelope(model, index, message, "stop", request_bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn faults_parse() {
        assert_eq!(Fault::parse("500"), Some(Fault::Status(500)));
        assert_eq!(Fault::parse(" 429 "), Some(Fault::Status(429)));
        assert_eq!(Fault::parse("200"), None);
        assert_eq!(Fault::parse("malformed"), Some(Fault::Malformed));
        assert_eq!(Fault::parse("unknown-tool"), Some(Fault::UnknownTool));
        assert_eq!(Fault::parse("bad-args"), Some(Fault::BadArguments));
        assert_eq!(Fault::parse("stall:2"), Some(Fault::Stall(2)));
        assert_eq!(Fault::parse("flood:10000"), Some(Fault::Flood(10_000)));
        assert_eq!(Fault::parse("flood:0"), None);
        assert_eq!(Fault::parse("duplicate-ids"), Some(Fault::DuplicateIds));
        assert_eq!(Fault::parse("nonsense"), None);
    }

    #[test]
    fn records_keep_bodies_within_the_bound() {
        let state = State {
            scenario: Mutex::new(MockScenario::default()),
            records: Mutex::new(Records::default()),
            counter: AtomicUsize::new(0),
        };
        let big = "x".repeat(MAX_KEPT_BODY_BYTES / 2 + 1);
        for index in 0..3 {
            state.record(RecordedRequest {
                index,
                path: "/".into(),
                bytes: big.len(),
                declared_tools: 0,
                tool_names: vec![],
                messages: 0,
                mode: None,
                action: String::new(),
                body: Some(big.clone()),
            });
        }
        let records = lock(&state.records);
        assert!(records.kept_bytes <= MAX_KEPT_BODY_BYTES);
        assert!(records.requests[0].body.is_none());
        assert!(records.requests[2].body.is_some());
    }
}
