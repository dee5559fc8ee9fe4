//! Configuration (SPEC R-10), in two stages: raw (JSON5 text → checked keys and types) →
//! resolved (profile defaults, explicit values over them, clamps).
//!
//! Shape: `{profile?: "default"|"local", tools?: {toolSearch?: false | true | {…}}}` where the
//! object takes `mode` ("code" | "tools" | "directory" | "auto"), `autoDeferredMode` ("code" |
//! "tools" | "directory"), `autoMaxTools` (32), `autoMaxSchemaTokens` (12,000),
//! `codeTimeoutMs` (10,000; 1,000–60,000), `memoryLimitBytes` (64 MiB; 16 MiB–1 GiB),
//! `searchDefaultLimit` (8; 1..maxSearchLimit), `maxSearchLimit` (20; 1–50) and `directory`
//! ("list" | "namespaces"). `false` means direct exposure; `true` means `{}`.
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
    #[error("unknown config key {key:?}; accepted keys here: {accepted}")]
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
    /// Clamps applied, one sentence each.
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config::for_profile(Profile::Default)
    }
}

const TOP_KEYS: &str = "profile, tools";
const TOOLS_KEYS: &str = "toolSearch";
const SEARCH_KEYS: &str = "mode, autoDeferredMode, autoMaxTools, autoMaxSchemaTokens, codeTimeoutMs, memoryLimitBytes, searchDefaultLimit, maxSearchLimit, directory";

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
            warnings: Vec::new(),
        }
    }

    /// Reads a JSON5 config file; `profile` (e.g. from `--profile`) overrides the file's.
    pub fn from_file(
        path: &std::path::Path,
        profile: Option<Profile>,
    ) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Config::parse(&text, profile)
    }

    /// Parses JSON5 text; `profile` (e.g. from `--profile`) overrides the text's.
    pub fn parse(text: &str, profile: Option<Profile>) -> Result<Config, ConfigError> {
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
                other => {
                    return Err(ConfigError::UnknownKey {
                        key: other.to_string(),
                        accepted: TOP_KEYS,
                    });
                }
            }
        }
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
            let path = format!("{KEY}.{key}");
            match key.as_str() {
                "mode" => {
                    self.mode = Some(
                        value
                            .as_str()
                            .and_then(Mode::parse)
                            .filter(|m| *m != Mode::Direct)
                            .ok_or_else(|| {
                                invalid(&path, value, "\"code\", \"tools\", \"directory\" or \"auto\" (use toolSearch: false for direct schemas)")
                            })?,
                    );
                }
                "autoDeferredMode" => {
                    self.auto_deferred_mode = Some(
                        value
                            .as_str()
                            .and_then(Mode::parse)
                            .filter(|m| matches!(m, Mode::Code | Mode::Tools | Mode::Directory))
                            .ok_or_else(|| {
                                invalid(&path, value, "\"code\", \"tools\" or \"directory\"")
                            })?,
                    );
                }
                "autoMaxTools" => {
                    self.auto_max_tools = Some(integer(
                        value,
                        &path,
                        "a non-negative integer (0–10000, default 32)",
                    )?);
                }
                "autoMaxSchemaTokens" => {
                    self.auto_max_schema_tokens = Some(integer(
                        value,
                        &path,
                        "a non-negative integer (0–1000000, default 12000)",
                    )?);
                }
                "codeTimeoutMs" => {
                    self.code_timeout_ms = Some(integer(
                        value,
                        &path,
                        "an integer number of milliseconds (1000–60000, default 10000)",
                    )?);
                }
                "memoryLimitBytes" => {
                    self.memory_limit_bytes = Some(integer(
                        value,
                        &path,
                        "an integer number of bytes (16 MiB–1 GiB, default 64 MiB)",
                    )?);
                }
                "searchDefaultLimit" => {
                    self.search_default_limit = Some(integer(
                        value,
                        &path,
                        "a positive integer (1–maxSearchLimit, default 8)",
                    )?);
                }
                "maxSearchLimit" => {
                    self.max_search_limit = Some(integer(
                        value,
                        &path,
                        "a positive integer (1–50, default 20)",
                    )?);
                }
                "directory" => {
                    self.directory = Some(match value.as_str() {
                        Some("list") => DirectoryStyle::List,
                        Some("namespaces") => DirectoryStyle::Namespaces,
                        _ => return Err(invalid(&path, value, "\"list\" or \"namespaces\"")),
                    });
                }
                other => {
                    return Err(ConfigError::UnknownKey {
                        key: format!("{KEY}.{other}"),
                        accepted: SEARCH_KEYS,
                    });
                }
            }
        }
        Ok(())
    }

    /// Stage two: profile defaults, explicit values over them, clamps.
    fn resolve(self, profile_override: Option<Profile>) -> Config {
        let profile = profile_override
            .or(self.profile)
            .unwrap_or(Profile::Default);
        let mut config = Config::for_profile(profile);
        let mut warnings = Vec::new();
        let mut clamp = |key: &str, value: u64, bounds: Bounds| {
            let clamped = bounds.clamp(value);
            if clamped != value {
                warnings.push(format!(
                    "tools.toolSearch.{key} {value} is outside {}–{}; using {clamped}",
                    bounds.min, bounds.max
                ));
            }
            clamped
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
        config.warnings = warnings;
        config
    }
}
