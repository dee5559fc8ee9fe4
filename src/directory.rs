//! The capability directory (SPEC) and the namespace index: bounded,
//! deterministic prompt text about what can be found on demand.
//!
//! Owns rendering only. Callers pass the rows (trusted catalog tools with the names the model
//! may call) — this module never sees untrusted names or descriptions, and never decides policy.
//!
//! - Directory: rows sorted by name, within [`directory_budget`] characters (18,000, or
//!   min(18,000, max(768, context_tokens / 10)) with a context budget). When space is short,
//!   descriptions shrink 180 → 64 → none before rows are dropped from the tail; the omitted
//!   count is stated. Same rows in any order → same bytes.
//! - Namespace index: "N tools across M namespaces", each namespace `source:owner` with its
//!   count, then representative trusted names in fair rounds across namespaces, within
//!   [`INDEX_BUDGET_BYTES`] (hard cap [`INDEX_HARD_CAP_BYTES`]), ending with "…and K more — use
//!   tool_search" when names were left out. Untrusted namespaces contribute only their server
//!   name and a count.

use std::collections::BTreeMap;

use crate::search::compact_text;

/// Directory size without a context budget, in characters.
pub const DIRECTORY_MAX_CHARS: usize = 18_000;
/// Smallest directory budget, in characters.
pub const DIRECTORY_MIN_CHARS: usize = 768;
/// Description lengths tried, longest first, before rows are dropped.
pub const DESCRIPTION_LEVELS: [Option<usize>; 3] = [Some(180), Some(64), None];
/// Namespace index budget in bytes.
pub const INDEX_BUDGET_BYTES: usize = 3_800;
/// Namespace index hard cap in bytes.
pub const INDEX_HARD_CAP_BYTES: usize = 4_096;
/// Bytes kept free for the "…and K more" tail.
const TAIL_RESERVE_BYTES: usize = 96;

/// The directory budget in characters for a context window of `context_tokens`.
pub fn directory_budget(context_tokens: Option<usize>) -> usize {
    match context_tokens {
        None => DIRECTORY_MAX_CHARS,
        Some(tokens) => DIRECTORY_MAX_CHARS.min(DIRECTORY_MIN_CHARS.max(tokens / 10)),
    }
}

/// One trusted catalog tool as the directory shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The name the model may call it by.
    pub name: String,
    /// Its (trusted) description.
    pub description: String,
}

/// A rendered directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directory {
    /// The prompt section.
    pub text: String,
    /// Rows shown.
    pub shown: usize,
    /// Rows left out for space (still searchable and callable).
    pub omitted: usize,
    /// The description length used: 180, 64, or `None` for names only.
    pub description_chars: Option<usize>,
}

const DIRECTORY_HEADER: &str = "## Tool directory\nThese trusted tools can be called on demand by name, even though their schemas are not listed here. Use tool_search to find tools (including ones from MCP servers and apps, which are not listed), tool_describe for a schema, or call a listed name directly.\n";

fn row_text(row: &Row, level: Option<usize>) -> String {
    match level {
        Some(chars) => {
            let description = compact_text(&row.description, chars);
            if description.is_empty() {
                format!("- {}\n", row.name)
            } else {
                format!("- {}: {}\n", row.name, description)
            }
        }
        None => format!("- {}\n", row.name),
    }
}

fn omitted_line(omitted: usize) -> String {
    format!("…{omitted} more tools are not listed for space; find them with tool_search.\n")
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Renders the directory of `rows` within `budget` characters.
pub fn render(mut rows: Vec<Row>, budget: usize) -> Directory {
    rows.sort_by(|a, b| a.name.cmp(&b.name).then(a.description.cmp(&b.description)));
    rows.dedup();
    let header = chars(DIRECTORY_HEADER);
    for level in DESCRIPTION_LEVELS {
        let lines: Vec<String> = rows.iter().map(|r| row_text(r, level)).collect();
        let total: usize = header + lines.iter().map(|l| chars(l)).sum::<usize>();
        if total <= budget {
            return Directory {
                text: format!("{DIRECTORY_HEADER}{}", lines.concat()),
                shown: rows.len(),
                omitted: 0,
                description_chars: level,
            };
        }
    }
    // Names only and still too long: keep a prefix of the rows and state the rest.
    let lines: Vec<String> = rows.iter().map(|r| row_text(r, None)).collect();
    let mut used = header;
    let mut shown = 0;
    for line in &lines {
        let omitted = rows.len() - shown - 1;
        let tail = if omitted > 0 {
            chars(&omitted_line(omitted))
        } else {
            0
        };
        if used + chars(line) + tail > budget {
            break;
        }
        used += chars(line);
        shown += 1;
    }
    let omitted = rows.len() - shown;
    let mut text = String::with_capacity(budget * 2);
    text.push_str(DIRECTORY_HEADER);
    for line in &lines[..shown] {
        text.push_str(line);
    }
    if omitted > 0 {
        text.push_str(&omitted_line(omitted));
    }
    // A budget smaller than the header: say only how to search.
    if chars(&text) > budget {
        text = compact_text(&text, budget);
    }
    Directory {
        text,
        shown,
        omitted,
        description_chars: None,
    }
}

/// One namespace of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// `source:owner`.
    pub name: String,
    /// Allowed tools in it.
    pub count: usize,
    /// Representative tool names (trusted namespaces only; empty for untrusted ones).
    pub names: Vec<String>,
}

/// Renders the namespace index within [`INDEX_BUDGET_BYTES`].
pub fn render_namespaces(namespaces: Vec<Namespace>) -> String {
    let mut merged: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for namespace in namespaces {
        let entry = merged.entry(namespace.name).or_default();
        entry.0 += namespace.count;
        entry.1.extend(namespace.names);
    }
    for (_, names) in merged.values_mut() {
        names.sort();
        names.dedup();
    }
    let total: usize = merged.values().map(|(count, _)| count).sum();
    if total == 0 {
        return "No additional tools are available on demand; the tools already listed are all there is.\n".to_string();
    }
    let budget = INDEX_BUDGET_BYTES - TAIL_RESERVE_BYTES;
    let mut text = format!(
        "{total} tools are available on demand across {} authorized namespaces. Search before reporting that a capability is unavailable; hits carry compact signatures, and tool_describe gives full schemas.\nNamespaces:\n",
        merged.len()
    );
    let mut listed = 0;
    for (name, (count, _)) in &merged {
        let line = format!("- {name} ({count})\n");
        if text.len() + line.len() > budget / 2 {
            text.push_str("- additional authorized namespaces exist; use tool_search\n");
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    let _ = listed;
    text.push_str("Representative tools (fair rounds across namespaces):");
    let mut named = 0;
    let mut round = 0;
    let mut first = true;
    'rounds: loop {
        let mut any = false;
        for (_, names) in merged.values() {
            let Some(name) = names.get(round) else {
                continue;
            };
            any = true;
            let piece = if first {
                format!(" {name}")
            } else {
                format!(", {name}")
            };
            if text.len() + piece.len() > budget {
                break 'rounds;
            }
            text.push_str(&piece);
            first = false;
            named += 1;
        }
        if !any {
            break;
        }
        round += 1;
    }
    text.push('\n');
    let more = total.saturating_sub(named);
    if more > 0 {
        text.push_str(&format!(
            "…and {more} more — use tool_search(query=\"<service or action>\")\n"
        ));
    }
    if text.len() > INDEX_HARD_CAP_BYTES {
        // Unreachable with the reserve above; never exceed the hard cap regardless.
        let mut cut = INDEX_HARD_CAP_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}
