//! The gateway side of the bridge: every `openclaw.tools.*` call from a cell takes the same path
//! as the structured controls (policy, validation, hooks, approvals, scheduling, session log).
//!
//! Argument mapping (the JS arguments arrive as a JSON array):
//! - `search(query, options?)`: a string query with `options.limit`, an array of queries (a batch),
//!   or a request object (`{query}` / `{queries}`) passed through;
//! - `describe(id)`: an id or name string, or `{id}`;
//! - `call(id, args)`: an id plus an argument object, or one request object in any shape
//!   `tool_call` accepts. A client tool rejects with guidance to call it directly (it runs in the
//!   application, not in the gateway).
//!
//! Rejections keep the gateway error's coarse kind; their text is worded by the [`Wording`] the
//! surface supplies (naming `openclaw.tools.*`, the controls a cell has), or is the gateway's
//! neutral message when none is given.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Bridge, BridgeOp};
use crate::catalog::{FailureKind, ToolError};
use crate::gateway::{CallError, CallOutcome, Gateway};
use crate::sync::Locked;

tokio::task_local! {
    /// Set while a cell's `openclaw.tools.call` runs in the gateway.
    static IN_CELL: ();
}

/// Whether the current task runs a tool call a code cell made (a tool that would wait on a
/// person can refuse: the cell's deadline keeps running).
pub fn in_cell() -> bool {
    IN_CELL.try_with(|_| ()).is_ok()
}

/// Turns a gateway error into the text the guest's `Error` carries.
pub type Wording = Arc<dyn Fn(&CallError) -> String + Send + Sync>;

/// [`Bridge`] over a [`Gateway`].
#[derive(Clone)]
pub struct GatewayBridge {
    gateway: Gateway,
    wording: Option<Wording>,
    /// The answer of the cell's last successful search.
    last_search: Arc<std::sync::Mutex<Option<Value>>>,
}

impl std::fmt::Debug for GatewayBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBridge")
            .field("gateway", &self.gateway)
            .field("wording", &self.wording.is_some())
            .finish()
    }
}

impl GatewayBridge {
    /// A bridge into `gateway`'s run; rejections carry the gateway's neutral messages.
    pub fn new(gateway: Gateway) -> Self {
        GatewayBridge {
            gateway,
            wording: None,
            last_search: Arc::default(),
        }
    }

    /// Words rejections with `wording` (the surface's code-mode guidance).
    #[must_use]
    pub fn with_wording(mut self, wording: Wording) -> Self {
        self.wording = Some(wording);
        self
    }

    /// The answer of the last search that succeeded through this bridge (what the cell found,
    /// even when the cell then failed).
    pub fn last_search(&self) -> Option<Value> {
        self.last_search.locked().clone()
    }

    fn reject(&self, error: CallError) -> ToolError {
        let message = match &self.wording {
            Some(word) => word(&error),
            None => error.message.clone(),
        };
        ToolError::of(error.failure_kind(), message)
    }
}

fn arg(args: &Value, index: usize) -> Value {
    args.get(index).cloned().unwrap_or(Value::Null)
}

/// The `tool_search` request of `openclaw.tools.search(query, options)`.
pub(crate) fn search_request(query: Value, options: Value) -> Value {
    let limit = options.get("limit").cloned();
    match query {
        Value::String(text) => {
            let mut request = Map::new();
            request.insert("query".into(), Value::String(text));
            if let Some(limit) = limit {
                request.insert("limit".into(), limit);
            }
            Value::Object(request)
        }
        Value::Array(queries) => json!({
            "queries": queries
                .into_iter()
                .map(|q| match q {
                    Value::String(text) => match &limit {
                        Some(limit) => json!({"query": text, "limit": limit}),
                        None => json!({"query": text}),
                    },
                    other => other,
                })
                .collect::<Vec<_>>()
        }),
        other => other,
    }
}

/// The call of `openclaw.tools.call(first, second)`: an id and its arguments, or one request
/// object (`second`, when an object, fills a missing `args`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CellCall {
    /// A tool id (or name) and its arguments.
    Id { id: String, args: Value },
    /// A request object of any accepted shape.
    Request(Value),
}

impl CellCall {
    /// The call of `first` and `second`; `None` when `first` is neither a string nor an object.
    pub(crate) fn of(first: Value, second: Value) -> Option<CellCall> {
        match (first, second) {
            (Value::String(id), Value::Null) => Some(CellCall::Id {
                id,
                args: Value::Object(Default::default()),
            }),
            (Value::String(id), args) => Some(CellCall::Id { id, args }),
            (request @ Value::Object(_), Value::Null) => Some(CellCall::Request(request)),
            (Value::Object(mut request), Value::Object(extra)) => {
                request.entry("args").or_insert(Value::Object(extra));
                Some(CellCall::Request(Value::Object(request)))
            }
            _ => None,
        }
    }

    /// Runs the call through the gateway's one call path.
    pub(crate) async fn run(self, gateway: &Gateway) -> CallOutcome {
        match self {
            CellCall::Id { id, args } => gateway.call_tool(&id, args).await,
            CellCall::Request(request) => gateway.call(&request).await,
        }
    }
}

#[async_trait::async_trait]
impl Bridge for GatewayBridge {
    async fn invoke(&self, op: BridgeOp, args: Value) -> Result<Value, ToolError> {
        match op {
            // The single form crosses as `{hits, matched, truncated, not_found?, note}`: the
            // prelude hands the guest the array, with the rest as its properties.
            BridgeOp::Search => {
                let answer = self
                    .gateway
                    .search(&search_request(arg(&args, 0), arg(&args, 1)))
                    .map(|response| response.to_object(self.gateway.search_limits().max_limit()))
                    .map_err(|e| self.reject(e))?;
                *self.last_search.locked() = Some(answer.clone());
                Ok(answer)
            }
            BridgeOp::Describe => self
                .gateway
                .describe(&arg(&args, 0))
                .map_err(|e| self.reject(e)),
            BridgeOp::Call => {
                let first = arg(&args, 0);
                let kind = crate::catalog::json_kind(&first);
                let Some(call) = CellCall::of(first, arg(&args, 1)) else {
                    return Err(ToolError::of(
                        FailureKind::BadArguments,
                        format!(
                            "openclaw.tools.call(id, args) needs a tool id string as its first argument, got {kind}"
                        ),
                    ));
                };
                IN_CELL
                    .scope((), call.run(&self.gateway))
                    .await
                    .into_result()
                    .map(|envelope| envelope.to_json())
                    .map_err(|e| self.reject(e))
            }
        }
    }
}
