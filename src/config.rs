//! Configuration (SPEC R-10), in two stages: raw (JSON5 text → checked keys and types) →
//! resolved (profile defaults, explicit values over them, clamps).
//!
//! Shape: `{profile?: "default"|"local", tools?: {toolSearch?: false | true | {…}}, mcp?: {servers:
//! {<name>: {…}}}}` where the
//! object takes `mode` ("code" | "tools" | "directory" | "auto"), `autoDeferredMode` ("code" |
//! "tools" | "directory"), `autoMaxTools` (32), `autoMaxSchemaTokens` (12,000),
//! `codeTimeoutMs` (10,000; 1,000–60,000), `memoryLimitBytes` (64 MiB; 16 MiB–1 GiB),
//! `searchDefaultLimit` (8; 1..maxSearchLimit), `maxSearchLimit` (20; 1–50) and `directory`
//! ("list" | "namespaces"). `false` means direct exposure; `true` means `{}`.
//!
//! MCP servers: `mcp.servers.<name>` is a stdio server `{command, args?, env?, cwd?}` or
//! a streamable-HTTP server `{url, headers?}`, plus `startupTimeoutMs` (30,000; 100–600,000),
//! `callTimeoutMs` (300,000; 1,000–3,600,000), `enabledTools` / `disabledTools` (globs over tool
//! names), `approval` ("destructive" — the default: tools annotated `destructiveHint: true`
//! without `readOnlyHint` need approval —, "always" or "never"), `restart` (stdio; default
//! true) and `protocol` ("handshake" — the default: `initialize`, the revisions up to
//! 2025-11-25 —, "2026-07-28": `server/discover` and that revision only, or "auto": that
//! revision if the server offers it, else the handshake). A name is 1–64 characters of `[A-Za-z0-9_-]`; it becomes the tools' owner
//! (`mcp:<name>:<tool>`).
//!
//! The agent loop (`toolsearch agent`): `agent: {maxCallsPerTurn, maxRunResultBytes,
//! runTimeoutMs}` — most tool calls run from one model answer (64; 1–10,000; the rest are
//! answered with an error naming the bound, not run), most bytes of tool results sent back to
//! the provider over a run (16 MiB; 64 KiB–1 GiB; then no more calls run and the run stops), and
//! the whole run's wall-clock deadline (1,800,000 ms = 30 min; 1,000–86,400,000). The CLI's
//! `--max-calls-per-turn`, `--max-run-result-bytes` and `--run-timeout-secs` override them.
//!
//! Profiles: `default`, and `local` for local models (mode `tools`, limits 5/10).
//! Explicit values always win over profile defaults. Unknown keys and invalid values fail
//! closed with a [`ConfigError`] naming the key and the accepted values — never a
//! silent fallback to broad direct exposure. Numbers outside their range are clamped and the
//! clamp is reported in [`Config::warnings`].

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

/// A setting's default and the range it is clamped to. Every bound that both the config and
/// another module apply (the sandbox's limits, the search limits) is one of these constants,
/// defined here once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The value used when nothing is configured.
    pub default: u64,
    /// The smallest accepted value (smaller ones are raised to it).
    pub min: u64,
    /// The largest accepted value (larger ones are lowered to it).
    pub max: u64,
}

impl Bounds {
    /// `value` moved into `min..=max`.
    pub const fn clamp(&self, value: u64) -> u64 {
        if value < self.min {
            self.min
        } else if value > self.max {
            self.max
        } else {
            value
        }
    }
}

/// `codeTimeoutMs`: 10,000 ms, clamped to 1,000–60,000. The sandbox's
/// `Limits::code_timeout` uses the same bounds.
pub const CODE_TIMEOUT_MS: Bounds = Bounds {
    default: 10_000,
    min: 1_000,
    max: 60_000,
};
/// `memoryLimitBytes`: 64 MiB, clamped to 16 MiB–1 GiB. The sandbox's
/// `Limits::memory_limit_bytes` uses the same bounds.
pub const MEMORY_LIMIT_BYTES: Bounds = Bounds {
    default: 64 << 20,
    min: 16 << 20,
    max: 1 << 30,
};
/// `autoMaxTools`.
pub const AUTO_MAX_TOOLS: Bounds = Bounds {
    default: 32,
    min: 0,
    max: 10_000,
};
/// `autoMaxSchemaTokens`.
pub const AUTO_MAX_SCHEMA_TOKENS: Bounds = Bounds {
    default: 12_000,
    min: 0,
    max: 1_000_000,
};
/// `maxSearchLimit`: 20, clamped to 1–50.
pub const MAX_SEARCH_LIMIT: Bounds = Bounds {
    default: 20,
    min: 1,
    max: 50,
};
/// `searchDefaultLimit`: 8, clamped to 1–`maxSearchLimit` (R-3.8; `max` here is the ceiling).
pub const SEARCH_DEFAULT_LIMIT: Bounds = Bounds {
    default: 8,
    min: 1,
    max: MAX_SEARCH_LIMIT.max,
};
/// The local-model profile's search limits: default 5, max 10.
pub const LOCAL_SEARCH_LIMITS: (u64, u64) = (5, 10);
/// The hard ceiling of `maxSearchLimit`.
pub const MAX_SEARCH_LIMIT_CEILING: usize = MAX_SEARCH_LIMIT.max as usize;

/// Search result limits: default 8 and max 20; the local-model profile uses 5 and 10.
/// `max` is clamped to 1..=50 and `default` to 1..=max.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    default: usize,
    max: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits::new(
            SEARCH_DEFAULT_LIMIT.default as usize,
            MAX_SEARCH_LIMIT.default as usize,
        )
    }
}

impl SearchLimits {
    /// Limits for the local-model profile.
    pub fn local() -> Self {
        SearchLimits::new(
            LOCAL_SEARCH_LIMITS.0 as usize,
            LOCAL_SEARCH_LIMITS.1 as usize,
        )
    }

    /// Builds clamped limits: `max` to 1..=50, `default` to 1..=max.
    pub fn new(default: usize, max: usize) -> Self {
        let max = max.clamp(MAX_SEARCH_LIMIT.min as usize, MAX_SEARCH_LIMIT_CEILING);
        SearchLimits {
            default: default.clamp(1, max),
            max,
        }
    }

    /// The limit used when a request gives none.
    pub fn default_limit(&self) -> usize {
        self.default
    }

    /// The largest limit a request may get (larger ones are clamped).
    pub fn max_limit(&self) -> usize {
        self.max
    }
}

impl fmt::Display for SearchLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "default {}, max {}", self.default, self.max)
    }
}

/// What the model is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Every allowed tool's schema (`toolSearch: false`).
    Direct,
    /// One `tool_search_code` tool running JavaScript against the bridge.
    Code,
    /// Structured `tool_search`, `tool_describe`, `tool_call`.
    Tools,
    /// As `tools`, plus the capability directory in the prompt.
    Directory,
    /// `direct` while small, else the configured deferred mode.
    Auto,
}

impl Mode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Code => "code",
            Mode::Tools => "tools",
            Mode::Directory => "directory",
            Mode::Auto => "auto",
        }
    }

    /// Parses the config spelling (`direct` too, for the CLI).
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "direct" => Some(Mode::Direct),
            "code" => Some(Mode::Code),
            "tools" => Some(Mode::Tools),
            "directory" => Some(Mode::Directory),
            "auto" => Some(Mode::Auto),
            _ => None,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the directory prompt section is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DirectoryStyle {
    /// Tool names and short descriptions, sorted by name.
    List,
    /// The namespace index: counts and representative names.
    Namespaces,
}

/// A profile of defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Hosted models.
    Default,
    /// Local models: structured tools mode, smaller limits.
    Local,
}

impl Profile {
    /// Parses `default` or `local`.
    pub fn parse(text: &str) -> Option<Profile> {
        match text {
            "default" => Some(Profile::Default),
            "local" => Some(Profile::Local),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Local => "local",
        }
    }
}

/// A configuration that cannot be used. Always names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The text is not JSON5.
    #[error("config is not valid JSON5: {0}")]
    Syntax(String),
    /// A key that does not exist.
    #[error("unknown config key {:?}; accepted keys here: {accepted}", input::echo(.key))]
    UnknownKey {
        /// The dotted key path.
        key: String,
        /// The keys that are accepted at that level.
        accepted: &'static str,
    },
    /// A value of the wrong type or outside its vocabulary.
    #[error("invalid value for {key}: {got}; expected {expected}")]
    Invalid {
        /// The dotted key path.
        key: String,
        /// The value given, as JSON.
        got: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// The file could not be read.
    #[error("cannot read config {path}: {message}")]
    File {
        /// The path.
        path: String,
        /// Why.
        message: String,
    },
}

/// `startupTimeoutMs` of an MCP server: 30 s, clamped to 0.1–600 s.
pub const MCP_STARTUP_TIMEOUT_MS: Bounds = Bounds {
    default: 30_000,
    min: 100,
    max: 600_000,
};
/// `callTimeoutMs` of an MCP server: 300 s, clamped to 1–3,600 s.
pub const MCP_CALL_TIMEOUT_MS: Bounds = Bounds {
    default: 300_000,
    min: 1_000,
    max: 3_600_000,
};

/// `agent.maxCallsPerTurn`: tool calls run from one model answer, 64, clamped to 1–10,000.
pub const AGENT_MAX_CALLS_PER_TURN: Bounds = Bounds {
    default: 64,
    min: 1,
    max: 10_000,
};
/// `agent.maxRunResultBytes`: bytes of tool results (and call errors) sent back to the provider
/// over one run, 16 MiB, clamped to 64 KiB–1 GiB.
pub const AGENT_MAX_RUN_RESULT_BYTES: Bounds = Bounds {
    default: 16 << 20,
    min: 64 << 10,
    max: 1 << 30,
};
/// `agent.runTimeoutMs`: the whole run's wall-clock deadline, 30 min, clamped to 1 s–24 h.
pub const AGENT_RUN_TIMEOUT_MS: Bounds = Bounds {
    default: 1_800_000,
    min: 1_000,
    max: 86_400_000,
};

/// The agent loop's bounds on what a provider can make it do (`agent` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentLimits {
    /// Tool calls run from one model answer (`AGENT_MAX_CALLS_PER_TURN`).
    pub max_calls_per_turn: usize,
    /// Bytes of tool results sent back over a run (`AGENT_MAX_RUN_RESULT_BYTES`).
    pub max_run_result_bytes: u64,
    /// The whole run's deadline (`AGENT_RUN_TIMEOUT_MS`).
    pub run_timeout: Duration,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits {
            max_calls_per_turn: AGENT_MAX_CALLS_PER_TURN.default as usize,
            max_run_result_bytes: AGENT_MAX_RUN_RESULT_BYTES.default,
            run_timeout: Duration::from_millis(AGENT_RUN_TIMEOUT_MS.default),
        }
    }
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout. It gets only `env` (never the
    /// gateway's own environment).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment.
        env: std::collections::BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<std::path::PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// `http://` or `https://` URL of the MCP endpoint.
        url: String,
        /// Extra request headers (e.g. `Authorization`).
        headers: std::collections::BTreeMap<String, String>,
    },
}

/// Which tools of an MCP server need approval before they run (fail closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpApproval {
    /// Tools annotated `destructiveHint: true` without `readOnlyHint: true`.
    #[default]
    Destructive,
    /// Every tool.
    Always,
    /// None (the server is trusted to guard itself).
    Never,
}

/// How toolsearch opens its connection to an MCP server (which protocol revisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpProtocol {
    /// `initialize`: the revisions up to 2025-11-25, which every server speaks today; server
    /// requests, logging and resource subscriptions are relayed.
    #[default]
    Handshake,
    /// `server/discover` and the 2026-07-28 revision only (a server that speaks nothing else).
    Discover,
    /// The 2026-07-28 revision when the server offers it, else the handshake.
    Auto,
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name: the owner of its tools (`mcp:<name>:<tool>`).
    pub name: String,
    /// How it is reached.
    pub transport: McpTransport,
    /// How long it may take to start and list its tools.
    pub startup_timeout: Duration,
    /// How long one call may take (then `notifications/cancelled` is sent).
    pub call_timeout: Duration,
    /// Only tools whose names match one of these globs (all when `None`).
    pub enabled_tools: Option<Vec<String>>,
    /// Tools whose names match one of these globs are left out.
    pub disabled_tools: Vec<String>,
    /// Which of its tools need approval.
    pub approval: McpApproval,
    /// Whether a stdio server that dies is restarted (bounded exponential backoff).
    pub restart: bool,
    /// Which protocol revisions the connection is opened with.
    pub protocol: McpProtocol,
}

/// Hybrid search's settings (`tools.toolSearch.semantic`: `model`, `cacheDir`, `unverified`).
/// Paths are used as given (a relative one is relative to the working directory). The
/// command-line flags and environment variables take precedence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SemanticSettings {
    /// A sentence-transformers model directory; hybrid search is on when one is set.
    pub model: Option<std::path::PathBuf>,
    /// Where tool vectors are cached (default: the user's cache directory).
    pub cache_dir: Option<std::path::PathBuf>,
    /// Accept a model the manifest of known models does not know.
    pub unverified: bool,
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The profile whose defaults applied.
    pub profile: Profile,
    /// The mode requested (auto and code fallback are decided later, by the surface).
    pub mode: Mode,
    /// The mode `auto` defers to when the catalog is large.
    pub auto_deferred_mode: Mode,
    /// `auto` exposes schemas directly up to this many tools (32).
    pub auto_max_tools: usize,
    /// …and up to this many estimated schema tokens (12,000; tokens = ceil(bytes / 4)).
    pub auto_max_schema_tokens: usize,
    /// Wall-clock limit of one code cell (10 s; 1–60 s).
    pub code_timeout: Duration,
    /// Memory limit of the code isolate (64 MiB; 16 MiB–1 GiB).
    pub memory_limit_bytes: u64,
    /// Search limits (8/20; local 5/10).
    pub search_limits: SearchLimits,
    /// Directory style in directory mode.
    pub directory: DirectoryStyle,
    /// MCP servers whose tools join the catalog, sorted by name.
    pub mcp: Vec<McpServer>,
    /// Hybrid search's model and vector cache (`tools.toolSearch.semantic`).
    pub semantic: SemanticSettings,
    /// The agent loop's bounds (`agent`).
    pub agent: AgentLimits,
    /// Clamps applied, one sentence each.
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config::for_profile(Profile::Default)
    }
}

const TOP_KEYS: &str = "profile, tools, mcp, agent";
const AGENT_KEYS: &str = "maxCallsPerTurn, maxRunResultBytes, runTimeoutMs";
const MCP_KEYS: &str = "servers";
const MCP_SERVER_KEYS: &str = "command, args, env, cwd, url, headers, startupTimeoutMs, callTimeoutMs, enabledTools, disabledTools, approval, restart, protocol";
const TOOLS_KEYS: &str = "toolSearch";
const SEARCH_KEYS: &str = "mode, autoDeferredMode, autoMaxTools, autoMaxSchemaTokens, codeTimeoutMs, memoryLimitBytes, searchDefaultLimit, maxSearchLimit, directory, semantic";
const SEMANTIC_KEYS: &str = "model, cacheDir, unverified";

impl Config {
    /// The defaults of `profile`.
    pub fn for_profile(profile: Profile) -> Config {
        let (mode, limits) = match profile {
            Profile::Default => (Mode::Code, SearchLimits::default()),
            Profile::Local => (Mode::Tools, SearchLimits::local()),
        };
        Config {
            profile,
            mode,
            auto_deferred_mode: mode,
            auto_max_tools: AUTO_MAX_TOOLS.default as usize,
            auto_max_schema_tokens: AUTO_MAX_SCHEMA_TOKENS.default as usize,
            code_timeout: Duration::from_millis(CODE_TIMEOUT_MS.default),
            memory_limit_bytes: MEMORY_LIMIT_BYTES.default,
            search_limits: limits,
            directory: DirectoryStyle::List,
            mcp: Vec::new(),
            semantic: SemanticSettings::default(),
            agent: AgentLimits::default(),
            warnings: Vec::new(),
        }
    }

    /// Reads a JSON5 config file; `profile` (e.g. from `--profile`) overrides the file's.
    pub fn from_file(
        path: &std::path::Path,
        profile: Option<Profile>,
    ) -> Result<Config, ConfigError> {
        let text =
            input::read_text(path, input::MAX_CONFIG_BYTES, "config").map_err(|message| {
                ConfigError::File {
                    path: path.display().to_string(),
                    message,
                }
            })?;
        Config::parse(&text, profile)
    }

    /// Parses JSON5 text; `profile` (e.g. from `--profile`) overrides the text's.
    pub fn parse(text: &str, profile: Option<Profile>) -> Result<Config, ConfigError> {
        input::check_depth(text, input::MAX_DOCUMENT_DEPTH).map_err(ConfigError::Syntax)?;
        json5::from_str::<input::NoDuplicateKeys>(text)
            .map_err(|e| ConfigError::Syntax(e.to_string()))?;
        let value: Value = json5::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
        Config::from_value(&value, profile)
    }

    /// Resolves an already parsed document.
    pub fn from_value(value: &Value, profile: Option<Profile>) -> Result<Config, ConfigError> {
        let raw = Raw::read(value)?;
        Ok(raw.resolve(profile))
    }
}

/// Stage one: every key checked for existence and type; nothing defaulted or clamped yet.
#[derive(Debug, Default)]
struct Raw {
    profile: Option<Profile>,
    /// `Some(false)`: direct; `Some(true)`/object: enabled.
    enabled: Option<bool>,
    mode: Option<Mode>,
    auto_deferred_mode: Option<Mode>,
    auto_max_tools: Option<u64>,
    auto_max_schema_tokens: Option<u64>,
    code_timeout_ms: Option<u64>,
    memory_limit_bytes: Option<u64>,
    search_default_limit: Option<u64>,
    max_search_limit: Option<u64>,
    directory: Option<DirectoryStyle>,
    semantic: SemanticSettings,
    mcp: Vec<RawMcpServer>,
    agent_max_calls_per_turn: Option<u64>,
    agent_max_run_result_bytes: Option<u64>,
    agent_run_timeout_ms: Option<u64>,
}

/// An MCP server as written (timeouts not clamped yet).
#[derive(Debug)]
struct RawMcpServer {
    name: String,
    transport: McpTransport,
    startup_timeout_ms: Option<u64>,
    call_timeout_ms: Option<u64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Vec<String>,
    approval: McpApproval,
    restart: bool,
    protocol: McpProtocol,
}

fn string<'a>(value: &'a Value, key: &str, expected: &'static str) -> Result<&'a str, ConfigError> {
    value.as_str().ok_or_else(|| invalid(key, value, expected))
}

fn strings(value: &Value, key: &str) -> Result<Vec<String>, ConfigError> {
    const EXPECTED: &str = "an array of strings";
    let items = value
        .as_array()
        .ok_or_else(|| invalid(key, value, EXPECTED))?;
    items
        .iter()
        .map(|item| string(item, key, EXPECTED).map(str::to_string))
        .collect()
}

fn string_map(
    value: &Value,
    key: &str,
) -> Result<std::collections::BTreeMap<String, String>, ConfigError> {
    const EXPECTED: &str = "an object of string values";
    let map = object(value, key, EXPECTED)?;
    map.iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                string(v, &format!("{key}.{k}"), EXPECTED)?.to_string(),
            ))
        })
        .collect()
}

/// Whether `name` is a usable MCP server name: 1–64 of `[A-Za-z0-9_-]`.
fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn read_mcp_server(name: &str, value: &Value) -> Result<RawMcpServer, ConfigError> {
    let key = format!("mcp.servers.{name}");
    if !is_server_name(name) {
        return Err(invalid(
            &key,
            &Value::String(name.to_string()),
            "a server name of 1–64 letters, digits, '_' or '-'",
        ));
    }
    let fields = object(value, &key, "an object with command or url")?;
    let mut transport = RawTransport::default();
    let mut server = RawMcpServer {
        name: name.to_string(),
        transport: McpTransport::Stdio {
            command: String::new(),
            args: Vec::new(),
            env: Default::default(),
            cwd: None,
        },
        startup_timeout_ms: None,
        call_timeout_ms: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        approval: McpApproval::default(),
        restart: true,
        protocol: McpProtocol::default(),
    };
    for (field, value) in fields {
        let path = format!("{key}.{field}");
        if !transport.read(field, value, &path)? {
            server.read_setting(field, value, &path)?;
        }
    }
    server.transport = transport.into_transport(&key, value)?;
    Ok(server)
}

/// The transport keys of an MCP server, gathered before the transport is chosen.
#[derive(Default)]
struct RawTransport {
    command: Option<String>,
    args: Vec<String>,
    env: std::collections::BTreeMap<String, String>,
    cwd: Option<std::path::PathBuf>,
    url: Option<String>,
    headers: std::collections::BTreeMap<String, String>,
}

impl RawTransport {
    /// Reads `field` if it is a transport key; `Ok(false)` when it is not one.
    fn read(&mut self, field: &str, value: &Value, path: &str) -> Result<bool, ConfigError> {
        match field {
            "command" => {
                self.command = Some(string(value, path, "a program name or path")?.to_string())
            }
            "args" => self.args = strings(value, path)?,
            "env" => self.env = string_map(value, path)?,
            "cwd" => {
                self.cwd = Some(std::path::PathBuf::from(string(
                    value,
                    path,
                    "a directory",
                )?))
            }
            "url" => {
                let text = string(value, path, "an http:// or https:// URL")?;
                if !(text.starts_with("http://") || text.starts_with("https://")) {
                    return Err(invalid(path, value, "an http:// or https:// URL"));
                }
                self.url = Some(text.to_string());
            }
            "headers" => self.headers = string_map(value, path)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The stdio or HTTP transport the keys describe (`server` is the server's object).
    fn into_transport(self, key: &str, server: &Value) -> Result<McpTransport, ConfigError> {
        match (self.command, self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return Err(invalid(
                        &format!("{key}.headers"),
                        &Value::Null,
                        "headers only with url (an HTTP server)",
                    ));
                }
                Ok(McpTransport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                    cwd: self.cwd,
                })
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(invalid(
                        key,
                        server,
                        "args, env and cwd only with command (a stdio server)",
                    ));
                }
                Ok(McpTransport::Http {
                    url,
                    headers: self.headers,
                })
            }
            (Some(_), Some(_)) => Err(invalid(key, server, "either command or url, not both")),
            (None, None) => Err(invalid(key, server, "an object with command or url")),
        }
    }
}

impl RawMcpServer {
    /// Reads one of the server's non-transport keys (`path` is its dotted key).
    fn read_setting(&mut self, field: &str, value: &Value, path: &str) -> Result<(), ConfigError> {
        match field {
            "startupTimeoutMs" => {
                self.startup_timeout_ms = Some(integer(
                    value,
                    path,
                    "an integer number of milliseconds (100–600000, default 30000)",
                )?)
            }
            "callTimeoutMs" => {
                self.call_timeout_ms = Some(integer(
                    value,
                    path,
                    "an integer number of milliseconds (1000–3600000, default 300000)",
                )?)
            }
            "enabledTools" => self.enabled_tools = Some(strings(value, path)?),
            "disabledTools" => self.disabled_tools = strings(value, path)?,
            "approval" => {
                self.approval = match value.as_str() {
                    Some("destructive") => McpApproval::Destructive,
                    Some("always") => McpApproval::Always,
                    Some("never") => McpApproval::Never,
                    _ => {
                        return Err(invalid(
                            path,
                            value,
                            "\"destructive\", \"always\" or \"never\"",
                        ));
                    }
                }
            }
            "restart" => {
                self.restart = value
                    .as_bool()
                    .ok_or_else(|| invalid(path, value, "true or false"))?
            }
            "protocol" => {
                self.protocol = match value.as_str() {
                    Some("handshake") => McpProtocol::Handshake,
                    Some("2026-07-28") => McpProtocol::Discover,
                    Some("auto") => McpProtocol::Auto,
                    _ => {
                        return Err(invalid(
                            path,
                            value,
                            "\"handshake\", \"2026-07-28\" or \"auto\"",
                        ));
                    }
                }
            }
            _ => {
                return Err(ConfigError::UnknownKey {
                    key: path.to_string(),
                    accepted: MCP_SERVER_KEYS,
                });
            }
        }
        Ok(())
    }
}

fn object<'a>(
    value: &'a Value,
    key: &str,
    expected: &'static str,
) -> Result<&'a Map<String, Value>, ConfigError> {
    value
        .as_object()
        .ok_or_else(|| invalid(key, value, expected))
}

fn invalid(key: &str, got: &Value, expected: &'static str) -> ConfigError {
    let mut got = got.to_string();
    if got.chars().count() > 80 {
        got = format!("{}…", got.chars().take(79).collect::<String>());
    }
    ConfigError::Invalid {
        key: key.to_string(),
        got,
        expected,
    }
}

fn integer(value: &Value, key: &str, expected: &'static str) -> Result<u64, ConfigError> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e18)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| invalid(key, value, expected)),
        _ => Err(invalid(key, value, expected)),
    }
}

impl Raw {
    fn read(value: &Value) -> Result<Raw, ConfigError> {
        let root = object(value, "(root)", "an object with profile and tools")?;
        let mut raw = Raw::default();
        for (key, value) in root {
            match key.as_str() {
                "profile" => {
                    raw.profile =
                        Some(value.as_str().and_then(Profile::parse).ok_or_else(|| {
                            invalid("profile", value, "\"default\" or \"local\"")
                        })?);
                }
                "tools" => {
                    let tools = object(value, "tools", "an object with toolSearch")?;
                    for (key, value) in tools {
                        if key != "toolSearch" {
                            return Err(ConfigError::UnknownKey {
                                key: format!("tools.{key}"),
                                accepted: TOOLS_KEYS,
                            });
                        }
                        raw.read_tool_search(value)?;
                    }
                }
                "mcp" => {
                    let mcp = object(value, "mcp", "an object with servers")?;
                    for (key, value) in mcp {
                        if key != "servers" {
                            return Err(ConfigError::UnknownKey {
                                key: format!("mcp.{key}"),
                                accepted: MCP_KEYS,
                            });
                        }
                        let servers = object(value, "mcp.servers", "an object of named servers")?;
                        for (name, server) in servers {
                            raw.mcp.push(read_mcp_server(name, server)?);
                        }
                    }
                }
                "agent" => {
                    let agent = object(value, "agent", "an object of agent-loop bounds")?;
                    for (key, value) in agent {
                        let path = format!("agent.{key}");
                        let slot = match key.as_str() {
                            "maxCallsPerTurn" => &mut raw.agent_max_calls_per_turn,
                            "maxRunResultBytes" => &mut raw.agent_max_run_result_bytes,
                            "runTimeoutMs" => &mut raw.agent_run_timeout_ms,
                            _ => {
                                return Err(ConfigError::UnknownKey {
                                    key: path,
                                    accepted: AGENT_KEYS,
                                });
                            }
                        };
                        *slot = Some(integer(value, &path, "a non-negative integer")?);
                    }
                }
                other => {
                    return Err(ConfigError::UnknownKey {
                        key: other.to_string(),
                        accepted: TOP_KEYS,
                    });
                }
            }
        }
        raw.mcp.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(raw)
    }

    fn read_tool_search(&mut self, value: &Value) -> Result<(), ConfigError> {
        const KEY: &str = "tools.toolSearch";
        let settings = match value {
            Value::Bool(enabled) => {
                self.enabled = Some(*enabled);
                return Ok(());
            }
            Value::Object(settings) => settings,
            other => {
                return Err(invalid(KEY, other, "false, true, or an object of settings"));
            }
        };
        self.enabled = Some(true);
        for (key, value) in settings {
            self.read_search_setting(key, value, &format!("{KEY}.{key}"))?;
        }
        Ok(())
    }

    /// Reads one key of the `tools.toolSearch` object (`path` is its dotted key).
    fn read_search_setting(
        &mut self,
        key: &str,
        value: &Value,
        path: &str,
    ) -> Result<(), ConfigError> {
        match key {
            "mode" => {
                const EXPECTED: &str = "\"code\", \"tools\", \"directory\" or \"auto\" (use toolSearch: false for direct schemas)";
                self.mode = Some(
                    value
                        .as_str()
                        .and_then(Mode::parse)
                        .filter(|m| *m != Mode::Direct)
                        .ok_or_else(|| invalid(path, value, EXPECTED))?,
                );
            }
            "autoDeferredMode" => {
                self.auto_deferred_mode = Some(
                    value
                        .as_str()
                        .and_then(Mode::parse)
                        .filter(|m| matches!(m, Mode::Code | Mode::Tools | Mode::Directory))
                        .ok_or_else(|| {
                            invalid(path, value, "\"code\", \"tools\" or \"directory\"")
                        })?,
                );
            }
            "autoMaxTools" => {
                self.auto_max_tools = Some(integer(
                    value,
                    path,
                    "a non-negative integer (0–10000, default 32)",
                )?);
            }
            "autoMaxSchemaTokens" => {
                self.auto_max_schema_tokens = Some(integer(
                    value,
                    path,
                    "a non-negative integer (0–1000000, default 12000)",
                )?);
            }
            "codeTimeoutMs" => {
                self.code_timeout_ms = Some(integer(
                    value,
                    path,
                    "an integer number of milliseconds (1000–60000, default 10000)",
                )?);
            }
            "memoryLimitBytes" => {
                self.memory_limit_bytes = Some(integer(
                    value,
                    path,
                    "an integer number of bytes (16 MiB–1 GiB, default 64 MiB)",
                )?);
            }
            "searchDefaultLimit" => {
                self.search_default_limit = Some(integer(
                    value,
                    path,
                    "a positive integer (1–maxSearchLimit, default 8)",
                )?);
            }
            "maxSearchLimit" => {
                self.max_search_limit = Some(integer(
                    value,
                    path,
                    "a positive integer (1–50, default 20)",
                )?);
            }
            "directory" => {
                self.directory = Some(match value.as_str() {
                    Some("list") => DirectoryStyle::List,
                    Some("namespaces") => DirectoryStyle::Namespaces,
                    _ => return Err(invalid(path, value, "\"list\" or \"namespaces\"")),
                });
            }
            "semantic" => self.read_semantic(path, value)?,
            _ => {
                return Err(ConfigError::UnknownKey {
                    key: path.to_string(),
                    accepted: SEARCH_KEYS,
                });
            }
        }
        Ok(())
    }

    /// Reads `tools.toolSearch.semantic` (`path` is that dotted key).
    fn read_semantic(&mut self, path: &str, value: &Value) -> Result<(), ConfigError> {
        let Value::Object(semantic) = value else {
            return Err(invalid(
                path,
                value,
                "an object: {model, cacheDir?, unverified?}",
            ));
        };
        for (key, value) in semantic {
            let path = format!("{path}.{key}");
            let dir = |value: &Value| {
                value
                    .as_str()
                    .filter(|s| !s.trim().is_empty())
                    .map(std::path::PathBuf::from)
                    .ok_or_else(|| invalid(&path, value, "a directory path (a non-empty string)"))
            };
            match key.as_str() {
                "model" => self.semantic.model = Some(dir(value)?),
                "cacheDir" => self.semantic.cache_dir = Some(dir(value)?),
                "unverified" => {
                    self.semantic.unverified = value
                        .as_bool()
                        .ok_or_else(|| invalid(&path, value, "true or false"))?;
                }
                _ => {
                    return Err(ConfigError::UnknownKey {
                        key: path,
                        accepted: SEMANTIC_KEYS,
                    });
                }
            }
        }
        Ok(())
    }

    /// Stage two: profile defaults, explicit values over them, clamps.
    fn resolve(mut self, profile_override: Option<Profile>) -> Config {
        let profile = profile_override
            .or(self.profile)
            .unwrap_or(Profile::Default);
        let mut config = Config::for_profile(profile);
        let mut warnings = Vec::new();
        self.resolve_tool_search(&mut config, &mut warnings);
        config.semantic = std::mem::take(&mut self.semantic);
        for server in std::mem::take(&mut self.mcp) {
            config.mcp.push(server.resolve(&mut warnings));
        }
        self.resolve_agent(&mut config.agent, &mut warnings);
        config.warnings = warnings;
        config
    }

    /// Applies the `tools.toolSearch` settings (all but `semantic`) over the profile's defaults.
    fn resolve_tool_search(&self, config: &mut Config, warnings: &mut Vec<String>) {
        let mut clamp = |key: &str, value: u64, bounds: Bounds| {
            clamp_noted(warnings, &format!("tools.toolSearch.{key}"), value, bounds)
        };
        if self.enabled == Some(false) {
            config.mode = Mode::Direct;
        } else if let Some(mode) = self.mode {
            config.mode = mode;
        }
        if let Some(mode) = self.auto_deferred_mode {
            config.auto_deferred_mode = mode;
        } else if config.mode != Mode::Auto && config.mode != Mode::Direct {
            config.auto_deferred_mode = config.mode;
        }
        if let Some(v) = self.auto_max_tools {
            config.auto_max_tools = clamp("autoMaxTools", v, AUTO_MAX_TOOLS) as usize;
        }
        if let Some(v) = self.auto_max_schema_tokens {
            config.auto_max_schema_tokens =
                clamp("autoMaxSchemaTokens", v, AUTO_MAX_SCHEMA_TOKENS) as usize;
        }
        if let Some(v) = self.code_timeout_ms {
            config.code_timeout = Duration::from_millis(clamp("codeTimeoutMs", v, CODE_TIMEOUT_MS));
        }
        if let Some(v) = self.memory_limit_bytes {
            config.memory_limit_bytes = clamp("memoryLimitBytes", v, MEMORY_LIMIT_BYTES);
        }
        let max = match self.max_search_limit {
            Some(v) => clamp("maxSearchLimit", v, MAX_SEARCH_LIMIT) as usize,
            None => config.search_limits.max_limit(),
        };
        let default = match self.search_default_limit {
            Some(v) => clamp(
                "searchDefaultLimit",
                v,
                Bounds {
                    max: max as u64,
                    ..SEARCH_DEFAULT_LIMIT
                },
            ) as usize,
            None => config.search_limits.default_limit().min(max),
        };
        config.search_limits = SearchLimits::new(default, max);
        if let Some(directory) = self.directory {
            config.directory = directory;
        }
    }

    /// Applies the `agent` bounds over their defaults.
    fn resolve_agent(&self, agent: &mut AgentLimits, warnings: &mut Vec<String>) {
        let mut clamp = |key: &str, value: Option<u64>, bounds: Bounds| {
            value.map(|value| clamp_noted(warnings, &format!("agent.{key}"), value, bounds))
        };
        if let Some(v) = clamp(
            "maxCallsPerTurn",
            self.agent_max_calls_per_turn,
            AGENT_MAX_CALLS_PER_TURN,
        ) {
            agent.max_calls_per_turn = v as usize;
        }
        if let Some(v) = clamp(
            "maxRunResultBytes",
            self.agent_max_run_result_bytes,
            AGENT_MAX_RUN_RESULT_BYTES,
        ) {
            agent.max_run_result_bytes = v;
        }
        if let Some(v) = clamp(
            "runTimeoutMs",
            self.agent_run_timeout_ms,
            AGENT_RUN_TIMEOUT_MS,
        ) {
            agent.run_timeout = Duration::from_millis(v);
        }
    }
}

impl RawMcpServer {
    /// The server with its timeouts defaulted and clamped.
    fn resolve(self, warnings: &mut Vec<String>) -> McpServer {
        let key = |field: &str| format!("mcp.servers.{}.{field}", self.name);
        let startup = self
            .startup_timeout_ms
            .map(|v| {
                clamp_noted(
                    warnings,
                    &key("startupTimeoutMs"),
                    v,
                    MCP_STARTUP_TIMEOUT_MS,
                )
            })
            .unwrap_or(MCP_STARTUP_TIMEOUT_MS.default);
        let call = self
            .call_timeout_ms
            .map(|v| clamp_noted(warnings, &key("callTimeoutMs"), v, MCP_CALL_TIMEOUT_MS))
            .unwrap_or(MCP_CALL_TIMEOUT_MS.default);
        McpServer {
            name: self.name,
            transport: self.transport,
            startup_timeout: Duration::from_millis(startup),
            call_timeout: Duration::from_millis(call),
            enabled_tools: self.enabled_tools,
            disabled_tools: self.disabled_tools,
            approval: self.approval,
            restart: self.restart,
            protocol: self.protocol,
        }
    }
}

/// `value` clamped to `bounds`; a clamp is noted in `warnings` under the dotted `key`.
fn clamp_noted(warnings: &mut Vec<String>, key: &str, value: u64, bounds: Bounds) -> u64 {
    let clamped = bounds.clamp(value);
    if clamped != value {
        warnings.push(format!(
            "{key} {value} is outside {}–{}; using {clamped}",
            bounds.min, bounds.max
        ));
    }
    clamped
}

/// Bounds on the files the product reads (configs, policies, catalogs, query files, cell
/// sources) and on the nesting of the JSON and JSON5 documents in them, with the checks that
/// apply them. Every error names the bound and the input.
pub mod input {
    use std::collections::HashSet;
    use std::fmt;
    use std::io::Read;
    use std::path::Path;

    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    /// A config file, at most.
    pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
    /// A policy file, at most.
    pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;
    /// A catalog file, at most.
    pub const MAX_CATALOG_BYTES: u64 = 256 * 1024 * 1024;
    /// A query file (eval), at most.
    #[cfg(feature = "lab")]
    pub const MAX_QUERY_FILE_BYTES: u64 = 64 * 1024 * 1024;
    /// Nesting of arrays and objects in a config or policy document, at most.
    pub const MAX_DOCUMENT_DEPTH: usize = 64;
    /// A cell's source read from a file or stdin by `toolsearch exec`, at most (the sandbox's own
    /// per-cell bound, `Limits::code_bytes`, applies after it).
    pub const MAX_CELL_SOURCE_BYTES: u64 = 16 * 1024 * 1024;
    /// Nesting of arrays and objects in one argument of a sandbox bridge call
    /// (`openclaw.tools.call(id, args)`, a search query object), at most. Deeper arguments are
    /// refused to the guest (its promise rejects naming this bound; uncaught, the cell ends with
    /// the `argument_depth` limit); the worker goes on.
    pub const MAX_BRIDGE_ARGUMENT_DEPTH: usize = 64;
    /// Console lines kept per cell, at most (the byte bound is `Limits::log_bytes`). Lines beyond
    /// it are counted and reported by one marker line.
    pub const MAX_LOG_LINES: usize = 1_000;
    /// One JSON-RPC message read from an upstream MCP server or from a client of
    /// `toolsearch serve`, at most.
    pub const MAX_MCP_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
    /// Nesting of arrays and objects in one JSON-RPC message (upstream or client), at most.
    pub const MAX_MCP_MESSAGE_DEPTH: usize = 100;
    /// Characters of untrusted input (arguments, queries, ids, code) an error message echoes, at
    /// most; see [`echo`].
    pub const MAX_ECHO_CHARS: usize = 200;

    /// `text` as an error message may echo it. Displayed: whole when it has at most
    /// [`MAX_ECHO_CHARS`] characters, else its first [`MAX_ECHO_CHARS`] characters followed by
    /// `… (N bytes)`. Debug-formatted (`{:?}`): quoted and escaped like a `str`, and the bound
    /// counts the escaped characters, so text of control characters (each escaped to up to 10)
    /// stays as short.
    pub fn echo(text: &str) -> Echo<'_> {
        Echo(text)
    }

    /// Untrusted text bounded for an error message; see [`echo`].
    #[derive(Clone, Copy)]
    pub struct Echo<'a>(&'a str);

    impl std::fmt::Display for Echo<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self.0.char_indices().nth(MAX_ECHO_CHARS) {
                None => f.write_str(self.0),
                Some((end, _)) => write!(f, "{}… ({} bytes)", &self.0[..end], self.0.len()),
            }
        }
    }

    impl std::fmt::Debug for Echo<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("\"")?;
            let mut written = 0;
            let mut buffer = String::new();
            for c in self.0.chars() {
                buffer.clear();
                match c {
                    // A `str`'s Debug form leaves single quotes alone.
                    '\'' => buffer.push(c),
                    _ => buffer.extend(c.escape_debug()),
                }
                written += buffer.chars().count();
                if written > MAX_ECHO_CHARS {
                    return write!(f, "… ({} bytes)\"", self.0.len());
                }
                f.write_str(&buffer)?;
            }
            f.write_str("\"")
        }
    }

    /// How deep `json` (JSON text) nests arrays and objects, scanning at most until the depth
    /// passes `limit` (so the cost is bounded by the input, never by a recursion). Brackets
    /// inside strings do not count.
    pub fn json_depth_exceeds(json: &[u8], limit: usize) -> bool {
        let (mut depth, mut i) = (0usize, 0usize);
        while i < json.len() {
            match json[i] {
                b'"' => {
                    i += 1;
                    while i < json.len() && json[i] != b'"' {
                        i += if json[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > limit {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        false
    }

    /// Reads at most `limit` bytes of `path` (a file that never ends — `/dev/zero`, a FIFO —
    /// stops at the bound). `what` names the input in the error ("config", "catalog"…).
    pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, String> {
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {what} {}: {e}", path.display()))?;
        if bytes.len() as u64 > limit {
            return Err(format!(
                "{what} {} is larger than the limit of {limit} bytes",
                path.display()
            ));
        }
        Ok(bytes)
    }

    /// [`read_bounded`] as UTF-8 text.
    pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, String> {
        let bytes = read_bounded(path, limit, what)?;
        String::from_utf8(bytes).map_err(|e| {
            format!(
                "{what} {} is not UTF-8 (at byte {})",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })
    }

    /// Checks that `text` (JSON or JSON5) nests arrays and objects at most `limit` deep,
    /// before a recursive parser sees it. Brackets inside strings and comments do not count.
    pub fn check_depth(text: &str, limit: usize) -> Result<(), String> {
        let bytes = text.as_bytes();
        let (mut depth, mut i) = (0usize, 0usize);
        while i < bytes.len() {
            match bytes[i] {
                quote @ (b'"' | b'\'') => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != quote {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                        i += 1;
                    }
                    i += 1;
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > limit {
                        return Err(format!(
                            "nested deeper than the limit of {limit} levels of arrays and objects"
                        ));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        Ok(())
    }

    /// A document walked only to reject duplicate object keys ("last one wins" is never
    /// accepted: in a policy it could silently drop a `deny`).
    pub struct NoDuplicateKeys;

    impl<'de> Deserialize<'de> for NoDuplicateKeys {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(Walk {
                path: String::new(),
            })?;
            Ok(NoDuplicateKeys)
        }
    }

    struct Walk {
        path: String,
    }

    impl<'de> de::DeserializeSeed<'de> for Walk {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Walk {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
            if v.is_finite() {
                return Ok(());
            }
            let key = if self.path.is_empty() {
                "(root)"
            } else {
                &self.path
            };
            Err(E::custom(format!(
                "{key}: non-finite number {v} (Infinity and NaN are not allowed; write a finite \
                 number)"
            )))
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_none<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut index = 0usize;
            while seq
                .next_element_seed(Walk {
                    path: format!("{}[{index}]", self.path),
                })?
                .is_some()
            {
                index += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                let path = if self.path.is_empty() {
                    key.clone()
                } else {
                    format!("{}.{key}", self.path)
                };
                if !seen.insert(key) {
                    return Err(de::Error::custom(format!(
                        "duplicate key {path:?} (a key may appear once; nothing is overridden silently)"
                    )));
                }
                map.next_value_seed(Walk { path })?;
            }
            Ok(())
        }
    }
}
