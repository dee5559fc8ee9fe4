//! The load generator's own MCP client: the sessionless protocol (2026-07-28) over one HTTP/1.1
//! keep-alive connection, on hyper's client connection, with nothing else in the way.
//!
//! `bench serve` measures the server. rmcp's client, as an application would use it, spends more
//! CPU per call than the server does (its service loop, channels and tasks per request; measured
//! with `perf` on this 2-vCPU machine: 39 % of both CPUs in the clients against 32 % in the
//! server), and client and server share the machine's two CPUs: a load generator that costs more
//! than what it loads measures itself. This one does what a wrk-style generator does, in MCP:
//! `server/discover` once, then each call is one POST of a `tools/call` request with the
//! protocol's per-request metadata (`_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers), answered by one JSON body (or an event stream, which it also reads).
//! Every answer is checked: HTTP 200, a JSON-RPC response with the request's id, no `error`,
//! `isError` not true.
//!
//! Owns: [`LeanClient`]. Never does: talk to anything but the loopback URL it is given; keep
//! more than one request in flight; follow redirects or retry.

use anyhow::{Context, Result, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// The protocol version the client speaks.
const VERSION: &str = "2026-07-28";

/// One connection and the client's identity.
pub(super) struct LeanClient {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    token: String,
    next_id: u64,
    connection: tokio::task::JoinHandle<()>,
}

impl Drop for LeanClient {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

/// How one call ended, when it reached the server and came back.
pub(super) enum Answer {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`: its content, for the report.
    ToolError(String),
}

impl LeanClient {
    /// Connects to `url` (`http://127.0.0.1:PORT/mcp`) and discovers the server.
    pub(super) async fn connect(url: &str, token: &str) -> Result<LeanClient> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("the lean client takes an http:// URL, not {url}"))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let stream = tokio::net::TcpStream::connect(authority)
            .await
            .with_context(|| format!("connecting to {authority}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut client = LeanClient {
            sender,
            authority: authority.to_owned(),
            path: format!("/{path}"),
            token: token.to_owned(),
            next_id: 0,
            connection,
        };
        let discovered = client
            .request("server/discover", None, json!({"_meta": meta()}))
            .await
            .context("server/discover")?;
        let supported = discovered["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v == VERSION));
        if !supported {
            bail!("the server does not support MCP {VERSION}: {discovered}");
        }
        Ok(client)
    }

    /// Calls tool `name` with `arguments`.
    pub(super) async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Answer> {
        let result = self
            .request(
                "tools/call",
                Some(name),
                json!({"_meta": meta(), "name": name, "arguments": arguments}),
            )
            .await?;
        if result["isError"] == true {
            return Ok(Answer::ToolError(result["content"].to_string()));
        }
        Ok(Answer::Ok)
    }

    /// One JSON-RPC request; its `result`.
    async fn request(&mut self, method: &str, name: Option<&str>, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))?;
        let mut request = hyper::Request::post(self.path.as_str())
            .header(hyper::header::HOST, self.authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, text/event-stream")
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", self.token),
            )
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let event_stream = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = response.into_body().collect().await?.to_bytes();
        if status != hyper::StatusCode::OK {
            bail!(
                "{method}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            );
        }
        let mut message = if event_stream {
            // The answer among the stream's events (progress notifications may come first).
            std::str::from_utf8(&bytes)?
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|m| m["id"] == id)
                .with_context(|| format!("{method}: no answer on the event stream"))?
        } else {
            serde_json::from_slice::<Value>(&bytes)
                .with_context(|| format!("{method}: the answer is not JSON"))?
        };
        if message["id"] != id {
            bail!(
                "{method}: an answer to id {} instead of {id}",
                message["id"]
            );
        }
        if !message["error"].is_null() {
            bail!("{method}: {}", message["error"]);
        }
        match message.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => bail!("{method}: an answer without a result"),
        }
    }
}

/// The per-request metadata of the sessionless protocol.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "toolsearch-bench", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}
