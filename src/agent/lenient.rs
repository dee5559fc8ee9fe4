//! Tool calls written as text: the forms small local models use instead of `tool_calls`.
//!
//! Owns: finding calls in an assistant's `content` — `<tool_call>{…}</tool_call>` blocks (Qwen,
//! Hermes; an unclosed block at the end counts), fenced code blocks (```` ```json ````, or
//! without a language) holding one call object, and a content that is nothing but one call
//! object. A call object is `{"name": "…", "arguments": {…}}` (`parameters` is accepted for
//! `arguments`; arguments may also be a JSON string). Returns the calls in order and the content
//! with the call text removed.
//!
//! Never does: guess a call from prose, accept an object without a string `name`, or look at
//! more than [`MAX_SCANNED_BYTES`] of content or return more than [`MAX_CALLS`] calls.

use serde_json::Value;

use super::provider::RawCall;

/// Content beyond this many bytes is not scanned for calls.
pub const MAX_SCANNED_BYTES: usize = 256 * 1024;
/// At most this many text calls are taken from one message.
pub const MAX_CALLS: usize = 16;

/// The calls found in `content` and the content left once they are removed (trimmed).
pub(crate) fn parse(content: &str) -> (Vec<RawCall>, String) {
    let mut scan_end = content.len().min(MAX_SCANNED_BYTES);
    while !content.is_char_boundary(scan_end) {
        scan_end -= 1;
    }
    let text = &content[..scan_end];
    let mut calls = Vec::new();
    let mut rest = String::new();

    // 1. `<tool_call>` blocks.
    if text.contains("<tool_call>") {
        let mut cursor = 0;
        while let Some(start) = text[cursor..].find("<tool_call>") {
            let open = cursor + start;
            rest.push_str(&text[cursor..open]);
            let body_start = open + "<tool_call>".len();
            let (body, next) = match text[body_start..].find("</tool_call>") {
                Some(end) => (
                    &text[body_start..body_start + end],
                    body_start + end + "</tool_call>".len(),
                ),
                None => (&text[body_start..], text.len()),
            };
            match call_object(strip_fence(body)) {
                Some(call) if calls.len() < MAX_CALLS => calls.push(call),
                _ => rest.push_str(&text[open..next]),
            }
            cursor = next;
        }
        rest.push_str(&text[cursor..]);
        if !calls.is_empty() {
            return (calls, rest.trim().to_string());
        }
        rest.clear();
    }

    // 2. Fenced blocks.
    if text.contains("```") {
        let mut cursor = 0;
        while let Some(start) = text[cursor..].find("```") {
            let open = cursor + start;
            let after = open + 3;
            let Some(end) = text[after..].find("```") else {
                break;
            };
            let block = &text[after..after + end];
            let next = after + end + 3;
            // Drop an info string (`json`, `tool_call`…) on the opening line.
            let body = match block.find('\n') {
                Some(nl) if !block[..nl].trim_start().starts_with('{') => &block[nl + 1..],
                _ => block,
            };
            rest.push_str(&text[cursor..open]);
            match call_object(body) {
                Some(call) if calls.len() < MAX_CALLS => calls.push(call),
                _ => rest.push_str(&text[open..next]),
            }
            cursor = next;
        }
        rest.push_str(&text[cursor..]);
        if !calls.is_empty() {
            return (calls, rest.trim().to_string());
        }
        rest.clear();
    }

    // 3. The whole content is one call object.
    if let Some(call) = call_object(text) {
        return (vec![call], String::new());
    }
    (Vec::new(), content.trim().to_string())
}

fn strip_fence(body: &str) -> &str {
    let trimmed = body.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.strip_suffix("```").unwrap_or(inner);
    match inner.find('\n') {
        Some(nl) if !inner[..nl].trim_start().starts_with('{') => &inner[nl + 1..],
        _ => inner,
    }
}

/// `{"name": string, "arguments"|"parameters": object | JSON string}`.
fn call_object(text: &str) -> Option<RawCall> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?.trim();
    if name.is_empty() {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(Value::Null) => Ok(Value::Object(Default::default())),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).map_err(|_| text.clone()),
        Some(other) => Ok(other.clone()),
    };
    Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn names(content: &str) -> (Vec<(String, Value)>, String) {
        let (calls, rest) = parse(content);
        (
            calls
                .into_iter()
                .map(|c| (c.name, c.arguments.unwrap_or(Value::Null)))
                .collect(),
            rest,
        )
    }

    #[test]
    fn tool_call_tags() {
        let (calls, rest) = names(
            "I will search.\n<tool_call>\n{\"name\": \"tool_search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>",
        );
        assert_eq!(
            calls,
            vec![("tool_search".to_string(), json!({"query": "x"}))]
        );
        assert_eq!(rest, "I will search.");
        // Two blocks, the second unclosed (the model stopped).
        let (calls, _) = names(
            "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"b\",\"parameters\":{\"k\":1}}",
        );
        assert_eq!(
            calls,
            vec![
                ("a".to_string(), json!({})),
                ("b".to_string(), json!({"k": 1}))
            ]
        );
    }

    #[test]
    fn fenced_json() {
        let (calls, rest) = names(
            "Calling it:\n```json\n{\"name\": \"convert_units\", \"arguments\": \"{\\\"value\\\": 1}\"}\n```\nDone.",
        );
        assert_eq!(
            calls,
            vec![("convert_units".to_string(), json!({"value": 1}))]
        );
        assert_eq!(rest, "Calling it:\n\nDone.");
        let (calls, _) = names("```\n{\"name\":\"t\",\"arguments\":{}}\n```");
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn bare_object_and_prose() {
        assert_eq!(names("{\"name\":\"t\",\"arguments\":{\"a\":1}}").0.len(), 1);
        // Prose, JSON without a name, code that is not a call: no calls, content kept.
        for text in [
            "The answer is 42.",
            "```json\n{\"status\": \"ok\"}\n```",
            "{\"name\": 3}",
            "<tool_call>not json</tool_call>",
        ] {
            let (calls, rest) = names(text);
            assert!(calls.is_empty(), "{text}");
            assert_eq!(rest, text.trim());
        }
    }

    #[test]
    fn non_json_arguments_are_kept_as_text() {
        let (calls, _) = parse("<tool_call>{\"name\":\"t\",\"arguments\":\"{oops\"}</tool_call>");
        assert_eq!(calls[0].arguments, Err("{oops".to_string()));
    }
}
