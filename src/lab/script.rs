//! The scripted model behind the mock provider: a pure function from one chat-completions
//! request to the next move of the scenario (SPEC R-12.1).
//!
//! It reads only what a real model reads — the declared tools, the system text and the
//! messages — infers the mode from the declared tools (`tool_search_code` → code; the
//! structured controls → tools, or directory when the system text carries a directory; else
//! direct) and plays, from the results already in the conversation:
//! - direct: call the target by its declared name;
//! - tools: one batched `tool_search` with the scenario's queries, `tool_describe` of the hit,
//!   `tool_call`;
//! - directory: call the hidden target name directly (hydration) when the directory lists it,
//!   else search as in tools mode;
//! - code: one `tool_search_code` cell doing search → describe → call;
//!
//! then a final answer quoting the tool result. A step counts as done only when its result is
//! not an error, so error results sent by the agent (an unknown tool, non-JSON arguments) are
//! simply retried past.
//!
//! A scenario may also play a small model that gets the controls' shape wrong
//! ([`SmallModel`]): bridge functions, bare `search` / `describe` / `call` or the structured
//! controls called as tools whatever the mode declares, a cell body in a Markdown fence, or
//! cells without `return`. Those moves deliberately call undeclared names.
//!
//! Never does: call a tool the request did not declare (in directory mode: declared or listed
//! in the system text) outside a small-model behaviour — it answers with a refusal instead; keep state between requests (the
//! conversation is the state); quote more than [`MAX_QUOTE_CHARS`] of a result.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::config::Mode;

use super::mock::{MockScenario, SmallModel};

/// Longest tool result quoted in the final answer, in characters.
pub const MAX_QUOTE_CHARS: usize = 4000;

/// The scripted model's next move.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Call one tool.
    Call {
        /// The provider tool name.
        name: String,
        /// The arguments.
        arguments: Value,
    },
    /// Answer with text.
    Answer(String),
    /// The scenario needs a tool the request did not declare.
    Refuse {
        /// The name it would have called.
        name: String,
    },
}

/// What the scripted model saw in one request.
#[derive(Debug, Clone)]
pub(crate) struct Seen<'a> {
    pub declared: Vec<&'a str>,
    pub system: String,
    pub messages: &'a [Value],
}

impl<'a> Seen<'a> {
    pub fn of(request: &'a Value) -> Seen<'a> {
        static EMPTY: Vec<Value> = Vec::new();
        let declared = request
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(EMPTY.as_slice());
        let system = messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        Seen {
            declared,
            system,
            messages,
        }
    }

    /// The mode the declared tools and system text imply.
    pub fn mode(&self) -> Mode {
        if self.declared.contains(&"tool_search_code") {
            Mode::Code
        } else if self.declared.contains(&"tool_search") {
            if self.system.contains("directory") {
                Mode::Directory
            } else {
                Mode::Tools
            }
        } else {
            Mode::Direct
        }
    }

    fn declares(&self, name: &str) -> bool {
        self.declared.contains(&name)
    }
}

/// One earlier call and its result, from the conversation.
#[derive(Debug, Clone)]
struct Past {
    name: String,
    result: Option<String>,
}

impl Past {
    /// The result as JSON, when it is a success (the first JSON value of the text: a recovered
    /// call's result carries a hint line after it).
    fn success(&self) -> Option<Value> {
        let value: Value = serde_json::Deserializer::from_str(self.result.as_deref()?)
            .into_iter::<Value>()
            .next()?
            .ok()?;
        if value.get("error").is_some_and(|e| !e.is_null())
            || value.get("ok") == Some(&Value::Bool(false))
        {
            return None;
        }
        Some(value)
    }

    /// The message of the answer to an identical repeat (`repeated_call`), if this is one.
    fn repeated(&self) -> Option<String> {
        let value: Value = serde_json::from_str(self.result.as_deref()?).ok()?;
        let error = value.get("error")?;
        (error.get("kind")? == "repeated_call")
            .then(|| error.get("message")?.as_str().map(str::to_string))?
    }
}

fn history(messages: &[Value]) -> Vec<Past> {
    let mut results: HashMap<&str, &str> = HashMap::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) == Some("tool")
            && let (Some(id), Some(content)) = (
                message.get("tool_call_id").and_then(Value::as_str),
                message.get("content").and_then(Value::as_str),
            )
        {
            results.insert(id, content);
        }
    }
    let mut past = Vec::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = call.pointer("/function/name").and_then(Value::as_str) else {
                continue;
            };
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            past.push(Past {
                name: name.to_string(),
                result: results.get(id).map(|r| r.to_string()),
            });
        }
    }
    past
}

/// The successful results of the code cells so far, in order.
fn successful_cells(past: &[Past]) -> Vec<Value> {
    past.iter()
        .filter(|p| p.name == "tool_search_code")
        .filter_map(Past::success)
        .collect()
}

/// The first successful result of a call of `name`.
fn done(past: &[Past], name: &str) -> Option<Value> {
    past.iter()
        .filter(|p| p.name == name)
        .find_map(Past::success)
}

/// The target's bare name (the last segment of an id).
pub(crate) fn target_name(target: &str) -> &str {
    target.rsplit(':').next().unwrap_or(target)
}

fn hit_matches(hit: &Value, target: &str) -> bool {
    hit.get("id").and_then(Value::as_str) == Some(target)
        || hit.get("name").and_then(Value::as_str) == Some(target_name(target))
}

/// The id of the target among search hits: one query's hits, a batch's groups, or either as a
/// code cell's `value`.
fn find_hit<'a>(found: &'a Value, target: &str) -> Option<&'a str> {
    let found = match found.get("ok") {
        Some(_) => found.get("value")?,
        None => found,
    };
    found
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|g| {
            g.get("candidates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .chain(found.as_array().into_iter().flatten())
        .find(|hit| hit_matches(hit, target))
        .and_then(|h| h.get("id"))
        .and_then(Value::as_str)
}

/// The declared name of the target in direct mode: its own name, or a sanitized
/// `owner__name`.
fn declared_target<'a>(seen: &Seen<'a>, target: &str) -> Option<&'a str> {
    let name = target_name(target);
    let suffix = format!("__{name}");
    seen.declared
        .iter()
        .find(|d| **d == name)
        .or_else(|| seen.declared.iter().find(|d| d.ends_with(&suffix)))
        .copied()
}

fn answer(name: &str, result: &Value) -> Action {
    let text = result.to_string();
    let quoted: String = text.chars().take(MAX_QUOTE_CHARS).collect();
    Action::Answer(format!("Done. {name} returned: {quoted}"))
}

/// The code cell of the code-mode scenario: search (each query until the target is found) →
/// describe → call.
pub(crate) fn scenario_cell(scenario: &MockScenario) -> String {
    let target = json!(scenario.target);
    let name = json!(target_name(&scenario.target));
    let queries = json!(scenario.queries);
    let arguments = &scenario.arguments;
    format!(
        "const queries = {queries};\n\
         let hit = null;\n\
         for (const q of queries) {{\n\
         \x20 const hits = await openclaw.tools.search(q);\n\
         \x20 hit = hits.find(h => h.id === {target} || h.name === {name});\n\
         \x20 if (hit) break;\n\
         }}\n\
         if (!hit) throw new Error(\"no tool named \" + {name} + \" was found\");\n\
         await openclaw.tools.describe(hit.id);\n\
         return await openclaw.tools.call(hit.id, {arguments});"
    )
}

/// The first move of the scenario in `mode` (what `repeat_forever` plays every time).
fn first_move(scenario: &MockScenario, seen: &Seen, mode: Mode) -> Action {
    play_from(scenario, seen, mode, &[])
}

/// The scripted model's next move for `request`, and the mode it inferred.
pub(crate) fn next(scenario: &MockScenario, seen: &Seen) -> (Mode, Action) {
    let mode = seen.mode();
    if scenario.repeat_forever {
        return (mode, first_move(scenario, seen, mode));
    }
    let past = history(seen.messages);
    if !scenario.steps.is_empty() {
        return (mode, play_steps(scenario, seen, mode, &past));
    }
    if let Some(model) = scenario.small_model
        && let Some(action) = small_model_move(model, scenario, seen, mode, &past)
    {
        return (mode, action);
    }
    (mode, play_from(scenario, seen, mode, &past))
}

/// A task of several steps: the first step not yet confirmed plays on the history since the
/// previous one was; once every step is, the answer quotes the last confirmation.
fn play_steps(scenario: &MockScenario, seen: &Seen, mode: Mode, past: &[Past]) -> Action {
    let mut start = 0;
    let mut previous: Option<Value> = None;
    for step in &scenario.steps {
        let done = past[start..]
            .iter()
            .position(|p| p.success().is_some_and(|v| confirmed(&v)));
        if let Some(offset) = done {
            previous = past[start + offset].success();
            start += offset + 1;
            continue;
        }
        let arguments = match &previous {
            Some(result) => fill(&step.arguments, result),
            None => step.arguments.clone(),
        };
        let single = MockScenario {
            target: step.target.clone(),
            arguments,
            queries: step.queries.clone(),
            steps: Vec::new(),
            ..scenario.clone()
        };
        let rest = &past[start..];
        if let Some(model) = single.small_model
            && let Some(action) = small_model_move(model, &single, seen, mode, rest)
        {
            return action;
        }
        return play_from(&single, seen, mode, rest);
    }
    match (past.get(start.wrapping_sub(1)), previous) {
        (Some(last), Some(result)) => answer(&last.name, &result),
        _ => Action::Answer("Done.".into()),
    }
}

/// Whether a result carries a task step's confirmation.
fn confirmed(result: &Value) -> bool {
    match result {
        Value::String(text) => text.starts_with("CONF-"),
        Value::Array(items) => items.iter().any(confirmed),
        Value::Object(fields) => fields.values().any(confirmed),
        _ => false,
    }
}

/// `arguments` with each `{{key}}` string replaced by the first value of `key` found in
/// `result` (depth-first), or left as it is.
fn fill(arguments: &Value, result: &Value) -> Value {
    match arguments {
        Value::String(text) => text
            .strip_prefix("{{")
            .and_then(|t| t.strip_suffix("}}"))
            .and_then(|key| find_key(result, key))
            .cloned()
            .unwrap_or_else(|| arguments.clone()),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, result)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, result)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(fields) => fields
            .get(key)
            .or_else(|| fields.values().find_map(|v| find_key(v, key))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, key)),
        _ => None,
    }
}

/// The move of a small model that gets the controls' shape wrong, or `None` where
/// the behaviour does not apply (direct mode; the code behaviours without `tool_search_code`):
/// the scenario then plays as usual. These moves call names the request may not declare — on
/// purpose: the session is expected to understand them.
fn small_model_move(
    model: SmallModel,
    scenario: &MockScenario,
    seen: &Seen,
    mode: Mode,
    past: &[Past],
) -> Option<Action> {
    let target = scenario.target.as_str();
    let code = seen.declares("tool_search_code");
    let query = scenario
        .queries
        .first()
        .cloned()
        .unwrap_or_else(|| target_name(target).to_string());
    let call = |name: &str, arguments: Value| Action::Call {
        name: name.to_string(),
        arguments,
    };
    let not_found = || {
        Action::Answer(format!(
            "I could not find a tool named {} in the search results.",
            target_name(target)
        ))
    };
    match model {
        SmallModel::BridgeNames | SmallModel::BareNames | SmallModel::StructuredControls => {
            if matches!(mode, Mode::Direct | Mode::Auto) {
                return None;
            }
            let (search, describe, run) = match model {
                SmallModel::BridgeNames => (
                    "openclaw.tools.search",
                    "openclaw_tools_describe",
                    "openclaw-tools-call",
                ),
                SmallModel::BareNames => ("search", "describe", "call"),
                _ if code => ("tool_search_code", "tool_describe", "tool_call"),
                _ => ("tool_search", "tool_describe", "tool_call"),
            };
            let bare = model == SmallModel::BareNames;
            let Some(found) = done(past, search) else {
                let arguments = if bare {
                    json!([query, {"limit": 5}])
                } else {
                    json!({"query": query, "limit": 5})
                };
                return Some(call(search, arguments));
            };
            let Some(id) = find_hit(&found, target) else {
                return Some(not_found());
            };
            if done(past, describe).is_none() {
                return Some(call(describe, json!({"id": id})));
            }
            Some(match done(past, run) {
                Some(result) => answer(run, &result),
                None if bare => call(run, json!([id, scenario.arguments])),
                None => call(run, json!({"id": id, "args": scenario.arguments})),
            })
        }
        SmallModel::FencedCode => {
            if !code {
                return None;
            }
            Some(match done(past, "tool_search_code") {
                Some(result) => answer("tool_search_code", &result),
                None => call(
                    "tool_search_code",
                    json!({"code": format!("```js\n{}\n```", scenario_cell(scenario))}),
                ),
            })
        }
        SmallModel::NoReturn => {
            if !code {
                return None;
            }
            let cells = successful_cells(past);
            Some(match cells.as_slice() {
                // A bare expression, awaited.
                [] => call(
                    "tool_search_code",
                    json!({"code": format!("await openclaw.tools.search({})", json!(query))}),
                ),
                // Statements, then a top-level expression that is neither awaited nor returned.
                [found] => {
                    let Some(id) = find_hit(found, target) else {
                        return Some(not_found());
                    };
                    let id = json!(id);
                    call(
                        "tool_search_code",
                        json!({"code": format!(
                            "const schema = await openclaw.tools.describe({id});\nopenclaw.tools.call({id}, {})",
                            scenario.arguments
                        )}),
                    )
                }
                [.., result] => answer("tool_search_code", result),
            })
        }
        SmallModel::CodeAsText => {
            if !code {
                return None;
            }
            let cells = successful_cells(past);
            let fenced = |body: String| {
                Action::Answer(format!("I will run this:\n```javascript\n{body}\n```"))
            };
            Some(match cells.as_slice() {
                [] => fenced(format!("await openclaw.tools.search({})", json!(query))),
                [found] => {
                    // The next step says which tool to call, and how; when it names another
                    // hit than the one wanted, the model picks the wanted one from the hits.
                    let id = match next_step_id(found) {
                        Some(id) if id == target || target_name(&id) == target_name(target) => id,
                        Some(_) => match find_hit(found, target) {
                            Some(id) => id.to_string(),
                            None => return Some(not_found()),
                        },
                        None => return Some(not_found()),
                    };
                    fenced(format!(
                        "return await openclaw.tools.call({}, {});",
                        json!(id),
                        scenario.arguments
                    ))
                }
                [.., result] => answer("tool_search_code", result),
            })
        }
        SmallModel::RepeatsSearch => {
            if !code {
                return None;
            }
            let search = json!({"code": format!(
                "return await openclaw.tools.search({});",
                json!(query)
            )});
            let cells = successful_cells(past);
            let repeated = past.iter().rev().find_map(Past::repeated);
            Some(match (cells.as_slice(), repeated) {
                ([] | [_], None) => call("tool_search_code", search),
                ([] | [_], Some(message)) => {
                    // Only the step in the answer to the repeat says what to call.
                    let step = json!({ "next": message });
                    let id = match next_step_id(&step) {
                        Some(id) if id == target || target_name(&id) == target_name(target) => id,
                        Some(_) => match cells.first().and_then(|found| find_hit(found, target)) {
                            Some(id) => id.to_string(),
                            None => return Some(not_found()),
                        },
                        None => return Some(not_found()),
                    };
                    call(
                        "tool_search_code",
                        json!({"code": format!(
                            "return await openclaw.tools.call({}, {});",
                            json!(id),
                            scenario.arguments
                        )}),
                    )
                }
                ([.., result], _) => answer("tool_search_code", result),
            })
        }
    }
}

/// The tool id in a cell answer's next step (`next`: "… {\"code\": \"return await
/// openclaw.tools.call(\"ID\", …)\"} …").
fn next_step_id(found: &Value) -> Option<String> {
    let next = found.get("next")?.as_str()?;
    let start = next.find('{')?;
    let request: Value = serde_json::Deserializer::from_str(&next[start..])
        .into_iter::<Value>()
        .next()?
        .ok()?;
    let code = request.get("code")?.as_str()?;
    let after = &code[code.find("openclaw.tools.call(")? + "openclaw.tools.call(".len()..];
    let id: Value = serde_json::Deserializer::from_str(after)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    id.as_str().map(str::to_string)
}

fn call(seen: &Seen, name: &str, arguments: Value, hidden_ok: bool) -> Action {
    let listed = hidden_ok && seen.system.contains(name);
    if seen.declares(name) || listed {
        Action::Call {
            name: name.to_string(),
            arguments,
        }
    } else {
        Action::Refuse {
            name: name.to_string(),
        }
    }
}

fn play_from(scenario: &MockScenario, seen: &Seen, mode: Mode, past: &[Past]) -> Action {
    let target = scenario.target.as_str();
    match mode {
        Mode::Direct | Mode::Auto => {
            let Some(name) = declared_target(seen, target) else {
                return Action::Refuse {
                    name: target_name(target).to_string(),
                };
            };
            match done(past, name) {
                Some(result) => answer(name, &result),
                None => call(seen, name, scenario.arguments.clone(), false),
            }
        }
        Mode::Tools => {
            let Some(found) = done(past, "tool_search") else {
                let queries: Vec<Value> = scenario
                    .queries
                    .iter()
                    .map(|q| json!({"query": q}))
                    .collect();
                return call(seen, "tool_search", json!({"queries": queries}), false);
            };
            let Some(id) = find_hit(&found, target) else {
                return Action::Answer(format!(
                    "I could not find a tool named {} in the search results.",
                    target_name(target)
                ));
            };
            if done(past, "tool_describe").is_none() {
                return call(seen, "tool_describe", json!({"id": id}), false);
            }
            match done(past, "tool_call") {
                Some(result) => answer("tool_call", &result),
                None => call(
                    seen,
                    "tool_call",
                    json!({"id": id, "args": scenario.arguments}),
                    false,
                ),
            }
        }
        Mode::Directory => {
            let name = target_name(target);
            if !seen.declares(name) && !seen.system.contains(name) {
                // Not in the directory (it was cut to its budget): search, as the note says.
                return play_from(scenario, seen, Mode::Tools, past);
            }
            match done(past, name) {
                Some(result) => answer(name, &result),
                None => call(seen, name, scenario.arguments.clone(), true),
            }
        }
        Mode::Code => match done(past, "tool_search_code") {
            Some(result) => answer("tool_search_code", &result),
            None => call(
                seen,
                "tool_search_code",
                json!({"code": scenario_cell(scenario)}),
                false,
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn request(tools: &[&str], system: &str, extra: Vec<Value>) -> Value {
        let mut messages = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": "go"}),
        ];
        messages.extend(extra);
        json!({
            "tools": tools.iter().map(|n| json!({"type": "function", "function": {"name": n}})).collect::<Vec<_>>(),
            "messages": messages,
        })
    }

    fn turn(name: &str, id: &str, result: Value) -> Vec<Value> {
        vec![
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": id, "content": result.to_string()}),
        ]
    }

    #[test]
    fn infers_the_mode() {
        let mode = |tools: &[&str], system: &str| {
            let r = request(tools, system, vec![]);
            Seen::of(&r).mode()
        };
        assert_eq!(mode(&["a", "b"], ""), Mode::Direct);
        assert_eq!(mode(&["tool_search_code"], ""), Mode::Code);
        assert_eq!(
            mode(&["tool_search", "tool_describe", "tool_call"], "note"),
            Mode::Tools
        );
        assert_eq!(
            mode(
                &["tool_search", "tool_describe", "tool_call"],
                "listed in the directory below"
            ),
            Mode::Directory
        );
    }

    #[test]
    fn tools_mode_plays_search_describe_call_answer() {
        let scenario = MockScenario::default();
        let controls = ["tool_search", "tool_describe", "tool_call"];
        let r = request(&controls, "", vec![]);
        let (_, first) = next(&scenario, &Seen::of(&r));
        let Action::Call { name, arguments } = first else {
            panic!("{first:?}")
        };
        assert_eq!(name, "tool_search");
        assert_eq!(arguments["queries"].as_array().unwrap().len(), 2);

        let hits = json!({"results": [{"query": "q", "candidates": [{"id": "plugin:units:convert_units", "name": "convert_units"}]}]});
        let mut history = turn("tool_search", "1", hits);
        let r = request(&controls, "", history.clone());
        let (_, second) = next(&scenario, &Seen::of(&r));
        assert_eq!(
            second,
            Action::Call {
                name: "tool_describe".into(),
                arguments: json!({"id": "plugin:units:convert_units"})
            }
        );
        history.extend(turn("tool_describe", "2", json!({"id": "x"})));
        // An error result does not count as done: the step is retried.
        history.extend(turn("tool_call", "3", json!({"error": {"message": "bad"}})));
        let r = request(&controls, "", history.clone());
        let (_, third) = next(&scenario, &Seen::of(&r));
        assert!(
            matches!(&third, Action::Call { name, .. } if name == "tool_call"),
            "{third:?}"
        );
        history.extend(turn("tool_call", "4", json!({"result": {"nonce": "N-1"}})));
        let r = request(&controls, "", history);
        let (_, last) = next(&scenario, &Seen::of(&r));
        let Action::Answer(text) = last else {
            panic!("{last:?}")
        };
        assert!(text.contains("N-1"), "{text}");
    }

    #[test]
    fn refuses_undeclared_tools() {
        let scenario = MockScenario::default();
        // Direct mode without the target declared.
        let r = request(&["something_else"], "", vec![]);
        let (_, action) = next(&scenario, &Seen::of(&r));
        assert_eq!(
            action,
            Action::Refuse {
                name: "convert_units".into()
            }
        );
        // Directory mode: a listed name is called directly; an unlisted one is searched for.
        let controls = ["tool_search", "tool_describe", "tool_call"];
        let r = request(&controls, "the directory: other_tool", vec![]);
        let (mode, action) = next(&scenario, &Seen::of(&r));
        assert_eq!(mode, Mode::Directory);
        assert!(
            matches!(&action, Action::Call { name, .. } if name == "tool_search"),
            "{action:?}"
        );
        let r = request(&controls, "the directory: convert_units", vec![]);
        let (_, action) = next(&scenario, &Seen::of(&r));
        assert!(
            matches!(&action, Action::Call { name, .. } if name == "convert_units"),
            "{action:?}"
        );
    }

    #[test]
    fn direct_mode_finds_sanitized_names() {
        let scenario = MockScenario::default();
        let r = request(&["a", "units__convert_units"], "", vec![]);
        let (_, action) = next(&scenario, &Seen::of(&r));
        assert!(
            matches!(&action, Action::Call { name, .. } if name == "units__convert_units"),
            "{action:?}"
        );
    }
}
