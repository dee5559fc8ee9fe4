//! The provider client: one OpenAI-compatible `/v1/chat/completions` endpoint over HTTP(S).
//!
//! Owns: the endpoint URL, the request (one JSON body per model turn, sent as-is), retries with
//! backoff on 429, 5xx, unreachable servers and malformed answers, request and connect
//! timeouts, the bound on an answer's size, and parsing an answer into a [`Completion`].
//!
//! Never does: decide what the model sees (the session) or what a tool call means (the agent
//! loop); retry a request that timed out (a slow local model would only be asked twice); hold
//! more than [`ProviderConfig::max_response_bytes`] of one answer in memory.
//!
//! Bounds: at most `max_retries + 1` attempts per turn; backoff `initial_backoff · 2ⁿ`, capped at
//! 8 s; a `Retry-After` is honoured only up to `max_retry_after` (beyond it the turn fails with
//! [`ProviderError::RateLimited`] at once); every attempt has the request timeout; error bodies
//! are cut to 512 characters with control characters stripped (they reach terminals).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::telemetry::terminal_safe;

/// Where and how to reach the provider. Build with [`ProviderConfig::new`]; every knob has a
/// default fit for a local model on a small CPU.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// Base URL (`http://127.0.0.1:8080`, `http://host:11434/v1`) or the full
    /// `…/chat/completions` endpoint. `/v1/chat/completions` is appended to a base URL.
    pub url: String,
    /// The `model` field of each request (llama-server ignores it; Ollama needs it).
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set (the CLI reads it from an environment
    /// variable, never from a flag).
    pub api_key: Option<String>,
    /// Wall-clock limit of one attempt, body included. Default 300 s: a 1.5B model on 2 CPU
    /// cores needs ≈ 100 s for a 5,000-token direct-mode prompt. Timed-out attempts are not
    /// retried.
    pub request_timeout: Duration,
    /// Limit for establishing a connection. Default 10 s.
    pub connect_timeout: Duration,
    /// Largest answer body read, in bytes. Default 8 MiB; a larger answer fails the turn.
    pub max_response_bytes: usize,
    /// Retries after the first attempt on 429, 5xx, an unreachable server or a malformed answer.
    /// Default 3.
    pub max_retries: u32,
    /// First backoff; doubled per retry, capped at 8 s. Default 250 ms.
    pub initial_backoff: Duration,
    /// Longest `Retry-After` honoured; a longer one fails the turn at once. Default 30 s.
    pub max_retry_after: Duration,
}

impl ProviderConfig {
    /// A provider at `url` serving `model`, with the defaults above and no API key.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            url: url.into(),
            model: model.into(),
            api_key: None,
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 8 << 20,
            max_retries: 3,
            initial_backoff: Duration::from_millis(250),
            max_retry_after: Duration::from_secs(30),
        }
    }

    /// The chat-completions endpoint the requests go to.
    pub fn endpoint(&self) -> String {
        let base = self.url.trim_end_matches('/');
        if base.ends_with("/chat/completions") {
            base.to_string()
        } else if base.ends_with("/v1") {
            format!("{base}/chat/completions")
        } else {
            format!("{base}/v1/chat/completions")
        }
    }
}

/// A turn the provider could not answer. Every variant says what happened and how often it was
/// tried; texts from the provider are cut and stripped of control characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The URL is not an http(s) URL.
    #[error(
        "invalid provider URL {url:?}: {reason}; give a base URL such as http://127.0.0.1:8080"
    )]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it is refused.
        reason: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("the provider client could not be built: {0}")]
    Client(String),
    /// An answer with a status that is not retried (4xx other than 429), or 5xx after the
    /// last retry.
    #[error("the provider answered HTTP {status} after {attempts} attempt(s): {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the answer body.
        body: String,
        /// Attempts made.
        attempts: u32,
    },
    /// 429 after the last retry, or with a `Retry-After` longer than the configured maximum.
    #[error("the provider is rate limiting (HTTP 429) after {attempts} attempt(s){}", .retry_after_secs.map(|s| format!("; it asks to wait {s} s")).unwrap_or_default())]
    RateLimited {
        /// The provider's `Retry-After`, when it sent one.
        retry_after_secs: Option<u64>,
        /// Attempts made.
        attempts: u32,
    },
    /// No complete answer within the request timeout.
    #[error(
        "no answer from the provider within {timeout_ms} ms (attempt {attempts}); raise the request timeout for slow local models"
    )]
    Timeout {
        /// The timeout in force.
        timeout_ms: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// The server could not be reached (refused, reset, DNS) after the last retry.
    #[error("cannot reach the provider at {url}: {detail} ({attempts} attempt(s))")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// The transport error.
        detail: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The answer was larger than the configured bound.
    #[error("the provider's answer exceeded {limit} bytes; it was not read")]
    TooLarge {
        /// The bound in force.
        limit: usize,
    },
    /// The answer is not a chat completion (not JSON, no choices, a tool call without a name…)
    /// after the last retry.
    #[error(
        "the provider's answer is not a chat completion ({detail}) after {attempts} attempt(s)"
    )]
    Malformed {
        /// What is wrong with it.
        detail: String,
        /// Attempts made.
        attempts: u32,
    },
}

impl ProviderError {
    /// A stable name of the variant (for JSON reports).
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::InvalidUrl { .. } => "invalid_url",
            ProviderError::Client(_) => "client",
            ProviderError::Status { .. } => "status",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Timeout { .. } => "timeout",
            ProviderError::Unreachable { .. } => "unreachable",
            ProviderError::TooLarge { .. } => "too_large",
            ProviderError::Malformed { .. } => "malformed",
        }
    }
}

/// One tool call of a completion, as the provider wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCall {
    /// The provider's call id, when it gave one.
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// The parsed arguments, or the text that is not a JSON value.
    pub arguments: Result<Value, String>,
}

/// One model turn as the provider answered it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Completion {
    /// The assistant's text, if any.
    pub content: Option<String>,
    /// Structured tool calls (`message.tool_calls`).
    pub tool_calls: Vec<RawCall>,
    /// `usage.prompt_tokens`, when reported.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, when reported.
    pub completion_tokens: Option<u64>,
    /// llama.cpp's `timings.prompt_ms` (prompt processing: the time to the first token), when
    /// reported.
    pub server_prompt_ms: Option<f64>,
}

/// What one turn's request cost (whatever its outcome).
#[derive(Debug, Clone, Default)]
pub(crate) struct Exchange {
    /// Attempts made.
    pub attempts: u32,
    /// The last HTTP status seen.
    pub status: Option<u16>,
    /// Bytes of the last answer body read.
    pub response_bytes: usize,
    /// Wall time over all attempts and backoffs.
    pub elapsed: Duration,
}

/// The HTTP client of one provider.
#[derive(Debug, Clone)]
pub(crate) struct ProviderClient {
    config: ProviderConfig,
    endpoint: String,
    http: reqwest::Client,
}

const MAX_BACKOFF: Duration = Duration::from_secs(8);
const ERROR_EXCERPT_CHARS: usize = 512;

/// What one attempt ended with.
enum Attempt {
    Done(Completion),
    /// Worth another attempt after the given delay (or the backoff when `None`).
    Retry(ProviderError, Option<Duration>),
    Fail(ProviderError),
}

impl ProviderClient {
    /// A client for `config`; refuses URLs that are not http(s).
    pub fn new(config: ProviderConfig) -> Result<ProviderClient, ProviderError> {
        let endpoint = config.endpoint();
        let parsed = reqwest::Url::parse(&endpoint).map_err(|error| ProviderError::InvalidUrl {
            url: config.url.clone(),
            reason: error.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::InvalidUrl {
                url: config.url.clone(),
                reason: format!("the scheme {:?} is not http or https", parsed.scheme()),
            });
        }
        // reqwest is built with `rustls-no-provider`: the process picks ring once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|error| ProviderError::Client(error.to_string()))?;
        Ok(ProviderClient {
            config,
            endpoint,
            http,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Sends one turn's request body, retrying as configured.
    pub async fn complete(&self, body: &[u8]) -> (Result<Completion, ProviderError>, Exchange) {
        let started = Instant::now();
        let mut exchange = Exchange::default();
        let mut backoff = self.config.initial_backoff;
        loop {
            exchange.attempts += 1;
            let attempt = self.attempt(body, &mut exchange).await;
            let (error, delay) = match attempt {
                Attempt::Done(completion) => {
                    exchange.elapsed = started.elapsed();
                    return (Ok(completion), exchange);
                }
                Attempt::Fail(error) => {
                    exchange.elapsed = started.elapsed();
                    return (Err(error), exchange);
                }
                Attempt::Retry(error, delay) => (error, delay),
            };
            if exchange.attempts > self.config.max_retries {
                exchange.elapsed = started.elapsed();
                return (Err(error), exchange);
            }
            let wait = delay.unwrap_or(backoff);
            tracing::debug!(attempt = exchange.attempts, wait_ms = wait.as_millis() as u64, error = %error, "provider retry");
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    async fn attempt(&self, body: &[u8], exchange: &mut Exchange) -> Attempt {
        let attempts = exchange.attempts;
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(error) => return self.transport_error(&error, attempts),
        };
        let status = response.status().as_u16();
        exchange.status = Some(status);
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let limit = self.config.max_response_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Attempt::Fail(ProviderError::TooLarge { limit });
        }
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > limit {
                        return Attempt::Fail(ProviderError::TooLarge { limit });
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) => return self.transport_error(&error, attempts),
            }
        }
        exchange.response_bytes = bytes.len();
        if status == 429 {
            let error = ProviderError::RateLimited {
                retry_after_secs: retry_after,
                attempts,
            };
            return match retry_after.map(Duration::from_secs) {
                Some(wait) if wait > self.config.max_retry_after => Attempt::Fail(error),
                wait => Attempt::Retry(error, wait),
            };
        }
        if !(200..300).contains(&status) {
            let error = ProviderError::Status {
                status,
                body: excerpt(&String::from_utf8_lossy(&bytes)),
                attempts,
            };
            return if status >= 500 {
                let wait = retry_after
                    .map(Duration::from_secs)
                    .filter(|w| *w <= self.config.max_retry_after);
                Attempt::Retry(error, wait)
            } else {
                Attempt::Fail(error)
            };
        }
        match parse_completion(&bytes) {
            Ok(completion) => Attempt::Done(completion),
            Err(detail) => Attempt::Retry(ProviderError::Malformed { detail, attempts }, None),
        }
    }

    fn transport_error(&self, error: &reqwest::Error, attempts: u32) -> Attempt {
        if error.is_timeout() {
            return Attempt::Fail(ProviderError::Timeout {
                timeout_ms: self.config.request_timeout.as_millis() as u64,
                attempts,
            });
        }
        let mut detail = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        Attempt::Retry(
            ProviderError::Unreachable {
                url: self.endpoint.clone(),
                detail: excerpt(&detail),
                attempts,
            },
            None,
        )
    }
}

/// Untrusted provider text for a message: control characters stripped, cut to 512 characters.
fn excerpt(text: &str) -> String {
    let clean = terminal_safe(text.trim());
    let mut cut: String = clean.chars().take(ERROR_EXCERPT_CHARS).collect();
    if clean.chars().count() > ERROR_EXCERPT_CHARS {
        cut.push('…');
    }
    cut
}

/// Parses a chat-completion answer. The error says what is missing, in a few words.
pub(crate) fn parse_completion(bytes: &[u8]) -> Result<Completion, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        format!(
            "not JSON: {error}; it starts with {:?}",
            excerpt(&String::from_utf8_lossy(&bytes[..bytes.len().min(80)]))
        )
    })?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| error.to_string());
        return Err(format!("an error object: {}", excerpt(&message)));
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or("no choices")?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("the first choice has no message object")?;
    let content = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        // Content parts: keep the text parts.
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        Some(_) => return Err("message.content is neither text nor parts".into()),
    };
    let mut tool_calls = Vec::new();
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                let function = call
                    .get("function")
                    .ok_or_else(|| format!("tool call {i} has no function"))?;
                let name = function
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| format!("tool call {i} has no function name"))?;
                let arguments = match function.get("arguments") {
                    None | Some(Value::Null) => Ok(Value::Object(Default::default())),
                    Some(Value::String(text)) if text.trim().is_empty() => {
                        Ok(Value::Object(Default::default()))
                    }
                    Some(Value::String(text)) => {
                        serde_json::from_str::<Value>(text).map_err(|_| text.clone())
                    }
                    // Some servers send the arguments as an object.
                    Some(other) => Ok(other.clone()),
                };
                tool_calls.push(RawCall {
                    id: call.get("id").and_then(Value::as_str).map(str::to_string),
                    name: name.to_string(),
                    arguments,
                });
            }
        }
        Some(_) => return Err("message.tool_calls is not an array".into()),
    }
    let usage = value.get("usage");
    let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
    Ok(Completion {
        content,
        tool_calls,
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
        server_prompt_ms: value
            .get("timings")
            .and_then(|t| t.get("prompt_ms"))
            .and_then(Value::as_f64),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn endpoint_from_base_urls() {
        let url = |u: &str| ProviderConfig::new(u, "m").endpoint();
        assert_eq!(
            url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            url("http://h:11434/v1/"),
            "http://h:11434/v1/chat/completions"
        );
        assert_eq!(
            url("http://h/v1/chat/completions"),
            "http://h/v1/chat/completions"
        );
    }

    #[test]
    fn parses_tool_calls_and_usage() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"tool_search","arguments":"{\"query\":\"x\"}"}},
            {"function":{"name":"t","arguments":"{not json"}}]}}],
            "usage":{"prompt_tokens":12,"completion_tokens":3},"timings":{"prompt_ms":41.5}}"#;
        let c = parse_completion(body).unwrap();
        assert_eq!(c.content, None);
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(
            c.tool_calls[0].arguments,
            Ok(serde_json::json!({"query": "x"}))
        );
        assert_eq!(c.tool_calls[1].id, None);
        assert_eq!(c.tool_calls[1].arguments, Err("{not json".to_string()));
        assert_eq!((c.prompt_tokens, c.completion_tokens), (Some(12), Some(3)));
        assert_eq!(c.server_prompt_ms, Some(41.5));
    }

    #[test]
    fn malformed_answers_say_why() {
        for (body, why) in [
            (&b"{\"choices\": ["[..], "not JSON"),
            (&b"{}"[..], "no choices"),
            (&b"{\"choices\": []}"[..], "no choices"),
            (&b"{\"choices\": [{}]}"[..], "no message"),
            (
                &b"{\"error\": {\"message\": \"overloaded\"}}"[..],
                "overloaded",
            ),
            (
                &br#"{"choices":[{"message":{"tool_calls":[{"function":{}}]}}]}"#[..],
                "no function name",
            ),
        ] {
            let error = parse_completion(body).unwrap_err();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn excerpts_strip_controls() {
        assert_eq!(excerpt("a\u{1b}[31mb\u{7}"), "a[31mb");
        assert_eq!(excerpt(&"x".repeat(600)).chars().count(), 513);
    }
}
