//! The fixed texts the model sees: control-tool descriptions and schemas, and the short
//! system-prompt notes per mode. Written for models: the workflow, English queries, the
//! `{id, args}` wrapper, batch queries, exact names and `select:`, the partial-result note, and
//! that hidden names are not callable in tools mode.
//! Nothing here depends on the run (no ids, no user text), so prompts stay cache-stable.

use serde_json::{Value, json};

use crate::config::SearchLimits;

pub(crate) fn tool_search_description() -> &'static str {
    "Search the tool catalog for tools that can do something. Query with a few English words naming the capability (\"create calendar event\", \"convert currency\"), not the user's whole message; translate non-English requests first. Returns compact hits: id, name, description and a TypeScript-style `input` signature (\"unknown\" when you must tool_describe first), then a line saying how many tools matched and whether all are shown (\"8 of 37 matching tools shown\": refine the query or raise limit to see more). A tool's exact name finds it first; \"select:name_a,name_b\" returns exactly those tools, in order. To look for several capabilities at once, send {\"queries\": [{\"query\": \"...\"}, {\"query\": \"...\"}]} (up to 16) instead of {\"query\": \"...\"}. Then run a hit with tool_call {\"id\": <hit id>, \"args\": {...}}."
}

pub(crate) fn tool_search_parameters(limits: SearchLimits) -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "A few English words naming the capability to find, a tool's name, or \"select:name_a,name_b\" for exactly those tools."},
            "limit": {"type": "integer", "minimum": 1, "maximum": limits.max_limit(), "description": format!("How many hits (default {}).", limits.default_limit())},
            "queries": {
                "type": "array",
                "maxItems": 16,
                "description": "Several searches in one request, answered in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": limits.max_limit()}
                    },
                    "required": ["query"],
                    "additionalProperties": false
                }
            }
        },
        "additionalProperties": false
    })
}

pub(crate) fn tool_describe_description() -> &'static str {
    "Get the exact input schema of one tool found by tool_search (and its output schema when it is a trusted tool that declares one). Pass the hit's id. Use it when a hit's input signature is \"unknown\", ends in \"...\", or a call failed on its arguments."
}

pub(crate) fn tool_describe_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The tool id from tool_search."}},
        "required": ["id"],
        "additionalProperties": false
    })
}

pub(crate) fn tool_call_description() -> &'static str {
    "Call a catalog tool: {\"id\": \"<id from tool_search>\", \"args\": {<arguments matching its input schema>}}. Returns {\"tool\": {...}, \"result\": {...}}; JSON results are in result.details. Errors say what to fix. Catalog tools that are not declared to you can only be run through tool_call: never call their names directly."
}

pub(crate) fn tool_call_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The tool id from tool_search."},
            "args": {"type": "object", "description": "The tool's arguments."}
        },
        "required": ["id", "args"],
        "additionalProperties": false
    })
}

pub(crate) fn tool_search_code_description(timeout_ms: u128) -> String {
    format!(
        "Run a short JavaScript body (it is the body of an async function: use await, and return the value you want back) against the tool catalog:\n- await openclaw.tools.search(query, {{limit}}) → [{{id, name, description, input, output?}}] (query: a few English words, a tool's name, or \"select:name_a,name_b\" for exactly those tools); the array's .matched is a number (how many tools matched) and .truncated is true when not all are shown (a note in the logs says so too)\n- await openclaw.tools.describe(id) → the hit plus input_schema and output_schema\n- await openclaw.tools.call(id, args) → {{tool, result}}; JSON results are in result.details; each search hit also has hit.call(args) and hit.describe()\nExample (one cell, search then call): const [t] = await openclaw.tools.search(\"convert units\"); return await t.call({{value: 10, from_unit: \"km\", to_unit: \"mi\"}});\nconsole.log/warn/error output comes back with the result. Nothing else exists: no require/import, fetch, timers, files, network or environment. Calls that are not awaited never run. Time limit {} s.",
        timeout_ms / 1000
    )
}

pub(crate) fn tool_search_code_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "The JavaScript function body."}
        },
        "required": ["code"],
        "additionalProperties": false
    })
}

pub(crate) const TOOLS_NOTE: &str = "## Tools on demand\nMore tools exist than the ones declared to you. Find them with tool_search (a few English words; batch several searches with \"queries\"), check a schema with tool_describe when the hit's input signature is not enough, and run them with tool_call {\"id\", \"args\"}. Their names are not callable directly. Search before saying a capability is unavailable.\n";

pub(crate) const DIRECTORY_NOTE: &str = "## Tools on demand\nMore tools exist than the ones declared to you. Find them with tool_search, check a schema with tool_describe, and run them with tool_call {\"id\", \"args\"} — or call a name listed in the directory below directly with its arguments. Search before saying a capability is unavailable.\n";

pub(crate) const CODE_NOTE: &str = "## Tools on demand\nMore tools exist than the ones declared to you. Use tool_search_code to find, inspect and call them from a short JavaScript body (openclaw.tools.search / describe / call), chaining several calls in one cell when that saves round trips. Search before saying a capability is unavailable.\n";
