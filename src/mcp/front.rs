//! The HTTP front of `serve --http`: what every request and connection passes before the MCP
//! service sees it.
//!
//! Owns: the DNS-rebinding check (`Host`, and `Origin` when sent) and the bearer token, applied
//! to every path — `/health` as much as `/mcp`; reading a request body under its size bound
//! ([`MAX_MCP_MESSAGE_BYTES`]), nesting bound and deadline, and the JSON checks of a POSTed
//! message (one JSON-RPC message; no batches), each refusal a JSON-RPC error naming its bound;
//! the connection cap (kept below the descriptor limit) and the backoff and single log line of
//! a failing `accept`.
//! Never does: MCP semantics (sessions, methods, tools: rmcp's service and
//! [`super::serve::handler::Handler`]), or log a request's content.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

use crate::config::input::{self, MAX_MCP_MESSAGE_BYTES, MAX_MCP_MESSAGE_DEPTH};

/// The body type of every answer the front writes itself.
pub(super) type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

/// Shortest bearer token accepted (characters): a shorter one is refused at start.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Descriptors kept free below `RLIMIT_NOFILE` for everything that is not a client connection
/// (upstream pipes, sandbox workers, the session log, the listener).
pub const RESERVED_DESCRIPTORS: u64 = 128;

/// Longest `params.name` (a tool or prompt name) a POSTed message may carry, in bytes: MCP
/// names are at most 128 characters and this gateway's ids a few hundred; a longer one is
/// refused before anything echoes it.
pub const MAX_NAME_BYTES: usize = 1024;

/// A JSON answer with `status`.
pub(super) fn respond(status: u16, body: Value) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error answer (`id: null`: the request was not parsed, or not trusted).
pub(super) fn rpc_error(status: u16, code: i64, message: String) -> hyper::Response<Body> {
    respond(
        status,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}),
    )
}

/// Why a token cannot be used.
pub fn check_token(token: &str) -> Result<(), String> {
    let chars = token.chars().count();
    if chars < MIN_TOKEN_CHARS {
        return Err(format!(
            "the auth token has {chars} character(s); use at least {MIN_TOKEN_CHARS} (e.g. the \
             output of `openssl rand -hex 32`)"
        ));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "the auth token contains whitespace or control characters, which an Authorization \
             header cannot carry; use letters, digits and punctuation"
                .into(),
        );
    }
    Ok(())
}

/// A host name (lowercase, IPv6 without brackets) and, when given, a port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    fn parse(text: &str) -> Option<Authority> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let normalize = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
        match http::uri::Authority::try_from(text) {
            // No user info: `evil@localhost` names the host `localhost` to a URI parser but is
            // not a Host value any browser sends.
            Ok(authority) if !authority.as_str().contains('@') => Some(Authority {
                host: normalize(authority.host()),
                port: authority.port_u16(),
            }),
            Ok(_) => None,
            Err(_) => Some(Authority {
                host: normalize(text),
                port: None,
            }),
        }
    }

    /// Whether `self` (an allowed entry) admits `presented`: same host, and the same port when
    /// the entry names one.
    fn admits(&self, presented: &Authority) -> bool {
        self.host == presented.host && self.port.is_none_or(|port| presented.port == Some(port))
    }
}

/// The checks every HTTP request passes: `Host` and `Origin` against the allowed names, then
/// the bearer token.
pub(super) struct Guard {
    hosts: Vec<Authority>,
    port: u16,
    token: Option<String>,
}

impl Guard {
    /// A guard admitting `hosts` (names, optionally with a port) for a listener on `port`.
    pub(super) fn new(hosts: &[String], port: u16, token: Option<String>) -> Guard {
        Guard {
            hosts: hosts.iter().filter_map(|h| Authority::parse(h)).collect(),
            port,
            token,
        }
    }

    /// `None` when the request may go on; else the answer to send (403 or 401, JSON).
    pub(super) fn refusal(
        &self,
        request: &hyper::Request<hyper::body::Incoming>,
    ) -> Option<hyper::Response<Body>> {
        let headers = request.headers();
        let host = headers
            .get(hyper::header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()))
            .and_then(Authority::parse);
        let Some(host) = host else {
            return Some(forbidden("the request has no valid Host header"));
        };
        if !self.hosts.iter().any(|allowed| allowed.admits(&host)) {
            tracing::warn!(
                host = %input::echo(&host.host).to_string().escape_debug(),
                "refused a request with a Host that is not allowed (possible DNS rebinding)"
            );
            return Some(forbidden(
                "the Host header is not an allowed name (loopback names, the bound address and \
                 --allowed-host)",
            ));
        }
        if let Some(origin) = headers.get(hyper::header::ORIGIN)
            && !self.origin_allowed(origin.to_str().unwrap_or_default())
        {
            tracing::warn!("refused a request with an Origin that is not allowed");
            return Some(forbidden(
                "the Origin header is not an allowed origin (http or https, an allowed host, this \
                 server's port)",
            ));
        }
        if let Some(expected) = &self.token {
            let presented = headers
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer)
                .unwrap_or_default();
            if !token_matches(presented.as_bytes(), expected.as_bytes()) {
                let mut response = respond(
                    401,
                    json!({"error": "a bearer token is required (Authorization: Bearer TOKEN)"}),
                );
                response.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    hyper::header::HeaderValue::from_static("Bearer"),
                );
                return Some(response);
            }
        }
        None
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let Ok(uri) = origin.trim().parse::<http::Uri>() else {
            return false;
        };
        let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
        let path_ok = uri
            .path_and_query()
            .is_none_or(|p| p.as_str().is_empty() || p == "/");
        let Some(authority) = uri.authority().and_then(|a| Authority::parse(a.as_str())) else {
            return false;
        };
        // An origin names its port only when it is not the scheme's default.
        let port = authority.port.unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        scheme_ok
            && path_ok
            && self.hosts.iter().any(|allowed| {
                allowed.host == authority.host && port == allowed.port.unwrap_or(self.port)
            })
    }
}

fn forbidden(message: &str) -> hyper::Response<Body> {
    respond(403, json!({"error": format!("forbidden: {message}")}))
}

/// The token of an `Authorization` value with the `Bearer` scheme (any case, RFC 9110 §11.1).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Constant-time comparison of the presented token with the expected one.
fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    if presented.len() != expected.len() {
        return false;
    }
    presented
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// Reads a client's request body under [`MAX_MCP_MESSAGE_BYTES`], [`MAX_MCP_MESSAGE_DEPTH`] and
/// `deadline` (a body that stops arriving is cut: 408); a POSTed body must also be one JSON
/// value that is not an array (JSON-RPC batches are not part of MCP since 2025-06-18). Every
/// refusal is a JSON-RPC error naming its bound; the connection and the session go on.
pub(super) async fn read_body(
    request: hyper::Request<hyper::body::Incoming>,
    deadline: Duration,
) -> Result<(hyper::Request<Full<Bytes>>, Bytes), hyper::Response<Body>> {
    let post = request.method() == hyper::Method::POST;
    let (parts, body) = request.into_parts();
    let collected = tokio::time::timeout(
        deadline,
        http_body_util::Limited::new(body, MAX_MCP_MESSAGE_BYTES).collect(),
    )
    .await;
    let bytes = match collected {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(rpc_error(
                413,
                -32600,
                format!(
                    "the request body is larger than {MAX_MCP_MESSAGE_BYTES} bytes (limit \
                     MAX_MCP_MESSAGE_BYTES); send smaller messages"
                ),
            ));
        }
        Ok(Err(e)) => {
            return Err(rpc_error(
                400,
                -32600,
                format!("the request body could not be read: {e}"),
            ));
        }
        Err(_elapsed) => {
            return Err(rpc_error(
                408,
                -32600,
                format!(
                    "the request body did not arrive within {} s (the body timeout, \
                     --body-timeout-secs)",
                    deadline.as_secs_f64()
                ),
            ));
        }
    };
    if input::json_depth_exceeds(&bytes, MAX_MCP_MESSAGE_DEPTH) {
        return Err(rpc_error(
            400,
            -32600,
            format!(
                "the request nests arrays and objects deeper than {MAX_MCP_MESSAGE_DEPTH} levels \
                 (limit MAX_MCP_MESSAGE_DEPTH); send flatter arguments"
            ),
        ));
    }
    if post && let Some(refused) = refuse_message(&bytes) {
        return Err(refused);
    }
    Ok((
        hyper::Request::from_parts(parts, Full::new(bytes.clone())),
        bytes,
    ))
}

/// The answer refusing a POSTed body before the MCP service reads it: not one JSON value
/// (−32700), a `params.name` longer than [`MAX_NAME_BYTES`] (−32602, with the request's id, the
/// name echoed bounded), or a batch (−32600). One parse of the usual message; a body of another
/// shape is parsed again only to tell a syntax error from a shape the service answers itself.
fn refuse_message(body: &[u8]) -> Option<hyper::Response<Body>> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        id: Option<Value>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    let parse_error = |e: serde_json::Error| {
        rpc_error(
            400,
            -32700,
            format!("parse error: the request body is not one JSON value ({e})"),
        )
    };
    match serde_json::from_slice::<Message<'_>>(body) {
        Ok(message) => {
            let name = message.params?.name?;
            (name.len() > MAX_NAME_BYTES).then(|| {
                respond(
                    200,
                    json!({"jsonrpc": "2.0", "id": message.id, "error": {"code": -32602, "message": format!(
                        "the name {:?} is {} bytes; names are at most {MAX_NAME_BYTES} bytes \
                         (MAX_NAME_BYTES): use a name from tools/list",
                        input::echo(&name),
                        name.len()
                    )}}),
                )
            })
        }
        Err(e) if !e.is_data() => Some(parse_error(e)),
        // Valid so far, another shape: the rest must still be JSON.
        Err(_) => {
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                return Some(parse_error(e));
            }
            (body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')).then(|| {
                rpc_error(
                    400,
                    -32600,
                    "the request body is a JSON array (a JSON-RPC batch); MCP has no batches \
                     since 2025-06-18: send one message per request"
                        .into(),
                )
            })
        }
    }
}

/// The connection cap actually used: `requested`, lowered to stay [`RESERVED_DESCRIPTORS`]
/// below the soft descriptor limit. Returns the cap and, when it was lowered, why.
pub(super) fn connection_cap(requested: usize) -> (usize, Option<String>) {
    let requested = requested.max(1);
    let Ok((soft, _hard)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    else {
        return (requested, None);
    };
    let room = usize::try_from(soft.saturating_sub(RESERVED_DESCRIPTORS))
        .unwrap_or(usize::MAX)
        .max(1);
    if requested > room {
        (
            room,
            Some(format!(
                "--max-connections {requested} lowered to {room}: the descriptor limit \
                 (RLIMIT_NOFILE) is {soft} and {RESERVED_DESCRIPTORS} are kept for the rest"
            )),
        )
    } else {
        (requested, None)
    }
}

/// The first delay after a failed `accept`; it doubles up to [`MAX_ACCEPT_BACKOFF`].
pub const FIRST_ACCEPT_BACKOFF: Duration = Duration::from_millis(5);
/// The longest delay between `accept` attempts while they fail.
pub const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Backoff and logging of failing `accept` calls (e.g. at the descriptor limit): one warning
/// when a run of failures starts, one line when accepting works again, never a line per error.
#[derive(Debug, Default)]
pub(super) struct AcceptBackoff {
    failures: u64,
}

impl AcceptBackoff {
    /// Records a failure; returns how long to wait before the next `accept`.
    pub(super) fn failed(&mut self, error: &std::io::Error) -> Duration {
        if self.failures == 0 {
            tracing::warn!(
                %error,
                "accepting connections failed; retrying with backoff (up to {} ms), further \
                 errors are counted, not logged",
                MAX_ACCEPT_BACKOFF.as_millis()
            );
        }
        self.failures += 1;
        let doublings = u32::try_from(self.failures.saturating_sub(1).min(16)).unwrap_or(16);
        FIRST_ACCEPT_BACKOFF
            .saturating_mul(1u32 << doublings)
            .min(MAX_ACCEPT_BACKOFF)
    }

    /// Records a success (ending a run of failures, if any).
    pub(super) fn succeeded(&mut self) {
        if self.failures > 0 {
            tracing::warn!(
                "accepting connections works again after {} failed attempt(s)",
                self.failures
            );
            self.failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_the_token_trimmed() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("BEARER abc"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearerabc"), None);
    }

    #[test]
    fn accept_backoff_doubles_to_its_bound() {
        let mut backoff = AcceptBackoff::default();
        let error = std::io::Error::from_raw_os_error(libc::EMFILE);
        let delays: Vec<_> = (0..12).map(|_| backoff.failed(&error)).collect();
        assert_eq!(delays[0], FIRST_ACCEPT_BACKOFF);
        assert_eq!(delays[1], FIRST_ACCEPT_BACKOFF * 2);
        assert_eq!(
            *delays.last().unwrap_or(&Duration::ZERO),
            MAX_ACCEPT_BACKOFF
        );
        backoff.succeeded();
        assert_eq!(backoff.failed(&error), FIRST_ACCEPT_BACKOFF);
    }
}
