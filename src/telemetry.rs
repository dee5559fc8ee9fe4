//! Telemetry: per-run counters, the bounded session log, and the tracing setup (SPEC R-11).
//!
//! Owns:
//! - [`Counters`]: per-run statistics — relaxed atomics, never payloads.
//! - [`SessionLog`]: a bounded, redacted JSONL log that answers: how many schemas the
//!   model saw up front; how many searches and describes it made; which tool it finally
//!   called; whether the result came from a core/plugin, MCP or client tool. Records carry
//!   ids, counts, sizes and durations — never arguments, results or query text.
//!
//! Bounds: at most [`MAX_RECORDS`] records per log (then one `truncated` record and silence)
//! and at most [`MAX_FIELD_CHARS`] characters per string field.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// Per-run counters. All relaxed atomics: they are statistics, not synchronization.
#[derive(Debug, Default)]
pub struct Counters {
    /// `tool_search` requests (a batch counts once).
    pub searches: AtomicU64,
    /// Queries run (a batch counts each query).
    pub queries: AtomicU64,
    /// `tool_describe` requests.
    pub describes: AtomicU64,
    /// Final tool calls attempted.
    pub calls: AtomicU64,
    /// Final tool calls that failed.
    pub call_errors: AtomicU64,
    /// Calls handed back to the client (client tools).
    pub client_calls: AtomicU64,
    /// Code cells run.
    pub cells: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to `counter`.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads `counter`.
    pub fn read(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// The counters as a JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "searches": Counters::read(&self.searches),
            "queries": Counters::read(&self.queries),
            "describes": Counters::read(&self.describes),
            "calls": Counters::read(&self.calls),
            "call_errors": Counters::read(&self.call_errors),
            "client_calls": Counters::read(&self.client_calls),
            "cells": Counters::read(&self.cells),
        })
    }
}

/// Most records one session log keeps (R-11.2: bounded).
pub const MAX_RECORDS: usize = 10_000;
/// Longest string field in a record, in characters.
pub const MAX_FIELD_CHARS: usize = 256;

enum Sink {
    Memory(Vec<u8>),
    File(std::fs::File),
    Discard,
}

struct LogState {
    sink: Sink,
    records: usize,
    truncated: bool,
}

/// A bounded, redacted JSONL session log. Cheap to clone; all clones append to the
/// same log.
#[derive(Clone)]
pub struct SessionLog {
    state: Arc<Mutex<LogState>>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog").finish_non_exhaustive()
    }
}

impl SessionLog {
    fn with_sink(sink: Sink) -> SessionLog {
        SessionLog {
            state: Arc::new(Mutex::new(LogState {
                sink,
                records: 0,
                truncated: false,
            })),
        }
    }

    /// A log kept in memory (read it back with [`SessionLog::lines`]).
    pub fn in_memory() -> SessionLog {
        SessionLog::with_sink(Sink::Memory(Vec::new()))
    }

    /// A log that drops everything.
    pub fn discard() -> SessionLog {
        SessionLog::with_sink(Sink::Discard)
    }

    /// A log appended to `path` (created if missing).
    pub fn to_file(path: &std::path::Path) -> std::io::Result<SessionLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(SessionLog::with_sink(Sink::File(file)))
    }

    /// Appends one record: `kind` plus `fields` (strings are cut to `MAX_FIELD_CHARS`, 256 characters).
    /// Never fails the caller: a write error is reported through `tracing`.
    pub fn record(&self, kind: &str, fields: Map<String, Value>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if matches!(state.sink, Sink::Discard) || state.truncated {
            return;
        }
        let mut record = Map::with_capacity(fields.len() + 2);
        record.insert("type".into(), Value::from(kind));
        record.insert("ts_ms".into(), Value::from(now_ms()));
        for (key, value) in fields {
            record.insert(key, bound(value));
        }
        if state.records + 1 >= MAX_RECORDS {
            record = Map::new();
            record.insert("type".into(), Value::from("truncated"));
            record.insert("ts_ms".into(), Value::from(now_ms()));
            record.insert("max_records".into(), Value::from(MAX_RECORDS));
            state.truncated = true;
        }
        state.records += 1;
        let mut line = Value::Object(record).to_string();
        line.push('\n');
        let result = match &mut state.sink {
            Sink::Memory(buffer) => {
                buffer.extend_from_slice(line.as_bytes());
                Ok(())
            }
            Sink::File(file) => file.write_all(line.as_bytes()),
            Sink::Discard => Ok(()),
        };
        if let Err(error) = result {
            tracing::warn!(%error, "session log write failed");
        }
    }

    /// The records of an in-memory log, parsed (empty for other sinks).
    pub fn lines(&self) -> Vec<Value> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &state.sink {
            Sink::Memory(buffer) => String::from_utf8_lossy(buffer)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn bound(value: Value) -> Value {
    match value {
        Value::String(text) if text.chars().count() > MAX_FIELD_CHARS => {
            let mut cut: String = text.chars().take(MAX_FIELD_CHARS - 1).collect();
            cut.push('…');
            Value::String(cut)
        }
        Value::Array(items) => Value::Array(items.into_iter().take(64).map(bound).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .take(64)
                .map(|(k, v)| (k, bound(v)))
                .collect(),
        ),
        other => other,
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Installs a stderr `tracing` subscriber honouring `RUST_LOG` (default: warnings). Safe to call
/// more than once.
pub fn init_stderr_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
