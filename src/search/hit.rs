//! Compact search hits: safe to put back into the prompt, small, and deterministic.

use serde::{Deserialize, Serialize};

use crate::catalog::{Descriptor, Source};
use crate::signature::{input_signature, output_signature};

/// Descriptions in single-query hits are compacted to at most this many characters.
pub const HIT_DESCRIPTION_CHARS: usize = 400;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hit {
    /// The id to describe or call.
    pub id: String,
    /// The tool's own name.
    pub name: String,
    /// core, plugin, mcp or client.
    pub source: Source,
    /// Plugin id, MCP server, core or client.
    pub owner: String,
    /// Whitespace-collapsed description, cut at `HIT_DESCRIPTION_CHARS` (400).
    pub description: String,
    /// The input signature, `"unknown"` for untrusted tools.
    pub input: String,
    /// The output signature, only for trusted tools with a complete closed output schema.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output: Option<String>,
}

/// Signatures rendered once per tool and index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hints {
    pub(crate) input: String,
    pub(crate) output: Option<String>,
}

impl Hints {
    pub(crate) fn for_tool(tool: &Descriptor) -> Hints {
        if !tool.is_trusted() {
            // untrusted schemas are not rendered.
            return Hints {
                input: "unknown".to_string(),
                output: None,
            };
        }
        Hints {
            input: input_signature(&tool.input_schema).text,
            output: tool
                .output_schema
                .as_ref()
                .and_then(output_signature)
                .map(|s| s.text),
        }
    }
}

impl Hit {
    pub(crate) fn new(tool: &Descriptor, hints: &Hints) -> Hit {
        Hit {
            id: tool.id.clone(),
            name: tool.name.clone(),
            source: tool.source,
            owner: tool.owner.clone(),
            description: compact_text(&tool.description, HIT_DESCRIPTION_CHARS),
            input: hints.input.clone(),
            output: hints.output.clone(),
        }
    }
}

/// Collapses whitespace runs to one space, trims, and cuts to at most `max_chars` Unicode scalar
/// values, ending a cut text with `…`.
pub fn compact_text(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        out.push_str(word);
        count += word.chars().count();
        if count > max_chars {
            break;
        }
    }
    if count <= max_chars {
        return out;
    }
    if max_chars == 0 {
        return String::new();
    }
    let cut: String = out.chars().take(max_chars - 1).collect();
    let mut cut = cut.trim_end().to_string();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::compact_text;

    #[test]
    fn compacts_whitespace_and_cuts_on_characters() {
        assert_eq!(compact_text("  a \n\t b  ", 10), "a b");
        assert_eq!(compact_text("abcdef", 4), "abc…");
        assert_eq!(compact_text("ab cdef", 4), "ab…");
        assert_eq!(compact_text("日本語のテキスト", 3), "日本…");
        assert!(compact_text(&"x".repeat(1000), 180).chars().count() <= 180);
        assert_eq!(compact_text("", 5), "");
    }
}
