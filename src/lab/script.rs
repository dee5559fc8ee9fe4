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
//! Owns: the scenario it plays ([`MockScenario`], [`MockStep`]), the small-model behaviours
//! ([`SmallModel`]) and the faults the mock injects before it ([`Fault`]).
//!
//! Never does: call a tool the request did not declare (in directory mode: declared or listed
//! in the system text) outside a small-model behaviour — it answers with a refusal instead; keep state between requests (the
//! conversation is the state); quote more than [`MAX_QUOTE_CHARS`] of a result.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::config::Mode;

use serde::Serialize;

/// What the scripted model does: which tool it is after, with what, and how it misbehaves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MockScenario {
    /// The target tool: a name (`convert_units`) or an id (`plugin:units:convert_units`).
    pub target: String,
    /// The arguments it calls the target with.
    pub arguments: Value,
    /// The queries of the batched `tool_search` (and, in order, of the code cell's searches).
    pub queries: Vec<String>,
    /// Faults for the first requests, one per request in order; then the scenario plays.
    pub faults: Vec<Fault>,
    /// Play the scenario's first move on every request (a model stuck repeating a call).
    pub repeat_forever: bool,
    /// Write calls as text in `content` (alternately a `<tool_call>` block and a fenced JSON
    /// object) instead of `tool_calls`, as small local models do.
    pub text_calls: bool,
    /// Get the controls' shape wrong as a small local model does; combines with
    /// `text_calls`.
    pub small_model: Option<SmallModel>,
    /// A task of several steps, played in order (each as `target`, `arguments` and `queries`
    /// are played); empty: the one step above. A step is done once a call of it answered with a
    /// confirmation (`CONF-…`); a string argument `{{key}}` is filled with the value of `key`
    /// in the previous step's result.
    pub steps: Vec<MockStep>,
}

/// One step of a task of several steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MockStep {
    /// The tool: a name or an id.
    pub target: String,
    /// Its arguments (`{{key}}` strings filled from the previous step's result).
    pub arguments: Value,
    /// The queries that find it.
    pub queries: Vec<String>,
}

/// How a scripted small model gets the controls' shape wrong. In direct mode, and
/// for the code behaviours when `tool_search_code` is not declared, the scenario plays as
/// usual.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmallModel {
    /// Calls `openclaw.tools.search`, `openclaw_tools_describe` and `openclaw-tools-call` as
    /// tools, with `{query, limit}`, `{id}` and `{id, args}`.
    BridgeNames,
    /// Calls bare `search` (`["query", {limit}]`), `describe` (`{id}`) and `call`
    /// (`[id, args]`).
    BareNames,
    /// Calls `tool_search` (or `tool_search_code` with `{query, limit}` when that is declared),
    /// `tool_describe` and `tool_call`, whatever the mode.
    StructuredControls,
    /// Sends the code-mode cell in a Markdown fence (```` ```js ````).
    FencedCode,
    /// Sends cells without `return`: `await openclaw.tools.search(…)` alone, then statements
    /// ending in an expression that is neither awaited nor returned.
    NoReturn,
    /// Writes its cells as text in a Markdown fence instead of calling `tool_search_code`: a
    /// search first, then the call the answer's next step names (the id taken from that step,
    /// never from the hits), then a final answer.
    CodeAsText,
    /// Sends its search cell a second time, identically, instead of the next step; then calls
    /// the tool the answer to that repeat names (the id taken from that answer's step).
    RepeatsSearch,
    /// Calls the bridge functions by name as Qwen2.5-Coder-1.5B does in code mode (as text with
    /// `text_calls`): `openclaw.tools.search`, then the `openclaw.tools.call` the answer's next
    /// step names (the id taken from that step, never from the hits), then a final answer.
    BridgeSteps,
}

impl SmallModel {
    /// Every behaviour.
    pub const ALL: [SmallModel; 8] = [
        SmallModel::BridgeNames,
        SmallModel::BareNames,
        SmallModel::StructuredControls,
        SmallModel::FencedCode,
        SmallModel::NoReturn,
        SmallModel::CodeAsText,
        SmallModel::RepeatsSearch,
        SmallModel::BridgeSteps,
    ];

    /// The behaviour's name (`bridge-names`, `bare-names`, `structured-controls`,
    /// `fenced-code`, `no-return`, `code-as-text`, `repeats-search`, `bridge-steps`).
    pub fn as_str(self) -> &'static str {
        match self {
            SmallModel::BridgeNames => "bridge-names",
            SmallModel::BareNames => "bare-names",
            SmallModel::StructuredControls => "structured-controls",
            SmallModel::FencedCode => "fenced-code",
            SmallModel::NoReturn => "no-return",
            SmallModel::CodeAsText => "code-as-text",
            SmallModel::RepeatsSearch => "repeats-search",
            SmallModel::BridgeSteps => "bridge-steps",
        }
    }

    /// Parses a name of [`SmallModel::as_str`].
    pub fn parse(text: &str) -> Option<SmallModel> {
        SmallModel::ALL
            .into_iter()
            .find(|m| m.as_str() == text.trim())
    }
}

impl Default for MockScenario {
    /// Works against the embedded demo catalog: convert 10 km to miles.
    fn default() -> Self {
        MockScenario {
            target: "convert_units".into(),
            arguments: json!({"value": 10, "from_unit": "km", "to_unit": "mi"}),
            queries: vec!["convert units".into(), "length km to miles".into()],
            faults: Vec::new(),
            repeat_forever: false,
            text_calls: false,
            small_model: None,
            steps: Vec::new(),
        }
    }
}

/// A fault injected into one request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Answer with this HTTP status (429 carries `Retry-After: 1`).
    Status(u16),
    /// A 200 whose body is cut-off JSON.
    Malformed,
    /// Call a tool named `no_such_tool`, which no request declares.
    UnknownTool,
    /// Call the scenario's next tool with arguments that are not JSON.
    BadArguments,
    /// Wait this many seconds (at most 600) before answering.
    Stall(u64),
    /// One answer with this many calls (at most `MAX_FLOOD_CALLS`) of the scenario's next
    /// tool, each under its own id; the i-th call's arguments are the scenario's with
    /// `"flood": i` added, so none repeats another.
    Flood(u32),
    /// One answer with two calls of the scenario's next tool under the same id, the second
    /// with `"flood": 1` added to the arguments.
    DuplicateIds,
}

/// Most calls a [`Fault::Flood`] answer holds.
pub const MAX_FLOOD_CALLS: u32 = 100_000;

impl Fault {
    /// Parses `500`, `429` (any status 400–599), `malformed`, `unknown-tool`, `bad-args`,
    /// `stall` (30 s), `stall:SECONDS`, `flood:CALLS` or `duplicate-ids`.
    pub fn parse(text: &str) -> Option<Fault> {
        let text = text.trim();
        match text {
            "malformed" => Some(Fault::Malformed),
            "unknown-tool" => Some(Fault::UnknownTool),
            "bad-args" => Some(Fault::BadArguments),
            "stall" => Some(Fault::Stall(30)),
            "duplicate-ids" => Some(Fault::DuplicateIds),
            _ => {
                if let Some(seconds) = text.strip_prefix("stall:") {
                    return seconds.parse().ok().map(Fault::Stall);
                }
                if let Some(calls) = text.strip_prefix("flood:") {
                    return calls
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_FLOOD_CALLS).contains(n))
                        .map(Fault::Flood);
                }
                text.parse::<u16>()
                    .ok()
                    .filter(|s| (400..600).contains(s))
                    .map(Fault::Status)
            }
        }
    }

    pub(super) fn label(&self) -> String {
        match self {
            Fault::Status(status) => format!("status {status}"),
            Fault::Malformed => "malformed".into(),
            Fault::UnknownTool => "unknown-tool".into(),
            Fault::BadArguments => "bad-args".into(),
            Fault::Stall(seconds) => format!("stall {seconds}s"),
            Fault::Flood(calls) => format!("flood {calls}"),
            Fault::DuplicateIds => "duplicate-ids".into(),
        }
    }
}

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
    let code = seen.declares("tool_search_code");
    let play = SmallMove::new(scenario, past);
    match model {
        SmallModel::BridgeNames | SmallModel::BareNames | SmallModel::StructuredControls => {
            if matches!(mode, Mode::Direct | Mode::Auto) {
                return None;
            }
            Some(play.controls(model, code))
        }
        SmallModel::FencedCode => code.then(|| play.fenced_code()),
        SmallModel::NoReturn => code.then(|| play.no_return()),
        SmallModel::CodeAsText => code.then(|| play.code_as_text()),
        SmallModel::RepeatsSearch => code.then(|| play.repeats_search()),
        SmallModel::BridgeSteps => code.then(|| play.bridge_steps()),
    }
}

/// A call of `name`, whether or not the request declares it.
fn undeclared_call(name: &str, arguments: Value) -> Action {
    Action::Call {
        name: name.to_string(),
        arguments,
    }
}

/// A `tool_search_code` call running `code`.
fn code_call(code: String) -> Action {
    undeclared_call("tool_search_code", json!({ "code": code }))
}

/// What a small model's moves read: the scenario, its target, its first query and the history.
struct SmallMove<'a> {
    scenario: &'a MockScenario,
    target: &'a str,
    query: String,
    past: &'a [Past],
}

impl<'a> SmallMove<'a> {
    fn new(scenario: &'a MockScenario, past: &'a [Past]) -> Self {
        let target = scenario.target.as_str();
        let query = scenario
            .queries
            .first()
            .cloned()
            .unwrap_or_else(|| target_name(target).to_string());
        SmallMove {
            scenario,
            target,
            query,
            past,
        }
    }

    fn not_found(&self) -> Action {
        Action::Answer(format!(
            "I could not find a tool named {} in the search results.",
            target_name(self.target)
        ))
    }

    /// The id to call: the one a next step names when it is the target, else the target among
    /// `hits`.
    fn wanted_id(&self, named: Option<String>, hits: Option<&Value>) -> Option<String> {
        match named? {
            id if id == self.target || target_name(&id) == target_name(self.target) => Some(id),
            _ => hits
                .and_then(|found| find_hit(found, self.target))
                .map(str::to_string),
        }
    }

    /// Bridge names, bare names or the structured controls: search → describe → call as tools.
    fn controls(&self, model: SmallModel, code: bool) -> Action {
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
        let Some(found) = done(self.past, search) else {
            let arguments = if bare {
                json!([self.query, {"limit": 5}])
            } else {
                json!({"query": self.query, "limit": 5})
            };
            return undeclared_call(search, arguments);
        };
        let Some(id) = find_hit(&found, self.target) else {
            return self.not_found();
        };
        if done(self.past, describe).is_none() {
            return undeclared_call(describe, json!({"id": id}));
        }
        match done(self.past, run) {
            Some(result) => answer(run, &result),
            None if bare => undeclared_call(run, json!([id, self.scenario.arguments])),
            None => undeclared_call(run, json!({"id": id, "args": self.scenario.arguments})),
        }
    }

    /// The scenario's cell in a Markdown fence.
    fn fenced_code(&self) -> Action {
        match done(self.past, "tool_search_code") {
            Some(result) => answer("tool_search_code", &result),
            None => code_call(format!("```js\n{}\n```", scenario_cell(self.scenario))),
        }
    }

    /// Cells without `return`.
    fn no_return(&self) -> Action {
        let cells = successful_cells(self.past);
        match cells.as_slice() {
            // A bare expression, awaited.
            [] => code_call(format!(
                "await openclaw.tools.search({})",
                json!(self.query)
            )),
            // Statements, then a top-level expression that is neither awaited nor returned.
            [found] => {
                let Some(id) = find_hit(found, self.target) else {
                    return self.not_found();
                };
                let id = json!(id);
                code_call(format!(
                    "const schema = await openclaw.tools.describe({id});\nopenclaw.tools.call({id}, {})",
                    self.scenario.arguments
                ))
            }
            [.., result] => answer("tool_search_code", result),
        }
    }

    /// Cells written as text in a Markdown fence instead of called.
    fn code_as_text(&self) -> Action {
        let cells = successful_cells(self.past);
        let fenced =
            |body: String| Action::Answer(format!("I will run this:\n```javascript\n{body}\n```"));
        match cells.as_slice() {
            [] => fenced(format!(
                "await openclaw.tools.search({})",
                json!(self.query)
            )),
            [found] => {
                // The next step says which tool to call, and how; when it names another
                // hit than the one wanted, the model picks the wanted one from the hits.
                let Some(id) = self.wanted_id(next_step_id(found), Some(found)) else {
                    return self.not_found();
                };
                fenced(format!(
                    "return await openclaw.tools.call({}, {});",
                    json!(id),
                    self.scenario.arguments
                ))
            }
            [.., result] => answer("tool_search_code", result),
        }
    }

    /// `openclaw.tools.search` by name, then the `openclaw.tools.call` its answer's step names.
    fn bridge_steps(&self) -> Action {
        let Some(found) = done(self.past, "openclaw.tools.search") else {
            return undeclared_call("openclaw.tools.search", json!({"query": self.query}));
        };
        if let Some(result) = done(self.past, "openclaw.tools.call") {
            return answer("openclaw.tools.call", &result);
        }
        let Some(id) = self.wanted_id(next_step_id(&found), Some(&found)) else {
            return self.not_found();
        };
        undeclared_call(
            "openclaw.tools.call",
            json!({"id": id, "args": self.scenario.arguments}),
        )
    }

    /// The search cell sent again, then the call the answer to the repeat names.
    fn repeats_search(&self) -> Action {
        let cells = successful_cells(self.past);
        let repeated = self.past.iter().rev().find_map(Past::repeated);
        match (cells.as_slice(), repeated) {
            ([] | [_], None) => code_call(format!(
                "return await openclaw.tools.search({});",
                json!(self.query)
            )),
            ([] | [_], Some(message)) => {
                // Only the step in the answer to the repeat says what to call.
                let step = json!({ "next": message });
                let Some(id) = self.wanted_id(next_step_id(&step), cells.first()) else {
                    return self.not_found();
                };
                code_call(format!(
                    "return await openclaw.tools.call({}, {});",
                    json!(id),
                    self.scenario.arguments
                ))
            }
            ([.., result], _) => answer("tool_search_code", result),
        }
    }
}

/// The tool id in a cell answer's next step (`next`: "… {\"code\": \"return await
/// openclaw.tools.call(\"ID\", …)\"} …", or, worded as a bridge call, "… openclaw.tools.call
/// with {\"id\": \"ID\", …").
fn next_step_id(found: &Value) -> Option<String> {
    let next = found.get("next")?.as_str()?;
    if let Some(at) = next.find("{\"id\": ") {
        let id: Value = serde_json::Deserializer::from_str(&next[at + "{\"id\": ".len()..])
            .into_iter::<Value>()
            .next()?
            .ok()?;
        return id.as_str().map(str::to_string);
    }
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
