//! What a call yields: the envelope, a pending client call, or an error for the model.
//!
//! Every [`CallError`] is an answer to the model (bad arguments, unknown or denied tool — same
//! text, R-2.2 — blocks, tool failures), never a reason to stop the gateway. Its `message` says
//! what happened in neutral words; its [`Recovery`] says structurally what to do next, and the
//! surface words that for the controls the model actually has (`tool_search` in tools mode,
//! `openclaw.tools.search` in a code cell, the tool's own name in direct mode). Nothing here
//! names a control.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::{FailureKind, SentResult, Source, ToolOutput};

/// The tool a result came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolRef {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// core, plugin, mcp or client.
    pub source: Source,
}

/// `{tool: {id, name, source}, result}`. JSON results sit in `result.details`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope {
    /// Which tool answered.
    pub tool: ToolRef,
    /// What it returned.
    pub result: ToolOutput,
}

impl Envelope {
    /// The envelope as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "tool": self.tool,
            "result": self.result,
        })
    }
}

/// A client tool call the caller must execute and complete (client tools never run here).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientCall {
    /// Pass back to `Gateway::complete_client_call`.
    pub call_id: String,
    /// The client tool.
    pub tool: ToolRef,
    /// The arguments to run it with.
    pub args: Value,
}

/// What kind of failure a [`CallError`] is (stable; used by logs, telemetry and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request is not a call at all (not an object, no selector…).
    BadRequest,
    /// No allowed tool matches (also the answer for a denied tool).
    UnknownTool,
    /// Several allowed tools match.
    Ambiguous,
    /// A direct-only tool called through the catalog.
    DirectOnly,
    /// A client tool called where only the gateway could run it (e.g. from a code cell).
    ClientTool,
    /// An approval handler said no, or none was available.
    ApprovalDenied,
    /// A `before_tool_call` hook blocked the call.
    BlockedByHook,
    /// The arguments do not match the input schema.
    InvalidArguments,
    /// The tool's trusted input or output schema does not compile.
    BrokenSchema,
    /// The result does not match the output schema.
    InvalidOutput,
    /// The tool ran past its timeout and was cancelled.
    Timeout,
    /// The tool body failed.
    ToolFailed,
    /// The tool has no implementation here.
    Unavailable,
    /// The tool's MCP server is down.
    ServerUnavailable,
    /// A nested call would wait on its own schedule slot.
    Reentrancy,
    /// A defect on the gateway's side (a tool body panicked, an invariant broke).
    Internal,
}

impl ErrorKind {
    /// The coarse kind adapters map (MCP errors, bridge rejections, reply flags).
    pub fn failure_kind(self) -> FailureKind {
        match self {
            ErrorKind::BadRequest
            | ErrorKind::Ambiguous
            | ErrorKind::DirectOnly
            | ErrorKind::ClientTool
            | ErrorKind::InvalidArguments => FailureKind::BadArguments,
            ErrorKind::UnknownTool => FailureKind::Unknown,
            ErrorKind::ApprovalDenied => FailureKind::ApprovalDenied,
            ErrorKind::BlockedByHook => FailureKind::Blocked,
            ErrorKind::Timeout => FailureKind::Timeout,
            ErrorKind::BrokenSchema
            | ErrorKind::InvalidOutput
            | ErrorKind::ToolFailed
            | ErrorKind::Unavailable
            | ErrorKind::Reentrancy => FailureKind::ToolFailed,
            ErrorKind::ServerUnavailable => FailureKind::UpstreamUnavailable,
            ErrorKind::Internal => FailureKind::Internal,
        }
    }
}

/// Which operation a malformed request was meant for (to word its usage per surface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Searching the catalog.
    Search,
    /// Describing one tool.
    Describe,
    /// Calling one tool.
    Call,
}

/// What the model should do next, structurally. The surface turns it into words naming the
/// controls the model has; below the surface nothing names a control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Recovery {
    /// Nothing beyond the message (it already says what to do, e.g. "ask the user").
    #[default]
    None,
    /// The tool is unknown or gone: search for it, then describe and call it by its exact id.
    Search {
        /// Up to three allowed ids that look close ("did you mean").
        suggestions: Vec<String>,
    },
    /// Several tools match: use one exact id.
    PickId {
        /// The allowed candidates (bounded).
        candidates: Vec<String>,
    },
    /// Fix the arguments against this signature (the full schema is one describe away).
    FixArguments {
        /// The tool.
        id: String,
        /// Its expected input signature.
        signature: String,
    },
    /// The tool is declared to the model as its own tool: call it by that name, not through
    /// the catalog (a direct-only tool, R-7.5, or a client tool the application runs).
    CallDirectly {
        /// The tool.
        id: String,
        /// The name it is declared under.
        name: String,
    },
    /// Its upstream is down: do not retry and do not search for it again.
    DoNotRetry {
        /// The MCP server.
        server: String,
    },
    /// The request had the wrong shape: show the operation's usage.
    Usage {
        /// Which operation.
        operation: Operation,
    },
}

/// A failed call, with the text the model sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CallError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The tool, when one was resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    /// What went wrong, in neutral words (no control names; see [`Recovery`]).
    pub message: String,
    /// What to do next, for the surface to word.
    #[serde(skip)]
    pub recovery: Recovery,
    /// The failed result as the tool's MCP server sent it (`isError: true`), for a front that
    /// speaks MCP to pass on unchanged.
    #[serde(skip)]
    pub sent: Option<Arc<SentResult>>,
}

impl CallError {
    /// A failure of `kind` with `message` and no structured recovery.
    #[cold]
    pub fn new(kind: ErrorKind, tool_id: Option<&str>, message: impl Into<String>) -> Self {
        CallError {
            kind,
            tool_id: tool_id.map(str::to_string),
            message: message.into(),
            recovery: Recovery::None,
            sent: None,
        }
    }

    /// The same error with a structured recovery.
    #[must_use]
    pub fn recover(mut self, recovery: Recovery) -> Self {
        self.recovery = recovery;
        self
    }

    /// The coarse kind.
    pub fn failure_kind(&self) -> FailureKind {
        self.kind.failure_kind()
    }

    /// The error as the JSON a surface returns to the model.
    pub fn to_json(&self) -> Value {
        json!({"error": {"kind": self.kind, "message": self.message}})
    }
}

/// What `Gateway::call` yields.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The tool ran; here is its envelope.
    Done(Envelope),
    /// A client tool: the caller runs it and completes the call.
    ClientCallRequired(ClientCall),
    /// The call failed; the error is the answer to the model.
    Failed(CallError),
}

impl CallOutcome {
    /// The envelope, if the tool ran.
    pub fn envelope(&self) -> Option<&Envelope> {
        match self {
            CallOutcome::Done(envelope) => Some(envelope),
            _ => None,
        }
    }

    /// The error, if the call failed.
    pub fn error(&self) -> Option<&CallError> {
        match self {
            CallOutcome::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// Converts to a `Result`, treating a pending client call as an error of kind
    /// [`ErrorKind::ClientTool`] (for callers that cannot hand calls back).
    pub fn into_result(self) -> Result<Envelope, CallError> {
        match self {
            CallOutcome::Done(envelope) => Ok(envelope),
            CallOutcome::Failed(error) => Err(error),
            CallOutcome::ClientCallRequired(call) => Err(CallError::new(
                ErrorKind::ClientTool,
                Some(&call.tool.id),
                format!(
                    "{} is a client tool: the application runs it, not the gateway.",
                    call.tool.id
                ),
            )
            .recover(Recovery::CallDirectly {
                id: call.tool.id.clone(),
                name: call.tool.name.clone(),
            })),
        }
    }
}
