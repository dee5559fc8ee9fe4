//! What a call yields: the envelope, a pending client call, or an error for the model.
//!
//! Every [`CallError`] is an answer to the model (bad arguments, unknown or denied tool — same
//! text, R-2.2 — blocks, tool failures), never a reason to stop the gateway. Its text says how to
//! recover.

use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::{Source, ToolOutput};

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
    /// What went wrong and how to recover.
    pub message: String,
}

impl CallError {
    /// A failure of `kind` with `message`.
    #[cold]
    pub fn new(kind: ErrorKind, tool_id: Option<&str>, message: impl Into<String>) -> Self {
        CallError {
            kind,
            tool_id: tool_id.map(str::to_string),
            message: message.into(),
        }
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
                    "{} is a client tool: the application runs it. Call it directly as the tool {:?} instead of through the bridge.",
                    call.tool.id, call.tool.name
                ),
            )),
        }
    }
}
