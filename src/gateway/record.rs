//! The session log's records: every kind of line a run writes, in one enum.
//!
//! Owns: [`Record`], the schema of the session log — each variant is one `type` of line and its
//! fields are the line's keys. A line is `{"type", "ts_ms", "run_id", …fields}` with its keys
//! in sorted order (the log writes JSON objects as sorted maps), strings cut to
//! `MAX_FIELD_CHARS` (see `telemetry`).
//! Never does: carry arguments, results or query text (ids, counts, sizes, durations and kinds
//! only); decide when a record is written — the layer that owns each record's order writes it:
//! the gateway its run, searches, describes and calls; the surface its decisions, cells and
//! recovered calls.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::catalog::Source;

use super::ErrorKind;

/// One session-log line (without `ts_ms` and `run_id`, which the writer adds).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Record<'a> {
    /// The run started: who runs it, what its catalog holds, what the model sees up front.
    RunStart {
        agent: Option<&'a str>,
        profile: Option<&'a str>,
        sandbox: Option<&'a str>,
        session: Option<&'a str>,
        catalog_size: usize,
        direct_only: usize,
        /// Allowed tools per source.
        sources: HashMap<&'static str, usize>,
        schemas_visible_up_front: usize,
        /// The catalog snapshot's fingerprint.
        snapshot: String,
    },
    /// One `tool_search` (a single query or a batch).
    Search {
        queries: usize,
        results: usize,
        truncated: bool,
        /// The ranker that answered; absent when the request failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        ranker: Option<&'static str>,
        ok: bool,
        duration_us: u64,
    },
    /// One `tool_describe`.
    Describe { tool_id: Option<&'a str>, ok: bool },
    /// One final call through the call path.
    Call {
        tool_id: Option<&'a str>,
        source: Option<Source>,
        trusted: Option<bool>,
        /// `ok`, `error` or `client_call_required`.
        status: &'static str,
        error_kind: Option<ErrorKind>,
        duration_us: u64,
    },
    /// The run ended: its telemetry.
    RunEnd { telemetry: Value },
    /// `auto` mode's decision and its inputs.
    AutoDecision {
        tools: usize,
        schema_tokens: usize,
        max_tools: usize,
        max_schema_tokens: usize,
        chosen: &'a str,
    },
    /// Code mode fell back to tools mode.
    CodeFallback { reason: &'a str },
    /// One `tool_search_code` cell (R-11.1 per-cell timings).
    Cell {
        outcome: &'static str,
        worker_pid: u32,
        warm: bool,
        queue_ms: f64,
        run_ms: f64,
        bridge_calls: u32,
    },
    /// A call in the wrong shape that ran as its structured equivalent (never its arguments).
    RecoveredCall {
        name: &'a str,
        form: &'static str,
        ran_as: &'a str,
        ok: bool,
    },
}

/// A record as one line's object: the record's fields, its `type` and the run's id.
pub(crate) fn fields(run_id: &str, record: &Record<'_>) -> serde_json::Map<String, Value> {
    let mut fields = match serde_json::to_value(record) {
        Ok(Value::Object(map)) => map,
        // Unreachable: every variant serializes to an object with its tag.
        _ => serde_json::Map::new(),
    };
    fields.insert("run_id".into(), Value::from(run_id));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_is_its_type_run_id_and_fields() {
        let call = Record::Call {
            tool_id: Some("core:clock:now"),
            source: Some(Source::Core),
            trusted: Some(true),
            status: "error",
            error_kind: Some(ErrorKind::InvalidArguments),
            duration_us: 7,
        };
        assert_eq!(
            Value::Object(fields("r1", &call)),
            json!({"type": "call", "run_id": "r1", "tool_id": "core:clock:now", "source": "core",
                "trusted": true, "status": "error", "error_kind": "invalid_arguments",
                "duration_us": 7})
        );
        let search = Record::Search {
            queries: 0,
            results: 0,
            truncated: false,
            ranker: None,
            ok: false,
            duration_us: 3,
        };
        assert_eq!(
            Value::Object(fields("r1", &search)),
            json!({"type": "search", "run_id": "r1", "queries": 0, "results": 0,
                "truncated": false, "ok": false, "duration_us": 3})
        );
    }
}
