//! Telemetry: per-run counters, the bounded session log, and the tracing setup (SPEC R-11).
//!
//! Owns:
//! - [`Counters`]: per-run statistics — relaxed atomics, never payloads.
//! - [`SessionLog`]: a bounded, redacted JSONL log that answers: how many schemas the
//!   model saw up front; how many searches and describes it made; which tool it finally
//!   called; whether the result came from a core/plugin, MCP or client tool. Records carry
//!   ids, counts, sizes and durations — never arguments, results or query text.
//!   It writes lines; their kinds and fields are the gateway's `Record` (`gateway/record.rs`).
//! - [`own_messages`]: toolsearch's own log events, for `serve` to relay to its clients.
//! - [`terminal_safe`]: the one terminal-safety filter. Every untrusted or model-written text on
//!   its way to a terminal or a log line goes through it (CLI output, agent transcripts, tracing
//!   lines, cells' console lines, an upstream's stderr); JSON output never does.
//!
//! Bounds: at most [`MAX_RECORDS`] records per log (then one `truncated` record and silence)
//! and at most [`MAX_FIELD_CHARS`] characters per string field.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sync::Locked;
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
    /// Calls in the wrong shape run as their structured equivalent.
    pub recovered_calls: AtomicU64,
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
            "recovered_calls": Counters::read(&self.recovered_calls),
        })
    }
}

/// Most records one session log keeps (R-11.2: bounded).
pub const MAX_RECORDS: usize = 10_000;
/// Longest string field in a record, in characters.
pub const MAX_FIELD_CHARS: usize = 256;

enum Sink {
    Memory(Vec<u8>),
    /// A file and the length of its whole lines: a failed write is cut back to it, so a full
    /// disk never leaves a torn line.
    File(std::fs::File, u64),
    Discard,
}

struct LogState {
    sink: Sink,
    records: usize,
    truncated: bool,
    /// Records that could not be written (reported once, on the first).
    write_failures: u64,
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
                write_failures: 0,
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
    ///
    /// Each record is one `write(2)` of a whole line (nothing is buffered, so nothing is lost on
    /// exit). If a write fails (a full disk), the file is cut back to its last whole line, the
    /// record is dropped, the failure is reported once (`tracing` warning, and
    /// [`SessionLog::write_failures`]) and later records are tried again.
    pub fn to_file(path: &std::path::Path) -> std::io::Result<SessionLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let mut len = file.metadata()?.len();
        // A torn last line from an earlier run (a crash mid-write) is cut off: appending after it
        // would glue this run's first record onto it.
        if len > 0 && !ends_with_newline(&file, len)? {
            len = last_newline_end(&file, len)?;
            file.set_len(len)?;
        }
        Ok(SessionLog::with_sink(Sink::File(file, len)))
    }

    /// Records dropped because the sink failed to take them (e.g. the disk was full).
    pub fn write_failures(&self) -> u64 {
        self.state.locked().write_failures
    }

    /// Appends one record, an object whose `type` names its kind (the gateway's `Record` is the
    /// schema), stamped with `ts_ms`; strings are cut to `MAX_FIELD_CHARS` (256 characters).
    /// Never fails the caller: a write error is reported through `tracing`, once per log.
    pub(crate) fn write(&self, fields: Map<String, Value>) {
        let mut state = self.state.locked();
        if matches!(state.sink, Sink::Discard) || state.truncated {
            return;
        }
        let mut record: Map<String, Value> = fields
            .into_iter()
            .map(|(key, value)| (key, bound(value)))
            .collect();
        record.insert("ts_ms".into(), Value::from(now_ms()));
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
            Sink::File(file, whole) => match file.write_all(line.as_bytes()) {
                Ok(()) => {
                    *whole += line.len() as u64;
                    Ok(())
                }
                Err(error) => {
                    // A short write left part of the line: cut it off (O_APPEND writes at the end,
                    // so the next record starts on a line boundary again).
                    let _ = file.set_len(*whole);
                    Err(error)
                }
            },
            Sink::Discard => Ok(()),
        };
        if let Err(error) = result {
            state.write_failures += 1;
            if state.write_failures == 1 {
                tracing::warn!(
                    %error,
                    "session log write failed; the record was dropped (the log keeps only whole \
                     lines; later failures are not reported again)"
                );
            }
        }
    }

    /// The records of an in-memory log, parsed (empty for other sinks).
    pub fn lines(&self) -> Vec<Value> {
        let state = self.state.locked();
        match &state.sink {
            Sink::Memory(buffer) => String::from_utf8_lossy(buffer)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn ends_with_newline(file: &std::fs::File, len: u64) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

/// The length of `file` up to and including its last newline (0 if it has none).
fn last_newline_end(file: &std::fs::File, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut end = len;
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let part = &mut chunk[..(end - start) as usize];
        file.read_exact_at(part, start)?;
        if let Some(i) = part.iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
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

fn is_unsafe_for_terminal(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides, isolates and marks ("Trojan Source").
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}' => {
            true
        }
        // Zero-width characters that hide or join text.
        '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => true,
        _ => false,
    }
}

/// Untrusted text (catalog descriptions, MCP server messages, model output) made safe for a
/// terminal or a log line: C0 and C1 controls except `\n` and `\t`, DEL, bidirectional
/// overrides and marks, and zero-width characters are removed, so no escape sequence survives.
/// Borrows when nothing must change. JSON output is never passed through this (it stays exact).
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unsafe_for_terminal) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.chars().filter(|c| !is_unsafe_for_terminal(*c)).collect())
}

/// Installs a stderr `tracing` subscriber honouring `RUST_LOG` (default: warnings). Safe to call
/// more than once. Every log line goes through [`LogWriter`]: untrusted text in any field (a
/// tool name, an MCP server's message, a library's error) is made [`terminal_safe`], a line is
/// at most [`MAX_LOG_LINE_BYTES`], and a stderr that nobody reads never stalls the process.
///
/// The same events of toolsearch's own modules are also offered to [`own_messages`] (for
/// `serve` to relay to its clients as MCP log messages).
pub fn init_stderr_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(|| LogWriter)
        // Colour codes would be removed by the filter anyway.
        .with_ansi(false)
        .with_target(false);
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(OwnMessages)
        .try_init();
}

/// One of toolsearch's own log events: its level and its text (the message, then its other
/// fields as `name=value`), untrusted parts as they were logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnMessage {
    /// The event's level.
    pub level: tracing::Level,
    /// The event's text, at most [`MAX_LOG_LINE_BYTES`].
    pub text: String,
}

/// Own messages that wait for a slow reader before the oldest are dropped.
pub const OWN_MESSAGES_BUFFER: usize = 64;

fn own_channel() -> &'static tokio::sync::broadcast::Sender<OwnMessage> {
    static CHANNEL: std::sync::OnceLock<tokio::sync::broadcast::Sender<OwnMessage>> =
        std::sync::OnceLock::new();
    CHANNEL.get_or_init(|| tokio::sync::broadcast::channel(OWN_MESSAGES_BUFFER).0)
}

/// A receiver of toolsearch's own log events that pass the log filter (`RUST_LOG`; default:
/// warnings), from the modules of this crate only, once [`init_stderr_logging`] ran.
pub fn own_messages() -> tokio::sync::broadcast::Receiver<OwnMessage> {
    own_channel().subscribe()
}

/// The layer that offers this crate's events to [`own_messages`].
struct OwnMessages;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for OwnMessages {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let metadata = event.metadata();
        if !metadata.target().starts_with(env!("CARGO_CRATE_NAME")) {
            return;
        }
        let channel = own_channel();
        if channel.receiver_count() == 0 {
            return;
        }
        let mut text = OwnText::default();
        event.record(&mut text);
        let mut text = text.0;
        if text.len() > MAX_LOG_LINE_BYTES {
            let mut end = MAX_LOG_LINE_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        let _ = channel.send(OwnMessage {
            level: *metadata.level(),
            text,
        });
    }
}

/// An event's message first, then its other fields.
#[derive(Default)]
struct OwnText(String);

impl tracing::field::Visit for OwnText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value:?}");
            if !rest.is_empty() {
                self.0.push(' ');
                self.0.push_str(&rest);
            }
        } else {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }
}

/// Longest log line written (bytes); a longer one is cut, saying how long it was.
pub const MAX_LOG_LINE_BYTES: usize = 3 * 1024 + 512;

/// How long a log line waits for a full stderr pipe to drain before it is dropped.
pub const LOG_WRITE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// Log lines dropped because stderr stayed full (reported on the next line written).
static DROPPED_LOG_LINES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The stderr writer of the log subscriber. Each `write` is one formatted event: it is made
/// [`terminal_safe`], cut to [`MAX_LOG_LINE_BYTES`], and written only when stderr can take it
/// within [`LOG_WRITE_WAIT`] (a pipe nobody reads fills up: the line is dropped and counted
/// rather than blocking the thread that logs).
pub struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use std::sync::atomic::Ordering;
        let text = String::from_utf8_lossy(buf);
        let mut line = terminal_safe(&text).into_owned();
        if line.len() > MAX_LOG_LINE_BYTES {
            let total = line.len();
            let mut end = MAX_LOG_LINE_BYTES - 64;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push_str(&format!("… (log line cut: {total} bytes)\n"));
        }
        if !stderr_writable(LOG_WRITE_WAIT) {
            DROPPED_LOG_LINES.fetch_add(1, Ordering::Relaxed);
            return Ok(buf.len());
        }
        let dropped = DROPPED_LOG_LINES.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            line.insert_str(
                0,
                &format!("({dropped} log line(s) dropped: stderr was not being read)\n"),
            );
        }
        let mut err = std::io::stderr().lock();
        // Best effort: a log line that cannot be written is not an error of the caller.
        let _ = std::io::Write::write_all(&mut err, line.as_bytes());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Whether stderr can take a write within `wait` (a pipe with room, a file, a terminal).
fn stderr_writable(wait: std::time::Duration) -> bool {
    use std::os::fd::AsFd;
    let stderr = std::io::stderr();
    let mut fds = [nix::poll::PollFd::new(
        stderr.as_fd(),
        nix::poll::PollFlags::POLLOUT,
    )];
    let timeout = nix::poll::PollTimeout::try_from(wait).unwrap_or(nix::poll::PollTimeout::ZERO);
    match nix::poll::poll(&mut fds, timeout) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.contains(nix::poll::PollFlags::POLLOUT)),
        // poll failing (EINTR, a closed descriptor): try the write, which reports on its own.
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;
    use std::borrow::Cow;

    #[test]
    fn terminal_safe_removes_every_class_and_keeps_the_rest() {
        // C0 but newline and tab, DEL, C1, bidi embeddings/overrides/isolates/marks, zero-width.
        let removed: Vec<char> = ('\u{0}'..='\u{1f}')
            .filter(|c| !matches!(c, '\n' | '\t'))
            .chain('\u{7f}'..='\u{9f}')
            .chain('\u{202a}'..='\u{202e}')
            .chain('\u{2066}'..='\u{2069}')
            .chain(['\u{200e}', '\u{200f}', '\u{61c}'])
            .chain(['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}'])
            .collect();
        for c in &removed {
            assert_eq!(
                terminal_safe(&format!("a{c}b")),
                "ab",
                "U+{:04X}",
                *c as u32
            );
        }
        assert_eq!(terminal_safe("a\u{1b}[31mred\u{7}\r\n\tz"), "a[31mred\n\tz");
        assert_eq!(terminal_safe("\u{9b}2J\u{202e}x"), "2Jx");
        // Kept, and borrowed: text that needs no change is not copied.
        for kept in [
            "plain ü",
            "天气 météo — “quoted”",
            "tab\tnew\nline",
            "emoji 🌍",
        ] {
            assert!(
                matches!(terminal_safe(kept), Cow::Borrowed(s) if s == kept),
                "{kept}"
            );
        }
    }
}
