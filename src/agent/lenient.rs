//! Tool calls written as text: the forms small local models use instead of `tool_calls`.
//!
//! Owns: finding calls in an assistant's `content` — `<tool_call>{…}</tool_call>` blocks (Qwen,
//! Hermes; an unclosed block at the end counts), fenced code blocks (```` ```json ````, or
//! without a language) holding one call object, and a content that is nothing but one call
//! object. A call object is `{"name": "…", "arguments": {…}}` (`parameters` is accepted for
//! `arguments`; arguments may also be a JSON string). Returns the calls in order and the content
//! with the call text removed.
//!
//! Also finds a code cell written as text ([`code_in_text`]): JavaScript in a fence or on bare
//! lines that calls `openclaw.tools.search / describe / call(…)`, or a JSON fence holding
//! `tool_search_code`'s arguments (`{"code": "…"}`, that code calling the bridge); the agent runs
//! it as a `tool_search_code` cell when that control is declared.
//!
//! Never does: guess a call from prose, accept an object without a string `name`, take code
//! that does not call the bridge, or look at more than [`MAX_SCANNED_BYTES`] of content or
//! return more than [`MAX_CALLS`] calls.

use serde_json::Value;

use super::provider::RawCall;

/// Content beyond this many bytes is not scanned for calls.
pub const MAX_SCANNED_BYTES: usize = 256 * 1024;
/// At most this many text calls are taken from one message.
pub const MAX_CALLS: usize = 16;

/// The calls in the blocks of `text` and the text around them (trimmed), or `None` when no
/// block holds a call. `next_block(cursor)` finds the first block at or after `cursor`: where
/// it opens, the body that may hold a call object, and where it ends. A block whose body is
/// not a call, or beyond [`MAX_CALLS`], stays in the text.
fn calls_in_blocks<'t>(
    text: &'t str,
    next_block: impl Fn(usize) -> Option<(usize, &'t str, usize)>,
) -> Option<(Vec<RawCall>, String)> {
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut cursor = 0;
    while let Some((open, body, next)) = next_block(cursor) {
        rest.push_str(&text[cursor..open]);
        match call_object(body) {
            Some(call) if calls.len() < MAX_CALLS => calls.push(call),
            _ => rest.push_str(&text[open..next]),
        }
        cursor = next;
    }
    rest.push_str(&text[cursor..]);
    (!calls.is_empty()).then(|| (calls, rest.trim().to_string()))
}

/// The calls found in `content` and the content left once they are removed (trimmed).
pub(crate) fn parse(content: &str) -> (Vec<RawCall>, String) {
    let mut scan_end = content.len().min(MAX_SCANNED_BYTES);
    while !content.is_char_boundary(scan_end) {
        scan_end -= 1;
    }
    let text = &content[..scan_end];

    // 1. `<tool_call>` blocks.
    if text.contains("<tool_call>") {
        let found = calls_in_blocks(text, |cursor| {
            let open = cursor + text[cursor..].find("<tool_call>")?;
            let body_start = open + "<tool_call>".len();
            let (body, next) = match text[body_start..].find("</tool_call>") {
                Some(end) => (
                    &text[body_start..body_start + end],
                    body_start + end + "</tool_call>".len(),
                ),
                None => (&text[body_start..], text.len()),
            };
            Some((open, strip_fence(body), next))
        });
        if let Some(found) = found {
            return found;
        }
    }

    // 2. Fenced blocks.
    if text.contains("```") {
        let found = calls_in_blocks(text, |cursor| {
            let open = cursor + text[cursor..].find("```")?;
            let after = open + 3;
            let end = text[after..].find("```")?;
            let block = &text[after..after + end];
            // Drop an info string (`json`, `tool_call`…) on the opening line.
            let body = match block.find('\n') {
                Some(nl) if !block[..nl].trim_start().starts_with('{') => &block[nl + 1..],
                _ => block,
            };
            Some((open, body, after + end + 3))
        });
        if let Some(found) = found {
            return found;
        }
    }

    // 3. The whole content is one call object.
    if let Some(call) = call_object(text) {
        return (vec![call], String::new());
    }
    (Vec::new(), content.trim().to_string())
}

/// What marks text as a cell: a call of one of the bridge functions.
const BRIDGE_CALL: [&str; 3] = [
    "openclaw.tools.search(",
    "openclaw.tools.describe(",
    "openclaw.tools.call(",
];

fn calls_bridge(code: &str) -> bool {
    BRIDGE_CALL.iter().any(|call| code.contains(call))
}

/// A cell the model wrote as text instead of calling `tool_search_code`: the fenced blocks
/// (```` ```js ````, ```` ```javascript ````, ```` ```ts ```` or no language) that call
/// `openclaw.tools.search / describe / call(…)`, or that hold the control's arguments as JSON
/// (```` ```json ```` `{"code": "…"}` whose code calls one of them), joined in order; else the
/// lines from the first
/// line that calls one of them to the next blank line (a prose lead-in on that line dropped).
/// `None` when no code calls the bridge: prose, or code that only mentions it, is an answer.
pub(crate) fn code_in_text(content: &str) -> Option<String> {
    let mut scan_end = content.len().min(MAX_SCANNED_BYTES);
    while !content.is_char_boundary(scan_end) {
        scan_end -= 1;
    }
    let text = &content[..scan_end];
    if !calls_bridge(text) {
        return None;
    }
    // 1. Fenced blocks.
    let mut blocks = Vec::new();
    let mut outside = String::new();
    let mut cursor = 0;
    while let Some(start) = text[cursor..].find("```") {
        let after = cursor + start + 3;
        let Some(end) = text[after..].find("```") else {
            break;
        };
        outside.push_str(&text[cursor..cursor + start]);
        let block = &text[after..after + end];
        cursor = after + end + 3;
        let (info, body) = match block.find('\n') {
            Some(nl) => (block[..nl].trim(), &block[nl + 1..]),
            None => ("", block),
        };
        let code_language = matches!(
            info.to_ascii_lowercase().as_str(),
            "" | "js" | "javascript" | "ts" | "typescript" | "mjs"
        );
        if code_language && calls_bridge(body) {
            blocks.push(body.trim().to_string());
        } else if let Some(code) = code_arguments(info, body) {
            blocks.push(code);
        }
    }
    if !blocks.is_empty() {
        return Some(blocks.join("\n"));
    }
    // 2. Bare lines, outside every fence (code in another language's fence is not a cell).
    outside.push_str(&text[cursor..]);
    let lines: Vec<&str> = outside.lines().collect();
    let first = lines.iter().position(|line| calls_bridge(line))?;
    let mut body = Vec::new();
    for (i, line) in lines[first..].iter().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with("```") {
            break;
        }
        if i == 0 {
            body.push(code_start(line));
        } else {
            body.push(line);
        }
    }
    let body = body.join("\n").trim().to_string();
    (!body.is_empty()).then_some(body)
}

/// The code of a fenced block (info `json` or none) that is `tool_search_code`'s arguments
/// written out — one JSON object whose only key is a `code` string that calls the bridge.
fn code_arguments(info: &str, body: &str) -> Option<String> {
    if !matches!(info.to_ascii_lowercase().as_str(), "" | "json") {
        return None;
    }
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(body.trim()) else {
        return None;
    };
    let code = object.get("code")?.as_str()?;
    (object.len() == 1 && calls_bridge(code)).then(|| code.trim().to_string())
}

/// The line from where its code starts: a statement keyword, `await` or the bridge itself,
/// whichever comes first before the bridge call (`Let me search: await openclaw…` → `await
/// openclaw…`).
fn code_start(line: &str) -> &str {
    let Some(bridge) = line.find("openclaw.tools.") else {
        return line;
    };
    let head = &line[..bridge];
    let start = ["const ", "let ", "var ", "return ", "await "]
        .iter()
        .filter_map(|word| {
            head.match_indices(word)
                .map(|(i, _)| i)
                .find(|&i| i == 0 || !head.as_bytes()[i - 1].is_ascii_alphanumeric())
        })
        .min()
        .unwrap_or(bridge);
    &line[start..]
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
    fn code_written_as_text() {
        // A fence, as Qwen2.5-Coder wrote it after a recovered search.
        let text = "I'll look it up:\n```javascript\nawait openclaw.tools.search({query: \"release order\"})\n```\nThen I will call it.";
        assert_eq!(
            code_in_text(text).as_deref(),
            Some("await openclaw.tools.search({query: \"release order\"})")
        );
        // Bare lines after a lead-in, up to the blank line.
        let text = "Let me run: const hits = await openclaw.tools.search(\"x\");\nreturn hits;\n\nThat finds it.";
        assert_eq!(
            code_in_text(text).as_deref(),
            Some("const hits = await openclaw.tools.search(\"x\");\nreturn hits;")
        );
        // Two fences, both calling the bridge; a JSON fence between them is not code.
        let text = "```js\nconst t = await openclaw.tools.describe(\"a\")\n```\n```json\n{\"openclaw.tools.call(\": 1}\n```\n```\nreturn await openclaw.tools.call(\"a\", {})\n```";
        assert_eq!(
            code_in_text(text).as_deref(),
            Some(
                "const t = await openclaw.tools.describe(\"a\")\nreturn await openclaw.tools.call(\"a\", {})"
            )
        );
    }

    #[test]
    fn the_control_s_arguments_in_a_json_fence_are_its_cell() {
        // As Qwen2.5-Coder wrote it in a final answer, after a step named the call.
        let text = "You can use the `translate` tool:\n\n```json\n{\n  \"code\": \"return await openclaw.tools.call(\\\"plugin:translate:translate_text\\\", {text: \\\"good morning\\\", target_language: \\\"es\\\"});\"\n}\n```\n\nThis will return the translation.";
        assert_eq!(
            code_in_text(text).as_deref(),
            Some(
                "return await openclaw.tools.call(\"plugin:translate:translate_text\", {text: \"good morning\", target_language: \"es\"});"
            )
        );
        // Other keys, other code or another language: not the control's arguments.
        for text in [
            "```json\n{\"code\": \"return 1\"}\n```",
            "```json\n{\"code\": \"openclaw.tools.search('x')\", \"note\": 1}\n```",
            "```yaml\ncode: openclaw.tools.search('x')\n```",
        ] {
            assert_eq!(code_in_text(text), None, "{text}");
        }
    }

    #[test]
    fn text_that_does_not_call_the_bridge_is_not_code() {
        for text in [
            "The answer is 42.",
            "I used openclaw.tools to find it: the order RO-1 is released.",
            "```js\nconsole.log(1)\n```",
            "```python\nopenclaw.tools.search(\"x\")\n```",
        ] {
            assert_eq!(code_in_text(text), None, "{text}");
        }
    }

    #[test]
    fn non_json_arguments_are_kept_as_text() {
        let (calls, _) = parse("<tool_call>{\"name\":\"t\",\"arguments\":\"{oops\"}</tool_call>");
        assert_eq!(calls[0].arguments, Err("{oops".to_string()));
    }
}
