//! Why an upstream MCP server could not be started, reached or listed.
//!
//! Owns: the wording of each such failure (what an operator reads in the server's
//! `UpstreamStatus::Down` and in the log).
//! Never does: word a tool call's failure for the model (the call path builds `ToolError`s).

/// A failure to start, connect to or list an upstream server.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The supervisor's watch pipe could not be created.
    #[error("cannot create the supervisor's pipe: {0}")]
    SupervisorPipe(std::io::Error),
    /// The server's command could not be started.
    #[error("{command:?} could not be started: {source}")]
    Spawn {
        /// The configured command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The child started without its stdio pipes.
    #[error("its stdio pipes could not be opened")]
    NoPipes,
    /// A stdio server did not complete the MCP handshake.
    #[error("the MCP handshake failed ({detail}); {exit}")]
    Handshake {
        /// What the handshake saw, made safe to print.
        detail: String,
        /// How the child ended, when it did.
        exit: String,
    },
    /// A configured HTTP header's name is not a valid header name.
    #[error("header {name:?} is not valid: {detail}")]
    HeaderName {
        /// The name as configured.
        name: String,
        /// Why.
        detail: String,
    },
    /// A configured HTTP header's value is not a valid header value.
    #[error("the value of header {name} is not valid: {detail}")]
    HeaderValue {
        /// The header's name.
        name: String,
        /// Why.
        detail: String,
    },
    /// An HTTP server did not complete the MCP handshake.
    #[error("the MCP handshake with {url} failed: {detail}")]
    HttpHandshake {
        /// The server's URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The server's stream passed a message bound and was cut (the transport's message).
    #[error("{0}")]
    Cut(String),
    /// The server did not start within `startupTimeoutMs`.
    #[error("it did not start within {0} ms")]
    StartTimeout(u128),
    /// A `tools/list` request failed.
    #[error("tools/list failed: {0}")]
    List(String),
    /// A `tools/list` page could not be read (the reader's message).
    #[error("{0}")]
    Page(String),
    /// A `tools/list` answer without its `tools` array.
    #[error("the tools/list answer has no tools array")]
    NoToolsArray,
    /// A `tools/list` answer of another kind.
    #[error("the tools/list answer is not a list of tools")]
    NotAToolList,
    /// More `tools/list` pages than are followed.
    #[error("tools/list had more than {0} pages")]
    TooManyPages(usize),
}
