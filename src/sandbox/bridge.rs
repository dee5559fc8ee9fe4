//! The one narrow way a cell reaches the host: the [`Bridge`] trait.
//!
//! Owns: the trait and the closed set of bridge operations. Never does: implement a tool; the
//! gateway implements [`Bridge`] so that every bridge call takes the same path as `tool_call`.
//! Invariants: arguments are untrusted JSON (at most `Limits::frame_bytes` long); a call that the
//! guest never awaited never reaches [`Bridge::invoke`]; when the cell settles abnormally the
//! future returned by `invoke` is dropped (cancelled).

use crate::catalog::ToolError;

/// The operations a guest can ask of the host: `openclaw.tools.search/describe/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeOp {
    /// `openclaw.tools.search(query, options?)`.
    Search,
    /// `openclaw.tools.describe(id)`.
    Describe,
    /// `openclaw.tools.call(id, args)`.
    Call,
}

impl BridgeOp {
    /// The snake_case name, as in the protocol and in `openclaw.tools`.
    pub fn as_str(self) -> &'static str {
        match self {
            BridgeOp::Search => "search",
            BridgeOp::Describe => "describe",
            BridgeOp::Call => "call",
        }
    }
}

/// The one narrow way a cell reaches the host. The gateway implements it.
///
/// Calls of one cell may overlap (`Promise.all`): `invoke` is polled concurrently for each of them,
/// on the task that drives the cell. A future still pending when the cell settles abnormally
/// (error, timeout, kill) is dropped, which cancels it.
#[async_trait::async_trait]
pub trait Bridge: Send + Sync + 'static {
    /// Runs one bridge call. A failure is a [`ToolError`]: its kind lets a guest, a log or an
    /// adapter tell an upstream outage from a bad argument, and its message is exactly the
    /// `message` of the `Error` the guest's promise rejects with.
    ///
    /// `args` is the JSON array of the JS arguments as passed (`undefined` → `null`; values that
    /// JSON cannot carry become strings via `String()`).
    /// `Ok(value)` resolves the guest's promise with `value`; `Err(error)` rejects it with an
    /// `Error` whose `message` is exactly `error.message`.
    async fn invoke(
        &self,
        op: BridgeOp,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError>;
}
