//! Shared harness for the sandbox tests: a test `Bridge`, a supervisor per test, and the check that
//! no process of that supervisor outlives `shutdown()`.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolsearch::{Bridge, BridgeOp, CellOptions, CellResult, Limits, Supervisor, SupervisorConfig};

/// The worker binary built by cargo for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_toolsearch");

/// A deterministic stand-in for the gateway.
///
/// - `search(query, options?)` → three fixed hits;
/// - `describe(id)` → `{id, name, input_schema}`;
/// - `call(id, args)`: `denied:*` → rejects "Unknown tool: <id>. Use search to find tools.";
///   `slow:<ms>` → sleeps, then echoes; `big:<n>` → a string of n bytes; otherwise
///   `{id, echo: args, sum}` where `sum` adds `args.a + args.b` when both are numbers.
#[derive(Default)]
pub struct TestBridge {
    /// Calls that reached `invoke`.
    pub calls: AtomicU32,
    /// Every call's op and arguments, in arrival order.
    pub log: Mutex<Vec<(BridgeOp, Value)>>,
    /// Calls in flight right now, and the most ever in flight at once.
    pub inflight: AtomicU32,
    pub max_inflight: AtomicU32,
    /// Calls whose future was dropped before it finished (cancelled by the supervisor).
    pub cancelled: AtomicU32,
}

/// Counts a call in flight; on drop before `done`, counts a cancellation.
struct Flight<'a> {
    bridge: &'a TestBridge,
    done: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.bridge.inflight.fetch_sub(1, Ordering::SeqCst);
        if !self.done {
            self.bridge.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

pub fn hits() -> Value {
    json!([
        {"id": "mcp:calendar:create_event", "name": "create_event", "score": 3.5},
        {"id": "mcp:calendar:list_events", "name": "list_events", "score": 2.0},
        {"id": "plugin:mail:send", "name": "send", "score": 1.0}
    ])
}

#[async_trait::async_trait]
impl Bridge for TestBridge {
    async fn invoke(&self, op: BridgeOp, args: Value) -> Result<Value, toolsearch::ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push((op, args.clone()));
        let now = self.inflight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_inflight.fetch_max(now, Ordering::SeqCst);
        let mut flight = Flight {
            bridge: self,
            done: false,
        };
        let out = self
            .answer(op, args)
            .await
            .map_err(toolsearch::ToolError::from);
        flight.done = true;
        out
    }
}

impl TestBridge {
    async fn answer(&self, op: BridgeOp, args: Value) -> Result<Value, String> {
        let first = args.get(0).cloned().unwrap_or(Value::Null);
        match op {
            BridgeOp::Search => Ok(hits()),
            BridgeOp::Describe => {
                let id = first.as_str().unwrap_or("").to_owned();
                Ok(
                    json!({"id": id, "name": id.rsplit(':').next(), "input_schema": {"type": "object"}}),
                )
            }
            BridgeOp::Call => {
                let id = first.as_str().unwrap_or("").to_owned();
                let call_args = args.get(1).cloned().unwrap_or(Value::Null);
                if id.starts_with("denied:") {
                    return Err(format!("Unknown tool: {id}. Use search to find tools."));
                }
                if let Some(ms) = id.strip_prefix("slow:") {
                    let ms: u64 = ms.parse().unwrap_or(100);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                if let Some(n) = id.strip_prefix("big:") {
                    let n: usize = n.parse().unwrap_or(0);
                    return Ok(Value::String("y".repeat(n)));
                }
                let sum = match (
                    call_args.get("a").and_then(Value::as_f64),
                    call_args.get("b").and_then(Value::as_f64),
                ) {
                    (Some(a), Some(b)) => json!(a + b),
                    _ => Value::Null,
                };
                Ok(json!({"id": id, "echo": call_args, "sum": sum}))
            }
        }
    }
}

/// One supervisor for one test, remembering every pid it ever showed us.
pub struct Harness {
    pub sup: Supervisor,
    pub bridge: Arc<TestBridge>,
    seen: Mutex<BTreeSet<u32>>,
}

impl Harness {
    pub async fn new() -> Harness {
        Harness::with(2, Limits::default()).await
    }

    pub async fn with(pool_size: usize, limits: Limits) -> Harness {
        let mut config = SupervisorConfig::new(BIN);
        config.pool_size = pool_size;
        config.limits = limits;
        Harness::with_config(config).await
    }

    pub async fn with_config(config: SupervisorConfig) -> Harness {
        let sup = Supervisor::start(config).await.expect("supervisor starts");
        let h = Harness {
            sup,
            bridge: Arc::new(TestBridge::default()),
            seen: Mutex::new(BTreeSet::new()),
        };
        h.remember();
        h
    }

    fn remember(&self) {
        let mut seen = self.seen.lock().unwrap();
        if let Some(z) = self.sup.zygote_pid() {
            seen.insert(z);
            seen.extend(descendants(z));
        }
        seen.extend(self.sup.ready_worker_pids());
        seen.extend(self.sup.live_worker_pids());
    }

    pub async fn run(&self, code: &str) -> CellResult {
        self.run_with(code, CellOptions::default()).await
    }

    pub async fn run_with(&self, code: &str, opts: CellOptions) -> CellResult {
        self.remember();
        let r = self.sup.run_cell(code, self.bridge.clone(), opts).await;
        if r.telemetry.worker_pid != 0 {
            self.seen.lock().unwrap().insert(r.telemetry.worker_pid);
        }
        self.remember();
        r
    }

    /// Runs an ordinary cell that must succeed (the supervisor survived whatever came before).
    pub async fn assert_still_works(&self) {
        let r = self
            .run("const h = await openclaw.tools.search('calendar'); const d = await openclaw.tools.describe(h[0].id); const c = await openclaw.tools.call(d.id, {a: 2, b: 3}); return {n: h.length, name: d.name, sum: c.sum};")
            .await;
        assert_eq!(
            r.outcome,
            toolsearch::Outcome::Ok,
            "follow-up cell failed: {:?}",
            r
        );
        assert_eq!(
            r.value,
            Some(json!({"n": 3, "name": "create_event", "sum": 5}))
        );
    }

    /// Shuts down and asserts that no process of this supervisor is left (not even a zombie).
    pub async fn finish(self) {
        self.remember();
        let tracked: Vec<(u32, u64)> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|pid| start_time(*pid).map(|t| (*pid, t)))
            .collect();
        let zygote = self.sup.zygote_pid();
        self.sup.shutdown().await;
        for (pid, t) in &tracked {
            assert_ne!(
                start_time(*pid),
                Some(*t),
                "process {pid} outlived shutdown (zygote {zygote:?})"
            );
        }
        if let Some(z) = zygote {
            assert!(
                descendants(z).is_empty(),
                "descendants of zygote {z} left: {:?}",
                descendants(z)
            );
        }
    }
}

/// Field 22 of /proc/<pid>/stat (start time in clock ticks); None if the process is gone.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every process whose ancestor chain includes `root`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let mut cur = pid;
        for _ in 0..64 {
            match ppid(cur) {
                Some(p) if p == root => {
                    out.push(pid);
                    break;
                }
                Some(p) if p > 1 => cur = p,
                _ => break,
            }
        }
    }
    out
}

/// A `/proc/<pid>/status` field.
pub fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        l.strip_prefix(field)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    })
}

pub fn short(limits: Limits, timeout_ms: u64) -> Limits {
    Limits {
        code_timeout: Duration::from_millis(timeout_ms),
        ..limits
    }
}
