//! Bounds on newline-delimited JSON-RPC read from a peer (an upstream server's stdout, the
//! stdin of `toolsearch serve`).
//!
//! Owns: [`Bounded`], an `AsyncRead` adapter that scans the bytes as they pass and fails the
//! read once one message is larger than [`MAX_MCP_MESSAGE_BYTES`] or nests arrays and objects
//! deeper than [`MAX_MCP_MESSAGE_DEPTH`], recording why in a [`Violation`] slot (the stdin of
//! `serve`); and the same scan over one whole message ([`nesting`], [`compact_len`]), which the
//! upstream transport (`transport.rs`) and the listing (`ingest.rs`) apply per message and per
//! entry, so that one deep entry costs only itself.
//! Never does: parse, buffer or change a byte (the transport's codec parses what passes); recover
//! a stream after a violation (the connection is closed; a server is restarted).
//! Invariants: the scan is one pass with constant state per byte, so its cost is bounded by the
//! input and never by a recursion.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use crate::config::input::{MAX_MCP_MESSAGE_BYTES, MAX_MCP_MESSAGE_DEPTH};

/// Why a stream was cut, once it was: one sentence naming the bound and the peer.
pub type Violation = Arc<Mutex<Option<String>>>;

/// An `AsyncRead` that fails once a message passes a bound (see the module docs).
pub struct Bounded<R> {
    inner: R,
    peer: String,
    violation: Violation,
    line_bytes: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    failed: Option<String>,
}

impl<R> Bounded<R> {
    /// Wraps `inner`; `peer` names it in the error ("the MCP server \"x\"", "the MCP client").
    pub fn new(inner: R, peer: impl Into<String>, violation: Violation) -> Bounded<R> {
        Bounded {
            inner,
            peer: peer.into(),
            violation,
            line_bytes: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            failed: None,
        }
    }

    /// Scans `bytes`; the violation, if one occurs.
    fn scan(&mut self, bytes: &[u8]) -> Option<String> {
        for &b in bytes {
            if b == b'\n' {
                self.line_bytes = 0;
                self.depth = 0;
                self.in_string = false;
                self.escaped = false;
                continue;
            }
            self.line_bytes += 1;
            if self.line_bytes > MAX_MCP_MESSAGE_BYTES {
                return Some(format!(
                    "{} sent a JSON-RPC message larger than {MAX_MCP_MESSAGE_BYTES} bytes (limit \
                     MAX_MCP_MESSAGE_BYTES); the connection was closed",
                    self.peer
                ));
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth > MAX_MCP_MESSAGE_DEPTH {
                        return Some(format!(
                            "{} sent a JSON-RPC message nested deeper than \
                             {MAX_MCP_MESSAGE_DEPTH} levels of arrays and objects (limit \
                             MAX_MCP_MESSAGE_DEPTH); the connection was closed",
                            self.peer
                        ));
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        None
    }
}

/// Calls `each(byte, in_string)` for every byte of `json` (one JSON text): `in_string` is true
/// for the bytes of a string, its quotes included. One pass, constant state.
fn scan_json(json: &[u8], mut each: impl FnMut(u8, bool)) {
    let (mut in_string, mut escaped) = (false, false);
    for &b in json {
        if in_string {
            each(b, true);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            in_string = b == b'"';
            each(b, in_string);
        }
    }
}

/// How deep `json` (one JSON text, assumed well-formed) nests arrays and objects: one pass,
/// constant state, strings skipped.
pub fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    scan_json(json, |b, in_string| match b {
        _ if in_string => {}
        b'[' | b'{' => {
            depth += 1;
            deepest = deepest.max(depth);
        }
        b']' | b'}' => depth = depth.saturating_sub(1),
        _ => {}
    });
    deepest
}

/// The bytes of `json` (one JSON text) without insignificant whitespace: what its compact
/// form is, to within the spelling of escapes and numbers.
pub fn compact_len(json: &[u8]) -> usize {
    let mut len = 0usize;
    scan_json(json, |b, in_string| {
        if in_string || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            len += 1;
        }
    });
    len
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(reason) = &self.failed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                reason.clone(),
            )));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let fresh = &buf.filled()[before..];
                if let Some(reason) = this.scan(fresh) {
                    tracing::warn!("{reason}");
                    if let Ok(mut slot) = this.violation.lock() {
                        *slot = Some(reason.clone());
                    }
                    // Nothing of the offending message reaches the codec.
                    buf.set_filled(before);
                    this.failed = Some(reason.clone());
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, reason)));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn read_all(input: Vec<u8>) -> (io::Result<Vec<u8>>, Option<String>) {
        let violation = Violation::default();
        let mut r = Bounded::new(&input[..], "the MCP server \"t\"", violation.clone());
        let mut out = Vec::new();
        let res = r.read_to_end(&mut out).await.map(|_| out);
        let v = violation.lock().ok().and_then(|v| v.clone());
        (res, v)
    }

    #[tokio::test]
    async fn passes_ordinary_messages_unchanged() {
        let text =
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,2,\"]]]{{{\"]}}\n".repeat(3);
        let (res, v) = read_all(text.clone()).await;
        assert_eq!(res.ok(), Some(text));
        assert_eq!(v, None);
    }

    #[tokio::test]
    async fn cuts_a_deep_message_naming_the_bound_and_peer() {
        let deep = format!(
            "{}{}\n",
            "[".repeat(MAX_MCP_MESSAGE_DEPTH + 1),
            "]".repeat(MAX_MCP_MESSAGE_DEPTH + 1)
        );
        let (res, v) = read_all(deep.into_bytes()).await;
        assert!(res.is_err());
        let v = v.unwrap_or_default();
        assert!(v.contains("MAX_MCP_MESSAGE_DEPTH"), "{v}");
        assert!(v.contains("\"t\""), "{v}");
        // Depth is per message: many shallow lines are fine.
        let (res, _) = read_all(b"[[[]]]\n".repeat(100)).await;
        assert!(res.is_ok());
    }

    #[test]
    fn nesting_and_compact_length_skip_strings() {
        assert_eq!(nesting(br#"{"a":[1,{"b":"]]]{{{"}],"c":{}}"#), 3);
        assert_eq!(nesting(b"1"), 0);
        assert_eq!(nesting(br#""[[[\"[""#), 0);
        assert_eq!(compact_len(b" { \"a b\" : [ 1 , 2 ] } "), 13);
    }

    #[tokio::test]
    async fn cuts_a_huge_message() {
        let mut huge = vec![b'"'; 1];
        huge.extend(std::iter::repeat_n(b'x', MAX_MCP_MESSAGE_BYTES));
        huge.extend_from_slice(b"\"\n");
        let (res, v) = read_all(huge).await;
        assert!(res.is_err());
        assert!(v.unwrap_or_default().contains("MAX_MCP_MESSAGE_BYTES"));
    }
}
