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

use serde_json::{Map, Value, json};

use super::{Bridge, BridgeOp};
use crate::gateway::Gateway;

/// [`Bridge`] over a [`Gateway`].
#[derive(Clone, Debug)]
pub struct GatewayBridge {
    gateway: Gateway,
}

impl GatewayBridge {
    /// A bridge into `gateway`'s run.
    pub fn new(gateway: Gateway) -> Self {
        GatewayBridge { gateway }
    }
}

fn arg(args: &Value, index: usize) -> Value {
    args.get(index).cloned().unwrap_or(Value::Null)
}

fn search_request(query: Value, options: Value) -> Value {
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

#[async_trait::async_trait]
impl Bridge for GatewayBridge {
    async fn invoke(&self, op: BridgeOp, args: Value) -> Result<Value, String> {
        match op {
            BridgeOp::Search => self
                .gateway
                .search(&search_request(arg(&args, 0), arg(&args, 1)))
                .map_err(|e| e.message),
            BridgeOp::Describe => self.gateway.describe(&arg(&args, 0)).map_err(|e| e.message),
            BridgeOp::Call => {
                let request = match (arg(&args, 0), arg(&args, 1)) {
                    (Value::String(id), Value::Null) => json!({"id": id, "args": {}}),
                    (Value::String(id), call_args) => json!({"id": id, "args": call_args}),
                    (request @ Value::Object(_), Value::Null) => request,
                    (Value::Object(mut request), Value::Object(extra)) => {
                        request.entry("args").or_insert(Value::Object(extra));
                        Value::Object(request)
                    }
                    (other, _) => {
                        return Err(format!(
                            "openclaw.tools.call(id, args) needs a tool id string as its first argument, got {other}"
                        ));
                    }
                };
                self.gateway
                    .call(&request)
                    .await
                    .into_result()
                    .map(|envelope| envelope.to_json())
                    .map_err(|e| e.message)
            }
        }
    }
}
