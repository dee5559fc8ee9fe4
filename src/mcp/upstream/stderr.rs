//! A stdio server's stderr: drained line by line into a tail bounded per line and in total,
//! made terminal-safe; why a connection ended (the child's exit, with its last lines); and an
//! outage reason with or without the server's own last line.
//!
//! Never does: block the child (the pipe is always drained), or show the tail to anyone but
//! the operator.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::child::ChildGroup;
use super::lock;

/// Longest stderr line kept (longer ones are cut).
pub const STDERR_LINE_BYTES: usize = 2 * 1024;
/// Bytes of stderr kept per server (the most recent lines).
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// What separates an outage reason from the server's last stderr line in [`UpstreamStatus::Down`].
pub const STDERR_NOTE: &str = "; its last stderr line: ";

/// An outage reason without the server's own stderr text (which may carry anything the server
/// printed, secrets included): for reports to parties that are not the operator, e.g. `/health`.
pub fn without_stderr(reason: &str) -> &str {
    reason.find(STDERR_NOTE).map_or(reason, |at| &reason[..at])
}

/// The recent stderr of a server, bounded per line and in total, made terminal-safe
/// ([`crate::telemetry::terminal_safe`]).
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    fn push(&mut self, line: &str) {
        // The one terminal-safety filter (controls, bidi, zero-width), and no line breaks.
        let mut clean = crate::telemetry::terminal_safe(line).replace('\n', " ");
        if clean.len() > STDERR_LINE_BYTES {
            let mut end = STDERR_LINE_BYTES;
            while !clean.is_char_boundary(end) {
                end -= 1;
            }
            clean.truncate(end);
            clean.push('…');
        }
        self.bytes += clean.len();
        self.lines.push_back(clean);
        while self.bytes > STDERR_TAIL_BYTES
            && let Some(old) = self.lines.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    /// The last `n` lines, oldest first.
    pub fn last(&self, n: usize) -> Vec<String> {
        let skip = self.lines.len().saturating_sub(n);
        self.lines.iter().skip(skip).cloned().collect()
    }
}

/// How long a reason waits for an exited child's last stderr lines (a grandchild that keeps the
/// pipe open would otherwise hold it up).
const STDERR_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Why a connection ended: the child's exit, when there is a child. After an exit it lets the
/// stderr drain reach the end of the pipe (bounded), so that the reason built next carries the
/// last line the child wrote, not whatever the drain had read when the exit was noticed.
pub(super) async fn exit_reason(child: Option<&mut ChildGroup>) -> String {
    match child {
        Some(group) => {
            match tokio::time::timeout(Duration::from_secs(2), group.child.wait()).await {
                Ok(Ok(status)) => {
                    if let Some(drain) = group.stderr.take() {
                        let _ = tokio::time::timeout(STDERR_AFTER_EXIT, drain).await;
                    }
                    format!("it exited ({status})")
                }
                Ok(Err(e)) => format!("it stopped ({e})"),
                Err(_) => "its connection closed".to_string(),
            }
        }
        None => "its connection closed".to_string(),
    }
}

/// Drains a child's stderr line by line into its bounded tail (never blocks the child).
pub(super) async fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<StderrTail>>,
    server: String,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let read = (&mut reader)
            .take(STDERR_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') && line.len() > STDERR_LINE_BYTES {
                    // Skip the rest of an over-long line.
                    let mut rest = Vec::new();
                    loop {
                        rest.clear();
                        match (&mut reader)
                            .take(64 * 1024)
                            .read_until(b'\n', &mut rest)
                            .await
                        {
                            Ok(0) | Err(_) => break,
                            Ok(_) if rest.last() == Some(&b'\n') => break,
                            Ok(_) => {}
                        }
                    }
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                tracing::debug!(server = %server, "stderr: {}", text.escape_debug());
                lock(&tail).push(text);
            }
        }
    }
}
