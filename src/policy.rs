//! Fail-closed tool policy (SPEC R-2) and the authorized view of a snapshot.
//!
//! Owns:
//! - [`Policy`]: layered allow/deny globs for `agent`, `profile`, `sandbox` and `session`
//!   (R-2.1, file shape ). A tool is allowed iff every layer that has `allow` matches it (an
//!   empty `allow` allows nothing) and no `deny` of any layer matches it. Globs match every key
//!   of [`Descriptor::match_keys`] — the id, the name, the external id, and for an MCP tool whose
//!   upstream name had to be escaped also its raw `mcp:<server>:<raw name>` form and the raw name
//!   (so `mcp:evil:a b` or a non-ASCII name matches the tool it names); `*` and `?` cross `:`.
//! - [`Authorized`]: a snapshot seen through a policy — the only way search, describe, the
//!   directory and the gateway enumerate tools, so a denied tool is invisible everywhere and
//!   never counted. It also keeps the exact keys of the denied tools
//!   ([`Authorized::names_denied`], [`Authorized::names_denied_pair`]) so that resolution can
//!   refuse a selector naming a denied tool instead of falling back to another tool (an exact
//!   id that is denied is an error, never a case-insensitive match of a different tool).
//!
//! Invariants: an unparsable policy is an error, never "allow all"; the policy fingerprint
//! depends only on its rules, so indexes can be cached per (snapshot, policy).

use std::fmt;
use std::sync::Arc;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::catalog::{CatalogSnapshot, Descriptor};

/// The policy layers of, in the order they are listed in a policy file.
pub const LAYERS: [&str; 4] = ["agent", "profile", "sandbox", "session"];

/// A policy that cannot be used; says which key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The document is not a JSON object.
    #[error("policy must be a JSON object with any of the layers agent, profile, sandbox, session")]
    NotAnObject,
    /// A top-level key is not a layer.
    #[error("unknown policy layer {0:?}: expected one of agent, profile, sandbox, session")]
    UnknownLayer(String),
    /// A layer has the wrong shape or an unknown key.
    #[error("policy layer {layer:?}: {message}")]
    BadLayer {
        /// The layer name.
        layer: String,
        /// What is wrong.
        message: String,
    },
    /// A glob does not compile.
    #[error("policy layer {layer:?}: invalid glob {glob:?}: {message}")]
    BadGlob {
        /// The layer name.
        layer: String,
        /// The glob as written.
        glob: String,
        /// Why it does not compile.
        message: String,
    },
    /// The policy file could not be read or parsed.
    #[error("cannot load policy {path}: {message}")]
    File {
        /// The path as given.
        path: String,
        /// Why.
        message: String,
    },
}

#[derive(Debug, Clone)]
struct Layer {
    name: &'static str,
    /// `None`: no allow-list in this layer. `Some(empty set)`: allows nothing.
    allow: Option<GlobSet>,
    deny: GlobSet,
}

/// Layered allow/deny rules. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Policy {
    layers: Arc<Vec<Layer>>,
    fingerprint: u64,
    /// The canonical source, for display and hashing.
    canonical: Arc<str>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::allow_all()
    }
}

impl Policy {
    /// The policy with no rules: everything in the snapshot is allowed.
    pub fn allow_all() -> Policy {
        Policy {
            layers: Arc::new(Vec::new()),
            fingerprint: 0,
            canonical: Arc::from("{}"),
        }
    }

    /// Parses the shape: `{"agent"|"profile"|"sandbox"|"session": {"allow"?: [globs],
    /// "deny"?: [globs]}}`.
    pub fn from_json(value: &Value) -> Result<Policy, PolicyError> {
        let Value::Object(map) = value else {
            return Err(PolicyError::NotAnObject);
        };
        for key in map.keys() {
            if !LAYERS.contains(&key.as_str()) {
                return Err(PolicyError::UnknownLayer(key.clone()));
            }
        }
        let mut layers = Vec::new();
        let mut canonical = serde_json::Map::new();
        for name in LAYERS {
            let Some(layer) = map.get(name) else {
                continue;
            };
            let Value::Object(layer_map) = layer else {
                return Err(PolicyError::BadLayer {
                    layer: name.to_string(),
                    message: "expected an object with \"allow\" and/or \"deny\" arrays".into(),
                });
            };
            for key in layer_map.keys() {
                if key != "allow" && key != "deny" {
                    return Err(PolicyError::BadLayer {
                        layer: name.to_string(),
                        message: format!("unknown key {key:?}: expected \"allow\" or \"deny\""),
                    });
                }
            }
            let allow = match layer_map.get("allow") {
                None => None,
                Some(list) => Some(glob_list(name, "allow", list)?),
            };
            let deny = match layer_map.get("deny") {
                None => Vec::new(),
                Some(list) => glob_list(name, "deny", list)?,
            };
            let mut canonical_layer = serde_json::Map::new();
            if let Some(allow) = &allow {
                canonical_layer.insert("allow".into(), Value::from(allow.clone()));
            }
            canonical_layer.insert("deny".into(), Value::from(deny.clone()));
            canonical.insert(name.to_string(), Value::Object(canonical_layer));
            layers.push(Layer {
                name,
                allow: allow.map(|globs| compile(name, &globs)).transpose()?,
                deny: compile(name, &deny)?,
            });
        }
        let canonical = Value::Object(canonical).to_string();
        let fingerprint = if layers.is_empty() {
            0
        } else {
            xxhash_rust::xxh3::xxh3_64(canonical.as_bytes()) | 1
        };
        Ok(Policy {
            layers: Arc::new(layers),
            fingerprint,
            canonical: Arc::from(canonical),
        })
    }

    /// Reads a policy file (JSON).
    pub fn from_file(path: &std::path::Path) -> Result<Policy, PolicyError> {
        use crate::config::input;
        let file_error = |message: String| PolicyError::File {
            path: path.display().to_string(),
            message,
        };
        let text = input::read_text(path, input::MAX_POLICY_BYTES, "policy").map_err(file_error)?;
        Policy::parse_text(&text, &path.display().to_string())
    }

    /// Parses a policy document's text (JSON: nesting bounded, duplicate keys rejected); `path`
    /// names it in errors.
    pub(crate) fn parse_text(text: &str, path: &str) -> Result<Policy, PolicyError> {
        use crate::config::input;
        let file_error = |message: String| PolicyError::File {
            path: path.to_string(),
            message,
        };
        input::check_depth(text, input::MAX_DOCUMENT_DEPTH).map_err(file_error)?;
        serde_json::from_str::<input::NoDuplicateKeys>(text)
            .map_err(|e| file_error(format!("not accepted: {e}")))?;
        let value: Value =
            serde_json::from_str(text).map_err(|e| file_error(format!("not valid JSON: {e}")))?;
        Policy::from_json(&value)
    }

    /// Adds a deny rule to the `session` layer (used by callers that narrow a run).
    pub fn with_session_deny(&self, globs: &[&str]) -> Result<Policy, PolicyError> {
        let mut value: Value =
            serde_json::from_str(&self.canonical).unwrap_or(Value::Object(Default::default()));
        if let Value::Object(map) = &mut value {
            let session = map
                .entry("session")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(session) = session {
                let deny = session
                    .entry("deny")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = deny {
                    list.extend(globs.iter().map(|g| Value::from(*g)));
                }
            }
        }
        Policy::from_json(&value)
    }

    /// Whether `tool` is allowed. Deny wins; every allow-list must match. A glob
    /// matches when it matches any of the tool's [`Descriptor::match_keys`].
    pub fn allows(&self, tool: &Descriptor) -> bool {
        if self.layers.is_empty() {
            return true;
        }
        let keys: Vec<&str> = tool.match_keys().collect();
        self.allows_keys(&keys)
    }

    /// Whether something that is not a tool, known by `keys`, is allowed by the rule tools
    /// follow: an MCP resource by `mcp:<server>:<uri>` and its URI, a resource template by
    /// `mcp:<server>:<uriTemplate>` and the template, a prompt by `mcp:<server>:<name>` and its
    /// name (so `mcp:<server>:*` denies a server's tools, resources and prompts alike).
    pub fn allows_keys(&self, keys: &[&str]) -> bool {
        self.layers.iter().all(|layer| {
            let matches = |set: &GlobSet| keys.iter().any(|key| set.is_match(key));
            !matches(&layer.deny) && layer.allow.as_ref().is_none_or(matches)
        })
    }

    /// Whether the policy has no rule at all.
    pub fn is_allow_all(&self) -> bool {
        self.layers.is_empty()
    }

    /// The canonical document (what the fingerprint hashes); the fuzz target re-parses it.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn canonical(&self) -> &str {
        &self.canonical
    }

    /// A fingerprint of the rules (0 for allow-all).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The names of the layers that have rules.
    pub fn layer_names(&self) -> Vec<&'static str> {
        self.layers.iter().map(|l| l.name).collect()
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

fn glob_list(layer: &str, key: &str, list: &Value) -> Result<Vec<String>, PolicyError> {
    let Value::Array(items) = list else {
        return Err(PolicyError::BadLayer {
            layer: layer.to_string(),
            message: format!("\"{key}\" must be an array of glob strings"),
        });
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(glob) => Ok(glob.clone()),
            other => Err(PolicyError::BadLayer {
                layer: layer.to_string(),
                message: format!("\"{key}\" entries must be strings, got {other}"),
            }),
        })
        .collect()
}

fn compile(layer: &str, globs: &[String]) -> Result<GlobSet, PolicyError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(build_glob(glob).map_err(|e| PolicyError::BadGlob {
            layer: layer.to_string(),
            glob: glob.clone(),
            message: e.kind().to_string(),
        })?);
    }
    builder.build().map_err(|e| PolicyError::BadGlob {
        layer: layer.to_string(),
        glob: e.glob().unwrap_or_default().to_string(),
        message: e.kind().to_string(),
    })
}

fn build_glob(glob: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
}

/// A snapshot seen through a policy: the allowed catalog-mode tools (in id order) and the
/// allowed direct-only tools. Everything user-visible enumerates tools through this.
#[derive(Clone)]
pub struct Authorized {
    snapshot: CatalogSnapshot,
    policy: Policy,
    allowed: Arc<[u32]>,
    allowed_direct: Arc<[u32]>,
    denied: Arc<DeniedKeys>,
}

/// The exact keys of the denied tools (catalog-mode and direct-only): what a selector may not
/// name without being refused. Empty when nothing is denied.
#[derive(Debug, Default)]
struct DeniedKeys {
    /// Ids, names, external ids and raw names of denied tools (case-sensitive).
    exact: std::collections::HashSet<String>,
    /// `owner` + NUL + `name` of denied tools (the lenient `owner.name` forms).
    pairs: std::collections::HashSet<String>,
}

impl DeniedKeys {
    fn add(&mut self, tool: &Descriptor) {
        for key in tool.match_keys() {
            self.exact.insert(key.to_string());
        }
        self.pairs.insert(pair_key(&tool.owner, &tool.name));
    }
}

fn pair_key(owner: &str, name: &str) -> String {
    let mut key = String::with_capacity(owner.len() + name.len() + 1);
    key.push_str(owner);
    key.push('\u{0}');
    key.push_str(name);
    key
}

impl fmt::Debug for Authorized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorized")
            .field("snapshot", &self.snapshot)
            .field("allowed", &self.allowed.len())
            .finish()
    }
}

impl Authorized {
    /// Applies `policy` to `snapshot`.
    pub fn new(snapshot: CatalogSnapshot, policy: Policy) -> Authorized {
        let mut denied = DeniedKeys::default();
        // The positions in `tools` that the policy allows; the denied tools are noted.
        let mut allowed_in = |tools: &[Descriptor]| -> Vec<u32> {
            tools
                .iter()
                .enumerate()
                .filter(|(_, d)| {
                    let allowed = policy.allows(d);
                    if !allowed {
                        denied.add(d);
                    }
                    allowed
                })
                .map(|(i, _)| i as u32)
                .collect()
        };
        let allowed = allowed_in(snapshot.tools());
        let allowed_direct = allowed_in(snapshot.direct_only());
        Authorized {
            snapshot,
            policy,
            allowed: allowed.into(),
            allowed_direct: allowed_direct.into(),
            denied: Arc::new(denied),
        }
    }

    /// The underlying snapshot (includes denied tools: do not enumerate it for users).
    pub fn snapshot(&self) -> &CatalogSnapshot {
        &self.snapshot
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Snapshot positions of allowed catalog-mode tools, in id order.
    pub fn allowed_positions(&self) -> &[u32] {
        &self.allowed
    }

    /// Allowed catalog-mode tools, in id order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Descriptor> + '_ {
        self.allowed
            .iter()
            .map(move |&i| &self.snapshot.tools()[i as usize])
    }

    /// Allowed direct-only tools, in id order.
    pub fn direct_only(&self) -> impl ExactSizeIterator<Item = &Descriptor> + '_ {
        let direct = self.snapshot.direct_only();
        self.allowed_direct
            .iter()
            .map(move |&i| &direct[i as usize])
    }

    /// Number of allowed catalog-mode tools.
    pub fn len(&self) -> usize {
        self.allowed.len()
    }

    /// Whether no catalog-mode tool is allowed.
    pub fn is_empty(&self) -> bool {
        self.allowed.is_empty()
    }

    /// The allowed catalog-mode tool at `position` in view order (the search index's positions).
    pub fn at(&self, position: u32) -> Option<&Descriptor> {
        let snapshot_position = *self.allowed.get(position as usize)?;
        self.snapshot.tool(snapshot_position)
    }

    /// The allowed catalog-mode tool with exactly this id.
    pub fn get(&self, id: &str) -> Option<&Descriptor> {
        let position = self.snapshot.position(id)?;
        self.allowed
            .binary_search(&position)
            .ok()
            .and_then(|_| self.snapshot.tool(position))
    }

    /// The allowed direct-only tool with exactly this id or name.
    pub fn get_direct(&self, selector: &str) -> Option<&Descriptor> {
        self.direct_only()
            .find(|d| d.id == selector || d.name == selector)
    }

    /// Whether `selector` is exactly (case-sensitively) a key of a denied tool — its id, name,
    /// external id or raw upstream name. Resolution stops there: it never falls back to a more
    /// lenient match of another tool.
    pub fn names_denied(&self, selector: &str) -> bool {
        !self.denied.exact.is_empty() && self.denied.exact.contains(selector)
    }

    /// Whether `owner` and `name` are exactly a denied tool's owner and name (the lenient
    /// `owner.name`, `owner__name`, `owner:name` forms).
    pub fn names_denied_pair(&self, owner: &str, name: &str) -> bool {
        !self.denied.pairs.is_empty() && self.denied.pairs.contains(&pair_key(owner, name))
    }

    /// The cache key of indexes built for this view.
    pub fn cache_key(&self) -> (crate::catalog::Fingerprint, u64) {
        (self.snapshot.fingerprint(), self.policy.fingerprint())
    }
}
