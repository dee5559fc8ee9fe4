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
//! Results: an MCP tool's result (or `isError` result), reached directly or through
//! `tool_call`, is passed on as its server sent it, the resolved tool named in
//! `_meta["toolsearch/tool"]`; any other tool's or control's JSON result is the call's
//! `structuredContent` (an array is wrapped as `{"result": […]}`) and its compact text the
//! content; a recovered call's hint is a text block of its own; a failure is `isError: true` with the
//! worded message as text and the error object as `structuredContent`. A name that is neither
//! declared nor resolvable is a protocol error (`-32602`, "Unknown tool").
//! Never does: print anything but JSON-RPC on stdout in stdio mode (logs go to stderr).
//!
//! Layout: `handler.rs` (the MCP handler: listing, calls, results, draining), `rounds.rs` (calls
//! in rounds for clients of the 2026-07-28 revision), `stdio.rs` (the stdio transport and the
//! shutdown signal), `http.rs` (the HTTP listener and its routes).

pub(crate) mod handler;
mod http;
mod rounds;
mod stdio;

use std::net::SocketAddr;
use std::time::Duration;

pub use http::HttpListener;
pub use stdio::serve_stdio;

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
