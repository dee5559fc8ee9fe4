//! What the model sees (SPEC ): tool definitions and system-prompt sections per mode,
//! provider names, and dispatch of the model's tool calls back into the gateway.
//!
//! | mode        | declared tools                                                   | prompt adds |
//! |-------------|------------------------------------------------------------------|-------------|
//! | `direct`    | every allowed tool's schema                                      | nothing |
//! | `tools`     | tool_search, tool_describe, tool_call; direct-only; primitives   | usage note |
//! | `directory` | as `tools`, plus this run's client tools                          | directory or namespace index |
//! | `code`      | tool_search_code; direct-only; core primitives                   | API note |
//! | `auto`      | `direct` while small, else the configured deferred mode  | as chosen |
//!
//! Invariants: untrusted (MCP, client) names and descriptions never enter the system prompt;
//! prompt sections depend only on the snapshot, policy and settings — never on user messages or
//! session ids — so the prefix is byte-stable and cacheable (directory text is cached per
//! fingerprint); provider names are valid and unique with a reverse map; a denied tool
//! is absent from every list, count and map. `code` falls back to `tools` before anything is
//! compacted when the sandbox cannot start, and says so. Every error the model reads is
//! worded here ([`Guidance`]) for the controls it has.
//!
//! Calls in the wrong shape (`recover.rs`) — a bridge function's name as a tool, a
//! control this mode does not declare, bare `search` / `describe` / `call` with the matching
//! arguments, `tool_search_code` with search arguments, a fenced or return-less cell body — run
//! as their structured equivalent: in code mode as the code cell that makes the call, otherwise
//! as the control, through the same gateway path and policy. The answer is that equivalent's,
//! plus one line on how the declared control is used ([`Dispatch::Recovered`]); each is counted
//! (`recovered_calls`) and logged (`recovered_call`, with the name called and what it ran as).
//!
//! Never does: decide a call's outcome (the gateway), run guest code itself (the sandbox), or
//! read configuration values beyond the resolved [`Config`] it is given; building a surface
//! writes nothing (the session records the `auto` decision and the fallback).

mod guidance;
pub(crate) mod names;
mod next;
mod prompt;
mod recover;

pub use guidance::{Guidance, Vocabulary};
pub use names::ProviderNames;
#[cfg(feature = "fuzzing")]
pub use names::is_valid_provider_name;
pub use recover::Recovered;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cache::OnceCache;
use crate::catalog::{Descriptor, Fingerprint, Source};
use crate::config::{Config, DirectoryStyle, Mode, SearchLimits};
use crate::directory::{self, Namespace, Row};
use crate::gateway::{CallError, CallOutcome, ClientCall, Envelope, Gateway, Record};
use crate::policy::Authorized;
use crate::sandbox::{CellOptions, CellResult, GatewayBridge, Supervisor};
use crate::search::lookup::{self, Resolution};
use crate::sync::Locked;

/// Wire format of tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `{"type": "function", "function": {name, description, parameters}}`.
    OpenAi,
    /// `{name, description, input_schema}`.
    Anthropic,
}

/// The controls a surface may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// `tool_search`.
    Search,
    /// `tool_describe`.
    Describe,
    /// `tool_call`.
    Call,
    /// `tool_search_code`.
    Code,
}

/// What a declared tool dispatches to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A control.
    Control(Control),
    /// A tool, by id.
    Tool(String),
}

/// One declared tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The provider name.
    pub name: String,
    /// The description the model reads.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
    /// What a call of it runs.
    #[serde(skip)]
    pub target: Target,
}

/// One system-prompt section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptSection {
    /// A stable name (for snapshots and debugging).
    pub name: &'static str,
    /// The text.
    pub text: String,
}

/// Whether code mode can run here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeAvailability {
    /// A worker started (the sandbox probe passed).
    Available,
    /// It cannot; the reason is reported in the surface.
    Unavailable(String),
}

/// The `auto` decision and its inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoDecision {
    /// Allowed tools that direct mode would declare.
    pub tools: usize,
    /// Their estimated schema tokens (ceil(compact bytes / 4)).
    pub schema_tokens: usize,
    /// The tool limit in force.
    pub max_tools: usize,
    /// The token limit in force: min(autoMaxSchemaTokens, context_tokens / 10).
    pub max_schema_tokens: usize,
    /// The mode chosen.
    pub chosen: String,
}

/// A surface that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    /// A client tool's name collides with a catalog tool's.
    #[error(
        "client tool {client:?} has the same name as catalog tool {catalog:?}; client tool names must not collide with catalog names"
    )]
    ClientNameCollision {
        /// The client tool id.
        client: String,
        /// The catalog tool id.
        catalog: String,
    },
}

/// Options for building a surface.
#[derive(Debug, Clone)]
pub struct SurfaceOptions {
    /// The resolved configuration (mode, limits, directory style, auto thresholds).
    pub config: Config,
    /// The provider's context window in tokens, if known (directory and auto budgets).
    pub context_tokens: Option<usize>,
    /// Whether the sandbox can run code cells here.
    pub code: CodeAvailability,
}

/// What goes to the provider for one run, and how to route the model's calls back.
#[derive(Debug, Clone)]
pub struct Surface {
    /// The mode actually in force.
    pub mode: Mode,
    /// The mode the configuration asked for.
    pub requested_mode: Mode,
    /// Declared tools, in a deterministic order.
    pub tools: Vec<ToolDefinition>,
    /// System-prompt sections (all in the stable, cacheable prefix).
    pub prompt: Vec<PromptSection>,
    /// Why code mode fell back to tools mode, when it did.
    pub fallback: Option<String>,
    /// The auto decision, when mode was `auto`.
    pub auto: Option<AutoDecision>,
    names: Arc<ProviderNames>,
    /// Provider names that dispatch to a tool: declared tools, plus hidden catalog tools in
    /// directory mode (hydration, R-9.3).
    callable: BTreeMap<String, String>,
    hydrate: bool,
    guidance: Guidance,
    fallback_reason: Option<String>,
    /// The tool the last next step in code mode named: a call that names no tool right after
    /// it calls that one (`call_without_id`).
    last_step: Arc<std::sync::Mutex<Option<String>>>,
}

fn provider_parameters(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut map = map.clone();
            if !map.contains_key("type") {
                map.insert("type".into(), json!("object"));
            }
            if map.get("type") == Some(&json!("object")) && !map.contains_key("properties") {
                map.insert("properties".into(), json!({}));
            }
            Value::Object(map)
        }
        _ => json!({"type": "object", "properties": {}}),
    }
}

fn direct_definition(tool: &Descriptor, names: &ProviderNames) -> ToolDefinition {
    let mut parameters = provider_parameters(&tool.input_schema);
    // An untrusted tool's texts reach the model verbatim in a direct definition: no escape
    // sequence, bidirectional or zero-width control survives in its description or in the
    // descriptions and titles of its schema (values the model must send stay exact).
    let description = if tool.is_trusted() {
        tool.description.clone()
    } else {
        scrub_schema_texts(&mut parameters, 0);
        crate::telemetry::terminal_safe(&tool.description).into_owned()
    };
    ToolDefinition {
        name: names.name_of(&tool.id).unwrap_or(&tool.name).to_string(),
        description,
        parameters,
        target: Target::Tool(tool.id.clone()),
    }
}

/// Makes the `description` and `title` strings of a schema terminal-safe, at every level.
fn scrub_schema_texts(schema: &mut Value, depth: usize) {
    if depth > crate::config::input::MAX_MCP_MESSAGE_DEPTH {
        return;
    }
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if key == "description" || key == "title" => {
                        if let std::borrow::Cow::Owned(clean) =
                            crate::telemetry::terminal_safe(text)
                        {
                            *text = clean;
                        }
                    }
                    other => scrub_schema_texts(other, depth + 1),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| scrub_schema_texts(item, depth + 1)),
        _ => {}
    }
}

/// Provider names per (snapshot, policy): computed once (R-1.7 caches).
fn names_for(view: &Authorized) -> Arc<ProviderNames> {
    static CACHE: OnceCache<(Fingerprint, u64), Arc<ProviderNames>> = OnceCache::new(8);
    CACHE.get_or_init(view.cache_key(), || {
        Arc::new(ProviderNames::assign(
            view.tools().chain(view.direct_only()),
        ))
    })
}

/// Directory text per (snapshot, policy, budget, style): deterministic bytes, rendered once.
fn directory_for(
    view: &Authorized,
    names: &ProviderNames,
    budget: usize,
    style: DirectoryStyle,
) -> Arc<String> {
    static CACHE: OnceCache<(Fingerprint, u64, usize, bool), Arc<String>> = OnceCache::new(16);
    let (fingerprint, policy) = view.cache_key();
    let key = (
        fingerprint,
        policy,
        budget,
        style == DirectoryStyle::Namespaces,
    );
    CACHE.get_or_init(key, || {
        Arc::new(match style {
            DirectoryStyle::List => {
                let rows: Vec<Row> = view
                    .tools()
                    .filter(|t| t.is_trusted() && !t.is_core_primitive())
                    .map(|t| Row {
                        name: names.name_of(&t.id).unwrap_or(&t.name).to_string(),
                        description: t.description.clone(),
                    })
                    .collect();
                directory::render(rows, budget).text
            }
            DirectoryStyle::Namespaces => namespace_index(view, names),
        })
    })
}

/// The namespace index of the allowed catalog: trusted namespaces with representative names,
/// untrusted ones with only their server name and count.
pub fn namespace_index(view: &Authorized, names: &ProviderNames) -> String {
    let mut namespaces: BTreeMap<String, Namespace> = BTreeMap::new();
    for tool in view.tools() {
        if tool.is_core_primitive() {
            continue;
        }
        let entry = namespaces
            .entry(tool.namespace())
            .or_insert_with(|| Namespace {
                name: tool.namespace(),
                count: 0,
                names: Vec::new(),
            });
        entry.count += 1;
        if tool.is_trusted() {
            entry
                .names
                .push(names.name_of(&tool.id).unwrap_or(&tool.name).to_string());
        }
    }
    directory::render_namespaces(namespaces.into_values().collect())
}

/// `auto`'s decision: direct while every tool's definition fits the tool and token
/// bounds, the configured deferred mode past them.
fn auto_decision(
    view: &Authorized,
    names: &ProviderNames,
    options: &SurfaceOptions,
) -> (AutoDecision, Mode) {
    let config = &options.config;
    let direct = direct_tools(view, names);
    let bytes: usize = direct
        .iter()
        .map(|d| to_format(d, Format::OpenAi).to_string().len())
        .sum();
    let schema_tokens = estimated_tokens(bytes);
    let max_schema_tokens = match options.context_tokens {
        Some(tokens) => config.auto_max_schema_tokens.min(tokens / 10),
        None => config.auto_max_schema_tokens,
    };
    let mode = if direct.len() <= config.auto_max_tools && schema_tokens <= max_schema_tokens {
        Mode::Direct
    } else {
        config.auto_deferred_mode
    };
    let decision = AutoDecision {
        tools: direct.len(),
        schema_tokens,
        max_tools: config.auto_max_tools,
        max_schema_tokens,
        chosen: mode.to_string(),
    };
    (decision, mode)
}

/// A control's definition.
fn control(name: &str, description: String, parameters: Value, c: Control) -> ToolDefinition {
    ToolDefinition {
        name: name.to_string(),
        description,
        parameters,
        target: Target::Control(c),
    }
}

/// The three structured controls: `tool_search`, `tool_describe`, `tool_call`.
fn structured_controls(limits: SearchLimits) -> [ToolDefinition; 3] {
    [
        control(
            "tool_search",
            prompt::tool_search_description().to_string(),
            prompt::tool_search_parameters(limits),
            Control::Search,
        ),
        control(
            "tool_describe",
            prompt::tool_describe_description().to_string(),
            prompt::tool_describe_parameters(),
            Control::Describe,
        ),
        control(
            "tool_call",
            prompt::tool_call_description().to_string(),
            prompt::tool_call_parameters(),
            Control::Call,
        ),
    ]
}

/// What `mode` declares: its tool definitions and its system-prompt sections.
fn declared(
    mode: Mode,
    view: &Authorized,
    names: &ProviderNames,
    options: &SurfaceOptions,
) -> (Vec<ToolDefinition>, Vec<PromptSection>) {
    let config = &options.config;
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut prompt: Vec<PromptSection> = Vec::new();
    match mode {
        Mode::Direct | Mode::Auto => {
            tools = direct_tools(view, names);
        }
        Mode::Tools => {
            tools.extend(structured_controls(config.search_limits));
            tools.extend(always_visible(view, names));
            prompt.push(PromptSection {
                name: "tools_note",
                text: prompt::TOOLS_NOTE.to_string(),
            });
        }
        Mode::Directory => {
            tools.extend(structured_controls(config.search_limits));
            tools.extend(always_visible(view, names));
            tools.extend(
                view.tools()
                    .filter(|t| t.source == Source::Client)
                    .map(|t| direct_definition(t, names)),
            );
            prompt.push(PromptSection {
                name: "directory_note",
                text: prompt::DIRECTORY_NOTE.to_string(),
            });
            let budget = directory::directory_budget(options.context_tokens);
            prompt.push(PromptSection {
                name: match config.directory {
                    DirectoryStyle::List => "directory",
                    DirectoryStyle::Namespaces => "namespace_index",
                },
                text: directory_for(view, names, budget, config.directory).to_string(),
            });
        }
        Mode::Code => {
            tools.push(control(
                "tool_search_code",
                prompt::tool_search_code_description(config.code_timeout.as_millis()),
                prompt::tool_search_code_parameters(),
                Control::Code,
            ));
            tools.extend(always_visible(view, names));
            prompt.push(PromptSection {
                name: "code_note",
                text: prompt::CODE_NOTE.to_string(),
            });
        }
    }
    (tools, prompt)
}

/// How the step after a search is worded: as a `tool_search_code` cell, or as a bridge-function
/// call for a model that calls `openclaw.tools.*` by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepShape {
    Cell,
    Bridge,
}

/// Estimated tokens of serialized tool definitions: ceil(compact bytes / 4).
pub fn estimated_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

impl Surface {
    /// Builds the surface of a run over `view`. Pure: the `auto` decision and the code
    /// fallback are returned in the surface and written to the session log by
    /// [`Surface::record_decisions`].
    pub fn build(view: &Authorized, options: &SurfaceOptions) -> Result<Surface, SurfaceError> {
        check_client_names(view)?;
        let view = view.clone();
        let names = names_for(&view);
        let config = &options.config;
        let requested = config.mode;

        let mut auto = None;
        let mut mode = requested;
        if mode == Mode::Auto {
            let decision = auto_decision(&view, &names, options);
            mode = decision.1;
            auto = Some(decision.0);
        }
        let mut fallback = None;
        let mut fallback_reason = None;
        if mode == Mode::Code
            && let CodeAvailability::Unavailable(reason) = &options.code
        {
            fallback = Some(format!(
                "code mode is unavailable here ({reason}); using tools mode"
            ));
            fallback_reason = Some(reason.clone());
            mode = Mode::Tools;
        }

        let (tools, prompt) = declared(mode, &view, &names, options);
        let mut callable: BTreeMap<String, String> = BTreeMap::new();
        for tool in &tools {
            if let Target::Tool(id) = &tool.target {
                callable.insert(tool.name.clone(), id.clone());
            }
        }
        let guidance = Guidance::new(Vocabulary::of(mode), names.clone());
        Ok(Surface {
            mode,
            requested_mode: requested,
            tools,
            prompt,
            fallback,
            auto,
            names,
            callable,
            hydrate: mode == Mode::Directory,
            guidance,
            fallback_reason,
            last_step: Arc::default(),
        })
    }

    /// Writes the `auto` decision and the code fallback, when there were any, to the run's
    /// session log and to tracing. Call it once, after `run_start`.
    pub fn record_decisions(&self, gateway: &Gateway) {
        if let Some(decision) = &self.auto {
            tracing::info!(
                tools = decision.tools,
                schema_tokens = decision.schema_tokens,
                max_tools = decision.max_tools,
                max_schema_tokens = decision.max_schema_tokens,
                chosen = %decision.chosen,
                "auto mode decision"
            );
            gateway.log(Record::AutoDecision {
                tools: decision.tools,
                schema_tokens: decision.schema_tokens,
                max_tools: decision.max_tools,
                max_schema_tokens: decision.max_schema_tokens,
                chosen: &decision.chosen,
            });
        }
        if let Some(reason) = &self.fallback_reason {
            tracing::warn!(%reason, "code mode falls back to tools mode");
            gateway.log(Record::CodeFallback { reason });
        }
    }

    /// How the surface words errors.
    pub fn guidance(&self) -> &Guidance {
        &self.guidance
    }

    /// How many tool schemas the model sees up front: the declared tools.
    pub fn schemas_visible_up_front(&self) -> usize {
        self.tools.len()
    }

    /// The bridge of a code cell of `gateway`'s run: the gateway's call path, rejections worded
    /// for `openclaw.tools.*`.
    pub fn cell_bridge(&self, gateway: &Gateway) -> GatewayBridge {
        let guidance = self.guidance.with_vocabulary(Vocabulary::Code);
        GatewayBridge::new(gateway.clone())
            .with_wording(Arc::new(move |error: &CallError| guidance.word(error)))
    }

    /// Runs one `tool_search_code` cell for `gateway`'s run on `supervisor`: every bridge call
    /// takes the gateway's call path and its rejections are worded for a code cell; the cell is
    /// counted and logged (R-11.1 per-cell timings).
    pub async fn run_cell(
        &self,
        supervisor: &Supervisor,
        gateway: &Gateway,
        code: &str,
        timeout: Option<std::time::Duration>,
    ) -> CellResult {
        self.run_cell_searched(supervisor, gateway, code, timeout)
            .await
            .0
    }

    /// [`Surface::run_cell`], and the answer of the cell's last successful search.
    async fn run_cell_searched(
        &self,
        supervisor: &Supervisor,
        gateway: &Gateway,
        code: &str,
        timeout: Option<std::time::Duration>,
    ) -> (CellResult, Option<Value>) {
        use tracing::Instrument;
        let span = tracing::debug_span!("code_cell", run_id = %gateway.run().run_id);
        let bridge = Arc::new(self.cell_bridge(gateway));
        let result = supervisor
            .run_cell(
                code,
                bridge.clone(),
                CellOptions {
                    timeout,
                    ..CellOptions::default()
                },
            )
            .instrument(span.clone())
            .await;
        span.in_scope(|| {
            tracing::debug!(
                outcome = result.outcome.kind(),
                worker_pid = result.telemetry.worker_pid,
                run_ms = result.telemetry.run_ms,
                bridge_calls = result.telemetry.bridge_calls,
                "code cell"
            )
        });
        crate::telemetry::Counters::bump(&gateway.counters().cells);
        gateway.log(Record::Cell {
            outcome: result.outcome.kind(),
            worker_pid: result.telemetry.worker_pid,
            warm: result.telemetry.warm,
            queue_ms: result.telemetry.queue_ms,
            run_ms: result.telemetry.run_ms,
            bridge_calls: result.telemetry.bridge_calls,
        });
        (result, bridge.last_search())
    }

    /// The tool definitions in `format`.
    pub fn tools_json(&self, format: Format) -> Value {
        Value::Array(self.tools.iter().map(|t| to_format(t, format)).collect())
    }

    /// The system-prompt text this surface adds (empty in direct mode).
    pub fn system_prompt(&self) -> String {
        self.prompt
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Bytes of the provider request this surface accounts for: serialized tool definitions
    /// plus prompt sections.
    pub fn request_bytes(&self, format: Format) -> usize {
        self.tools_json(format).to_string().len() + self.system_prompt().len()
    }

    /// The provider names of every allowed tool (declared or not).
    pub fn names(&self) -> &ProviderNames {
        &self.names
    }

    /// What a model's call of `name` dispatches to, if anything.
    pub fn target_of(&self, name: &str) -> Option<Target> {
        if let Some(id) = self.callable.get(name) {
            return Some(Target::Tool(id.clone()));
        }
        if let Some(tool) = self
            .tools
            .iter()
            .find(|t| t.name == name && matches!(t.target, Target::Control(_)))
        {
            return Some(tool.target.clone());
        }
        if self.hydrate
            && let Some(id) = self.names.id_of(name)
        {
            return Some(Target::Tool(id.to_string()));
        }
        None
    }

    /// The surface as one JSON object (what `toolsearch surface --json` prints).
    pub fn to_json(&self, format: Format) -> Value {
        json!({
            "mode": self.mode.as_str(),
            "requested_mode": self.requested_mode.as_str(),
            "format": format,
            "declared_tools": self.tools.len(),
            "request_bytes": self.request_bytes(format),
            "tools": self.tools_json(format),
            "system_prompt": self.system_prompt(),
            "fallback": self.fallback,
            "auto": self.auto,
        })
    }

    /// Dispatches a model's tool call by provider name: controls, declared tools,
    /// directory hydration and — given the run's `supervisor` — code cells; a call in the wrong
    /// shape runs as its structured equivalent (`Dispatch::Recovered`). Every error comes back
    /// worded for this surface.
    pub async fn dispatch(
        &self,
        gateway: &Gateway,
        supervisor: Option<&Supervisor>,
        name: &str,
        arguments: &Value,
    ) -> Dispatch {
        let mut recovered = None;
        let dispatched = match self.target_of(name) {
            Some(Target::Control(Control::Search)) => searched(gateway, arguments),
            Some(Target::Control(Control::Describe)) => match gateway.describe(arguments) {
                Ok(value) => Dispatch::Result(value),
                Err(error) => Dispatch::Failed(error),
            },
            Some(Target::Control(Control::Call)) => gateway.call(arguments).await.into(),
            Some(Target::Control(Control::Code)) => {
                let code = arguments.get("code");
                match (
                    code.and_then(Value::as_str),
                    recover::code_tool_search(arguments),
                ) {
                    (Some(code), _) => {
                        let normalized = recover::normalize_body(code);
                        if normalized.changed() {
                            recovered = Some(Recovered {
                                name: name.to_string(),
                                form: match (normalized.fenced, normalized.returned) {
                                    (true, true) => "fenced_body_implicit_return",
                                    (true, false) => "fenced_body",
                                    _ => "implicit_return",
                                },
                                ran_as: "tool_search_code".into(),
                                hint: normalized.hint(),
                            });
                        }
                        self.code_cell(gateway, supervisor, &normalized.body, StepShape::Cell)
                            .await
                    }
                    (None, Some(plan)) => {
                        let (dispatched, found) =
                            self.run_plan(gateway, supervisor, name, &plan).await;
                        recovered = Some(found);
                        dispatched
                    }
                    (None, None) => Dispatch::Failed(Guidance::missing_code(code)),
                }
            }
            Some(Target::Tool(id)) => gateway.call_tool(&id, arguments.clone()).await.into(),
            None => match self.plan_of(gateway, name, arguments) {
                Some(plan) => {
                    let (dispatched, found) = self.run_plan(gateway, supervisor, name, &plan).await;
                    recovered = Some(found);
                    dispatched
                }
                None => match self.lenient(gateway, name, arguments) {
                    Lenient::Plan(plan) => {
                        let (dispatched, found) =
                            self.run_plan(gateway, supervisor, name, &plan).await;
                        recovered = Some(found);
                        dispatched
                    }
                    Lenient::Hydrate(id) => gateway.call_tool(&id, arguments.clone()).await.into(),
                    Lenient::Failed(error) => Dispatch::Failed(error),
                },
            },
        };
        let dispatched = match dispatched {
            Dispatch::Failed(error) => Dispatch::Failed(self.guidance.reword(error)),
            other => other,
        };
        match recovered {
            Some(recovered) => {
                record_recovered(gateway, &recovered, &dispatched);
                Dispatch::Recovered(Box::new(dispatched), recovered)
            }
            None => dispatched,
        }
    }

    /// A code cell of `code` on the run's sandbox (a failed cell when the run has none), with
    /// the next step, worded in `shape`, when its value is a search answer, or when it failed
    /// after a search.
    async fn code_cell(
        &self,
        gateway: &Gateway,
        supervisor: Option<&Supervisor>,
        code: &str,
        shape: StepShape,
    ) -> Dispatch {
        match supervisor {
            Some(supervisor) => {
                let (result, searched) = self
                    .run_cell_searched(supervisor, gateway, code, None)
                    .await;
                let next = match (&result.outcome, &result.value, searched) {
                    (crate::sandbox::Outcome::Ok, Some(value), _) => {
                        next::after_search(&gateway.index(), value)
                    }
                    // A cell that failed after a search: what it found, and how to call it.
                    (outcome, _, Some(found)) if !outcome.is_ok() => {
                        next::after_search(&gateway.index(), &found)
                    }
                    _ => None,
                };
                *self.last_step.locked() = next.as_ref().map(|step| step.id.clone());
                let text = next.map(|step| match shape {
                    StepShape::Cell => step.text,
                    StepShape::Bridge => step.as_bridge_call(),
                });
                Dispatch::Cell(result, text)
            }
            None => Dispatch::Cell(
                CellResult::failed(
                    crate::sandbox::Outcome::WorkerSetupFailure {
                        detail: "this run has no sandbox".into(),
                    },
                    Default::default(),
                ),
                None,
            ),
        }
    }

    /// A code cell the model wrote as text instead of calling `tool_search_code` (a lenient
    /// agent found it): runs as that control's cell when this surface declares it, as a
    /// recovered call (`code_in_text`); otherwise the unknown-name error for that control.
    pub async fn dispatch_code_in_text(
        &self,
        gateway: &Gateway,
        supervisor: Option<&Supervisor>,
        code: &str,
    ) -> Dispatch {
        const CONTROL: &str = "tool_search_code";
        if self.target_of(CONTROL) != Some(Target::Control(Control::Code)) {
            return Dispatch::Failed(self.guidance.unknown_name(CONTROL));
        }
        let normalized = recover::normalize_body(code);
        let dispatched = self
            .code_cell(gateway, supervisor, &normalized.body, StepShape::Cell)
            .await;
        let recovered = Recovered {
            name: CONTROL.into(),
            form: "code_in_text",
            ran_as: CONTROL.into(),
            hint: recover::code_in_text_hint(&normalized),
        };
        record_recovered(gateway, &recovered, &dispatched);
        Dispatch::Recovered(Box::new(dispatched), recovered)
    }

    /// The wrong-shape plan of an undeclared `name`, if it is one. Bare `search` / `describe` /
    /// `call` count only when no allowed catalog tool goes by that name.
    fn plan_of(&self, gateway: &Gateway, name: &str, arguments: &Value) -> Option<recover::Plan> {
        let bare = matches!(
            lookup::resolve(&gateway.index(), name),
            Resolution::NotFound
        );
        recover::classify(name, arguments, bare)
    }

    /// Runs a wrong-shape call as its structured equivalent: in code mode the cell
    /// `return await openclaw.tools.<op>(…)`, otherwise the control's gateway operation.
    async fn run_plan(
        &self,
        gateway: &Gateway,
        supervisor: Option<&Supervisor>,
        name: &str,
        plan: &recover::Plan,
    ) -> (Dispatch, Recovered) {
        let last_step = self.last_step.locked().clone();
        let named = last_step.and_then(|id| plan.naming(&id));
        let plan = named.as_ref().unwrap_or(plan);
        let unknown = plan.form == recover::Form::UnknownName;
        let mut hint = if unknown {
            recover::unknown_name_hint(name, self.mode)
        } else {
            recover::plan_hint(plan, self.mode)
        };
        let (dispatched, ran_as) = if self.mode == Mode::Code {
            let body = plan.cell_body();
            // A model that calls the bridge functions by name gets the step in that shape.
            let shape = if plan.form == recover::Form::BridgeName {
                StepShape::Bridge
            } else {
                StepShape::Cell
            };
            let dispatched = self.code_cell(gateway, supervisor, &body, shape).await;
            if !unknown && let Dispatch::Cell(_, Some(_)) = &dispatched {
                // The answer's next step shows the control in use; no second example.
                hint = match shape {
                    StepShape::Cell => recover::CODE_NEXT_HINT,
                    StepShape::Bridge => recover::BRIDGE_NEXT_HINT,
                }
                .into();
            }
            (dispatched, "tool_search_code")
        } else {
            let dispatched = match plan.op {
                recover::Op::Search => {
                    let request = crate::sandbox::search_request(plan.first(), plan.second());
                    searched(gateway, &request)
                }
                recover::Op::Describe => match gateway.describe(&plan.first()) {
                    Ok(value) => Dispatch::Result(value),
                    Err(error) => Dispatch::Failed(error),
                },
                recover::Op::Call => {
                    match crate::sandbox::CellCall::of(plan.first(), plan.second()) {
                        Some(call) => call.run(gateway).await.into(),
                        None => Dispatch::Failed(
                            CallError::new(
                                crate::gateway::ErrorKind::BadRequest,
                                None,
                                "a call takes a tool id string and an object of arguments",
                            )
                            .recover(crate::gateway::Recovery::Usage {
                                operation: crate::gateway::Operation::Call,
                            }),
                        ),
                    }
                }
            };
            (dispatched, plan.op.control())
        };
        let recovered = Recovered {
            name: name.to_string(),
            form: plan.form.as_str(),
            ran_as: ran_as.to_string(),
            hint,
        };
        (dispatched, recovered)
    }

    /// A name that is neither declared nor a provider name, resolved leniently against
    /// the allowed catalog. Directory mode hydrates a unique match; code and tools mode run it
    /// as a call through their control (`catalog_name`); in those three modes a name that
    /// matches nothing runs as a search for its words when that finds an allowed tool
    /// (`unknown_name`: nothing is called); several matches are an ambiguity error listing the
    /// allowed candidates.
    fn lenient(&self, gateway: &Gateway, name: &str, arguments: &Value) -> Lenient {
        let index = gateway.index();
        let deferred = matches!(self.mode, Mode::Code | Mode::Tools | Mode::Directory);
        match lookup::resolve(&index, name) {
            Resolution::Found(position) => {
                let Some(id) = index.tool(position).map(|t| t.id.clone()) else {
                    return Lenient::Failed(self.guidance.unknown_name(name));
                };
                if self.hydrate {
                    Lenient::Hydrate(id)
                } else if deferred {
                    Lenient::Plan(recover::catalog_call(&id, arguments))
                } else {
                    Lenient::Failed(self.guidance.not_declared(name, &id))
                }
            }
            Resolution::Ambiguous(candidates) => Lenient::Failed(crate::gateway::lookup_error(
                lookup::LookupError::Ambiguous {
                    selector: name.to_string(),
                    candidates,
                },
            )),
            Resolution::NotFound => {
                let finds = |plan: &recover::Plan| {
                    let request = crate::sandbox::search_request(plan.first(), Value::Null);
                    gateway.search(&request).is_ok_and(|response| {
                        matches!(response, crate::search::batch::SearchResponse::Single(single) if !single.hits.is_empty())
                    })
                };
                match recover::unknown_name_search(name, arguments) {
                    Some(plan) if deferred && finds(&plan) => Lenient::Plan(plan),
                    _ => Lenient::Failed(self.guidance.unknown_name(name)),
                }
            }
        }
    }
}

/// What an undeclared name leads to (see [`Surface::lenient`]).
enum Lenient {
    /// Run as the structured equivalent.
    Plan(recover::Plan),
    /// Directory mode: the tool, declared on first use.
    Hydrate(String),
    /// An error for the model.
    Failed(CallError),
}

/// The result of dispatching one model call. Errors are worded for the surface.
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatch {
    /// A control's JSON result (a description).
    Result(Value),
    /// A search answer: the hits and what they cover.
    Searched(crate::search::batch::Searched),
    /// A tool ran; its envelope.
    Done(Envelope),
    /// A client tool: the application runs it and completes the call.
    ClientCall(ClientCall),
    /// A code cell ran (its outcome may be a failure), and, when its value is a search answer
    /// or it failed after a search, the next step: the cell that calls the best hit (code
    /// mode's model reads it as `next`).
    Cell(CellResult, Option<String>),
    /// The call failed; the error is the answer to the model.
    Failed(CallError),
    /// A call in the wrong shape ran as its structured equivalent: that equivalent's outcome
    /// (never itself `Recovered`), and what was recovered.
    Recovered(Box<Dispatch>, Recovered),
}

/// `tool_search` as a dispatch: the answer rendered for the model, or the error.
fn searched(gateway: &Gateway, arguments: &Value) -> Dispatch {
    match gateway.search(arguments) {
        Ok(response) => Dispatch::Searched(response.render(gateway.search_limits().max_limit())),
        Err(error) => Dispatch::Failed(error),
    }
}

/// Counts and logs one recovered call: the name the model called, how it was recognised, what
/// it ran as and whether that succeeded (never its arguments).
fn record_recovered(gateway: &Gateway, recovered: &Recovered, outcome: &Dispatch) {
    crate::telemetry::Counters::bump(&gateway.counters().recovered_calls);
    let ok = match outcome {
        Dispatch::Failed(_) => false,
        Dispatch::Cell(cell, _) => cell.outcome.is_ok(),
        _ => true,
    };
    tracing::debug!(
        name = %recovered.name,
        form = recovered.form,
        ran_as = %recovered.ran_as,
        ok,
        "recovered call"
    );
    gateway.log(Record::RecoveredCall {
        name: &recovered.name,
        form: recovered.form,
        ran_as: &recovered.ran_as,
        ok,
    });
}

impl From<CallOutcome> for Dispatch {
    fn from(outcome: CallOutcome) -> Dispatch {
        match outcome {
            CallOutcome::Done(envelope) => Dispatch::Done(envelope),
            CallOutcome::ClientCallRequired(call) => Dispatch::ClientCall(call),
            CallOutcome::Failed(error) => Dispatch::Failed(error),
        }
    }
}

fn to_format(tool: &ToolDefinition, format: Format) -> Value {
    match format {
        Format::OpenAi => json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
        }),
        Format::Anthropic => json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters,
        }),
    }
}

/// Direct mode: every allowed tool, catalog and direct-only, in id order.
fn direct_tools(view: &Authorized, names: &ProviderNames) -> Vec<ToolDefinition> {
    let mut all: Vec<&Descriptor> = view.tools().chain(view.direct_only()).collect();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    all.into_iter()
        .map(|t| direct_definition(t, names))
        .collect()
}

/// Tools every deferred mode declares: direct-only tools and core primitives.
fn always_visible(view: &Authorized, names: &ProviderNames) -> Vec<ToolDefinition> {
    let mut visible: Vec<&Descriptor> = view
        .direct_only()
        .chain(view.tools().filter(|t| t.is_core_primitive()))
        .collect();
    visible.sort_by(|a, b| a.id.cmp(&b.id));
    visible
        .into_iter()
        .map(|t| direct_definition(t, names))
        .collect()
}

/// Client tool names must not collide with catalog names.
fn check_client_names(view: &Authorized) -> Result<(), SurfaceError> {
    let mut catalog: BTreeMap<&str, &str> = BTreeMap::new();
    for tool in view.tools().chain(view.direct_only()) {
        if tool.source != Source::Client {
            catalog
                .entry(tool.name.as_str())
                .or_insert(tool.id.as_str());
        }
    }
    for tool in view.tools().chain(view.direct_only()) {
        if tool.source == Source::Client
            && let Some(other) = catalog.get(tool.name.as_str())
        {
            return Err(SurfaceError::ClientNameCollision {
                client: tool.id.clone(),
                catalog: other.to_string(),
            });
        }
    }
    Ok(())
}
