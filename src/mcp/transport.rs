//! The client transport of a stdio upstream: newline-delimited JSON-RPC on the child's stdout
//! and stdin, each message checked against the message bounds and parsed from its bytes.
//!
//! Owns: reading one message at a time (never buffering more than [`MAX_MCP_MESSAGE_BYTES`] of
//! it: past that the stream is cut, the reason recorded in the [`Violation`] slot, and the
//! connection ends as before); checking each whole message — valid UTF-8, nesting within
//! [`MAX_MCP_MESSAGE_DEPTH`] — and turning it into rmcp's typed message without intermediate
//! trees: the envelope is read with borrowed raw values (`id`, `result`, `error`), and a response
//! is parsed straight into the result type its request expects (the transport remembers the
//! method of each `initialize`, `tools/list`, `tools/call` and `resources/read` request it sends;
//! a `tools/call` answer that is not a result is tried as an `input_required` one). A `tools/list`
//! answer is handed to the lister unparsed — `ServerResult::CustomResult(Value::String(the
//! message's text))`, a private convention with `upstream/listing.rs` — which reads it entry by entry
//! (`ingest::read_page`), so one malformed or deep tool costs only itself and a page is never
//! held as a tree. Everything else (server requests, notifications, answers to other requests)
//! goes through rmcp's own decoding, up to [`MAX_UNTYPED_MESSAGE_BYTES`].
//!
//! A message that breaks a bound or is not UTF-8 fails the request it answers at once: the
//! transport answers that request id with a JSON-RPC error ([`TRANSPORT_ERROR`]) naming the
//! server and the bound or the reason, and the connection goes on. A request or notification
//! from the server that breaks one is dropped with a warning naming it. Text that is not JSON
//! (a server's stray log lines on stdout) is skipped, as rmcp does.
//!
//! Never does: interpret a tool's result or listing (the upstream and ingestion do), or retry.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientNotification, ClientRequest, CustomResult,
    ErrorCode, ErrorData, InitializeResult, InputRequiredResult, JsonRpcError, JsonRpcMessage,
    JsonRpcResponse, JsonRpcVersion2_0, ReadResourceResult, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::bounded::{Violation, nesting};
use crate::config::input::{MAX_MCP_MESSAGE_BYTES, MAX_MCP_MESSAGE_DEPTH};
use crate::sync::lock;

/// Largest message decoded by rmcp's generic (untyped-union) decoding: server requests,
/// notifications and answers to requests other than `initialize`, `tools/list`, `tools/call`
/// and `resources/read`. That decoding buffers a message several times over, so larger ones are
/// refused (an answer: its request fails naming this bound; anything else is dropped).
pub const MAX_UNTYPED_MESSAGE_BYTES: usize = 1024 * 1024;

/// The JSON-RPC error code of the errors this transport answers a request with (a message that
/// broke a bound, was not UTF-8, or did not have the shape its request expects). In the
/// implementation-defined server-error range; `upstream/call.rs` words these as the server's fault.
pub const TRANSPORT_ERROR: ErrorCode = ErrorCode(-32090);

/// Requests whose answers are remembered at most (past it, answers take the generic path).
const MAX_EXPECTED: usize = 4096;

/// A read buffer above this capacity is released after its message.
const KEEP_BUFFER_BYTES: usize = 1024 * 1024;

/// What the answer to a request is parsed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Initialize,
    ToolsList,
    ToolsCall,
    ResourcesRead,
}

/// The envelope of one message: every member a raw slice of it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

type Writer<W> = Arc<tokio::sync::Mutex<Option<W>>>;

/// The stdio client transport (see the module docs).
pub struct StdioClient<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    writer: Writer<W>,
    expected: Arc<Mutex<HashMap<RequestId, Expect>>>,
    /// `the MCP server "name"`, for reasons.
    peer: String,
    violation: Violation,
    cut: bool,
}

enum Line {
    Ready,
    TooLarge,
    Eof,
}

/// An answer to the `tools/list` request with this id: left undecoded, the line's text is
/// handed to the lister.
struct ToolsListAnswer(RequestId);

impl<R, W> StdioClient<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads from `stdout`, writes to `stdin`; `peer` names the server in reasons
    /// (`the MCP server "x"`), `violation` receives why the stream was cut, if it is.
    pub fn new(stdout: R, stdin: W, peer: impl Into<String>, violation: Violation) -> Self {
        StdioClient {
            reader: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::new(),
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            expected: Arc::new(Mutex::new(HashMap::new())),
            peer: peer.into(),
            violation,
            cut: false,
        }
    }

    /// Reads one `\n`-terminated line into `self.line` without letting it pass the message
    /// bound. Cancellation-safe: a partial line stays in `self.line` for the next call.
    async fn read_line(&mut self) -> std::io::Result<Line> {
        loop {
            let (consumed, done) = {
                let available = self.reader.fill_buf().await?;
                if available.is_empty() {
                    return Ok(Line::Eof);
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let content = take - usize::from(newline.is_some());
                if self.line.len() + content > MAX_MCP_MESSAGE_BYTES {
                    return Ok(Line::TooLarge);
                }
                self.line.extend_from_slice(&available[..take]);
                (take, newline.is_some())
            };
            AsyncBufReadExt::consume(&mut self.reader, consumed);
            if done {
                return Ok(Line::Ready);
            }
        }
    }

    fn error_for(&self, id: RequestId, message: String) -> ServerJsonRpcMessage {
        tracing::warn!("{message}");
        JsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(id),
            error: ErrorData::new(TRANSPORT_ERROR, message, None),
        })
    }

    /// The message `line` carries, if any (see the module docs). Takes the line's buffer when
    /// the message keeps its text (a `tools/list` answer).
    fn decode(&mut self, mut line: Vec<u8>) -> (Option<ServerJsonRpcMessage>, Option<Vec<u8>>) {
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        let start = if line.starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        let message = match self.decode_text(&line[start..]) {
            Ok(message) => message,
            Err(ToolsListAnswer(id)) => {
                // Handed over as text: the lister reads it entry by entry.
                line.drain(..start);
                let Ok(text) = String::from_utf8(line) else {
                    return (None, None);
                };
                return (
                    Some(JsonRpcMessage::Response(JsonRpcResponse {
                        jsonrpc: JsonRpcVersion2_0,
                        id,
                        result: ServerResult::CustomResult(CustomResult::new(Value::String(text))),
                    })),
                    None,
                );
            }
        };
        (message, Some(line))
    }

    /// The message the bytes of one line (without its terminator and byte-order mark) carry,
    /// if any.
    fn decode_text(&self, bytes: &[u8]) -> Result<Option<ServerJsonRpcMessage>, ToolsListAnswer> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                let reason = format!(
                    "{} sent a JSON-RPC message that is not valid UTF-8 (an invalid byte at \
                     offset {} of {} bytes); it was dropped",
                    self.peer,
                    error.valid_up_to(),
                    bytes.len()
                );
                let lossy = String::from_utf8_lossy(bytes);
                return Ok(self.refuse(&lossy, reason));
            }
        };
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(text) else {
            tracing::debug!(server = %self.peer, "skipping a line that is not a JSON-RPC message");
            return Ok(None);
        };
        let depth = nesting(text.as_bytes());
        let is_answer =
            envelope.method.is_none() && (envelope.result.is_some() || envelope.error.is_some());
        let id = envelope
            .id
            .and_then(|raw| serde_json::from_str::<RequestId>(raw.get()).ok());
        let (Some(id), true) = (id.clone(), is_answer) else {
            return Ok(self.server_message(text, depth));
        };
        self.decode_answer(text, &envelope, id, depth)
    }

    /// A request or a notification of the server's (`text`, nested `depth` levels deep);
    /// dropped with a warning past the bounds.
    fn server_message(&self, text: &str, depth: usize) -> Option<ServerJsonRpcMessage> {
        if depth > MAX_MCP_MESSAGE_DEPTH || text.len() > MAX_UNTYPED_MESSAGE_BYTES {
            tracing::warn!(
                "{} sent a request or notification of {} bytes nested {depth} levels deep, past \
                 MAX_UNTYPED_MESSAGE_BYTES ({MAX_UNTYPED_MESSAGE_BYTES}) or \
                 MAX_MCP_MESSAGE_DEPTH ({MAX_MCP_MESSAGE_DEPTH}); it was dropped",
                self.peer,
                text.len()
            );
            return None;
        }
        generic(text, &self.peer)
    }

    /// The answer `text` (its `envelope`, nested `depth` levels deep) to the request `id`,
    /// parsed as that request expects.
    fn decode_answer(
        &self,
        text: &str,
        envelope: &Envelope<'_>,
        id: RequestId,
        depth: usize,
    ) -> Result<Option<ServerJsonRpcMessage>, ToolsListAnswer> {
        let expect = lock(&self.expected).remove(&id);
        if let Some(error) = envelope.error {
            let message = match serde_json::from_str::<ErrorData>(error.get()) {
                Ok(error) => JsonRpcMessage::Error(JsonRpcError {
                    jsonrpc: JsonRpcVersion2_0,
                    id: Some(id),
                    error,
                }),
                Err(e) => self.error_for(
                    id,
                    format!(
                        "{} answered with a malformed JSON-RPC error ({e})",
                        self.peer
                    ),
                ),
            };
            return Ok(Some(message));
        }
        if expect != Some(Expect::ToolsList) && depth > MAX_MCP_MESSAGE_DEPTH {
            let message = self.error_for(
                id,
                format!(
                    "{} sent a JSON-RPC message nested {depth} levels deep, deeper than \
                     {MAX_MCP_MESSAGE_DEPTH} levels of arrays and objects (limit \
                     MAX_MCP_MESSAGE_DEPTH); the answer was dropped",
                    self.peer
                ),
            );
            return Ok(Some(message));
        }
        let Some(result) = envelope.result else {
            return Ok(None);
        };
        let message = match expect {
            Some(Expect::ToolsCall) => self.typed(
                id,
                serde_json::from_str::<CallToolResult>(result.get())
                    .map(ServerResult::CallToolResult)
                    .or_else(|e| {
                        // The 2026-07-28 revision's question in place of a result (SEP-2322).
                        serde_json::from_str::<InputRequiredResult>(result.get())
                            .map(ServerResult::InputRequiredResult)
                            .map_err(|_| e)
                    }),
                "tools/call",
            ),
            Some(Expect::ResourcesRead) => self.typed(
                id,
                serde_json::from_str::<ReadResourceResult>(result.get())
                    .map(ServerResult::ReadResourceResult),
                "resources/read",
            ),
            Some(Expect::Initialize) => self.typed(
                id,
                serde_json::from_str::<InitializeResult>(result.get())
                    .map(ServerResult::InitializeResult),
                "initialize",
            ),
            Some(Expect::ToolsList) => return Err(ToolsListAnswer(id)),
            None if text.len() > MAX_UNTYPED_MESSAGE_BYTES => self.error_for(
                id,
                format!(
                    "{} sent an answer of {} bytes to a request whose answers are read only up \
                     to {MAX_UNTYPED_MESSAGE_BYTES} bytes (limit MAX_UNTYPED_MESSAGE_BYTES); it \
                     was dropped",
                    self.peer,
                    text.len()
                ),
            ),
            None => match generic(text, &self.peer) {
                Some(message) => message,
                None => self.error_for(
                    id,
                    format!("{} answered with a malformed JSON-RPC message", self.peer),
                ),
            },
        };
        Ok(Some(message))
    }

    /// The answer to `what` (request `id`) with its parsed `result`, or the error naming why
    /// it is malformed.
    fn typed(
        &self,
        id: RequestId,
        result: Result<ServerResult, serde_json::Error>,
        what: &str,
    ) -> ServerJsonRpcMessage {
        match result {
            Ok(result) => JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion2_0,
                id,
                result,
            }),
            Err(e) => self.error_for(
                id,
                format!(
                    "{} answered {what} with a malformed result ({e})",
                    self.peer
                ),
            ),
        }
    }

    /// The error answering the request a message that broke a bound was for (found from the
    /// message's lossy text), or nothing when it names no request.
    fn refuse(&self, lossy: &str, reason: String) -> Option<ServerJsonRpcMessage> {
        let envelope = serde_json::from_str::<Envelope<'_>>(lossy).ok();
        let id = envelope
            .as_ref()
            .filter(|e| e.method.is_none())
            .and_then(|e| e.id)
            .and_then(|raw| serde_json::from_str::<RequestId>(raw.get()).ok());
        match id {
            Some(id) => {
                lock(&self.expected).remove(&id);
                Some(self.error_for(id, reason))
            }
            None => {
                tracing::warn!("{reason}");
                None
            }
        }
    }
}

/// rmcp's own decoding of a (small) message; `None` when it is not one rmcp knows (rmcp ignores
/// those too).
fn generic(text: &str, peer: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(message) => Some(message),
        Err(error) => {
            tracing::debug!(server = %peer, %error, "skipping a message rmcp does not decode");
            None
        }
    }
}

impl<R, W> Transport<RoleClient> for StdioClient<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(request) => {
                let expect = match &request.request {
                    ClientRequest::InitializeRequest(_) => Some(Expect::Initialize),
                    ClientRequest::ListToolsRequest(_) => Some(Expect::ToolsList),
                    ClientRequest::CallToolRequest(_) => Some(Expect::ToolsCall),
                    ClientRequest::ReadResourceRequest(_) => Some(Expect::ResourcesRead),
                    _ => None,
                };
                if let Some(expect) = expect {
                    let mut expected = lock(&self.expected);
                    if expected.len() < MAX_EXPECTED {
                        expected.insert(request.id.clone(), expect);
                    }
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    lock(&self.expected).remove(id);
                }
            }
            _ => {}
        }
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        let writer = self.writer.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut writer = writer.lock().await;
            match writer.as_mut() {
                Some(writer) => {
                    writer.write_all(&bytes).await?;
                    writer.flush().await
                }
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if self.cut {
                return None;
            }
            match self.read_line().await {
                Ok(Line::Ready) => {}
                Ok(Line::Eof) => return None,
                Ok(Line::TooLarge) => {
                    let reason = format!(
                        "{} sent a JSON-RPC message larger than {MAX_MCP_MESSAGE_BYTES} bytes \
                         (limit MAX_MCP_MESSAGE_BYTES); the connection was closed",
                        self.peer
                    );
                    tracing::warn!("{reason}");
                    if let Ok(mut slot) = self.violation.lock() {
                        *slot = Some(reason);
                    }
                    self.cut = true;
                    self.line = Vec::new();
                    return None;
                }
                Err(error) => {
                    tracing::warn!(server = %self.peer, %error, "reading the server's stdout failed");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let (message, buffer) = self.decode(line);
            if let Some(mut buffer) = buffer
                && buffer.capacity() <= KEEP_BUFFER_BYTES
            {
                buffer.clear();
                self.line = buffer;
            }
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut writer = self.writer.lock().await;
        if let Some(mut writer) = writer.take() {
            let _ = writer.shutdown().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn client() -> StdioClient<&'static [u8], Vec<u8>> {
        StdioClient::new(
            &b""[..],
            Vec::new(),
            "the MCP server \"t\"",
            Violation::default(),
        )
    }

    fn expect(client: &StdioClient<&'static [u8], Vec<u8>>, id: i64, what: Expect) {
        lock(&client.expected).insert(RequestId::Number(id), what);
    }

    fn error_text(message: Option<ServerJsonRpcMessage>) -> String {
        match message {
            Some(JsonRpcMessage::Error(error)) => error.error.message.to_string(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn a_tools_list_answer_is_handed_over_as_text() {
        let mut client = client();
        expect(&client, 1, Expect::ToolsList);
        let line =
            br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":[1]}]}}"#;
        let (message, buffer) = client.decode(line.to_vec());
        assert!(buffer.is_none());
        let Some(JsonRpcMessage::Response(response)) = message else {
            panic!("{message:?}")
        };
        let ServerResult::CustomResult(CustomResult(Value::String(text))) = response.result else {
            panic!("{:?}", response.result)
        };
        assert_eq!(text.as_bytes(), line);
    }

    #[test]
    fn invalid_utf8_and_deep_answers_fail_their_request_naming_the_server() {
        let mut client = client();
        expect(&client, 7, Expect::ToolsCall);
        let mut line =
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"#.to_vec();
        line.extend_from_slice(&[0xff, 0xfe]);
        line.extend_from_slice(br#""}]}}"#);
        let (message, _) = client.decode(line);
        let text = error_text(message);
        assert!(
            text.contains("\"t\"") && text.contains("not valid UTF-8"),
            "{text}"
        );

        expect(&client, 8, Expect::ToolsCall);
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":8,"result":{{"content":[],"structuredContent":{}1{}}}}}"#,
            "[".repeat(150),
            "]".repeat(150)
        );
        let text = error_text(client.decode(deep.into_bytes()).0);
        assert!(text.contains("MAX_MCP_MESSAGE_DEPTH"), "{text}");

        // A call's answer of the wrong shape fails at once too.
        expect(&client, 9, Expect::ToolsCall);
        let text = error_text(
            client
                .decode(br#"{"jsonrpc":"2.0","id":9,"result":{"content":7}}"#.to_vec())
                .0,
        );
        assert!(text.contains("tools/call"), "{text}");
    }

    #[test]
    fn stray_text_is_skipped_and_notifications_decode() {
        let mut client = client();
        assert!(client.decode(b"not json at all".to_vec()).0.is_none());
        let (message, _) = client
            .decode(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec());
        assert!(matches!(message, Some(JsonRpcMessage::Notification(_))));
    }
}
