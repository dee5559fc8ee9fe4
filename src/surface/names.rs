//! Provider tool names (SPEC ): every declared or hydratable tool gets a name valid for
//! the provider (`^[a-zA-Z0-9_-]{1,64}$`, OpenAI and Anthropic alike) and unique in the run.
//!
//! A tool keeps its own name when that name is valid and unique (and not a control name);
//! otherwise it gets `owner__name` with every other character replaced by `_`, and when that is
//! still invalid, too long or taken, it is cut and suffixed with a short stable hash of the id.
//! Assignment is deterministic: tools are named in id order, so the same catalog always yields
//! the same names. The reverse map is what dispatch and hydration use.

use std::collections::{HashMap, HashSet};

use crate::catalog::Descriptor;

/// Longest provider tool name.
pub const MAX_NAME_LEN: usize = 64;

/// Names reserved for the controls.
pub const CONTROL_NAMES: [&str; 4] = [
    "tool_search",
    "tool_describe",
    "tool_call",
    "tool_search_code",
];

/// Whether `name` satisfies `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn hashed(base: &str, id: &str, salt: u32) -> String {
    let hash = xxhash_rust::xxh3::xxh3_64(format!("{id}\u{0}{salt}").as_bytes());
    let suffix = format!("_{:08x}", hash as u32);
    let keep = MAX_NAME_LEN - suffix.len();
    let mut cut: String = base.chars().take(keep).collect();
    while cut.len() > keep {
        cut.pop();
    }
    cut.push_str(&suffix);
    cut
}

/// Provider names for a set of tools, with the reverse map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderNames {
    by_id: HashMap<String, String>,
    by_name: HashMap<String, String>,
}

impl ProviderNames {
    /// Names `tools` (any order; assignment is by id).
    pub fn assign<'a>(tools: impl IntoIterator<Item = &'a Descriptor>) -> ProviderNames {
        let mut tools: Vec<&Descriptor> = tools.into_iter().collect();
        tools.sort_by(|a, b| a.id.cmp(&b.id));
        let mut plain_count: HashMap<&str, usize> = HashMap::new();
        for tool in &tools {
            *plain_count.entry(tool.name.as_str()).or_default() += 1;
        }
        let mut taken: HashSet<String> = CONTROL_NAMES.iter().map(|s| s.to_string()).collect();
        let mut names = ProviderNames::default();
        // Tools whose own name is valid and unique keep it; they are named first so that a
        // renamed tool can never take a plain name away from another.
        for tool in &tools {
            let name = tool.name.as_str();
            if is_valid_provider_name(name)
                && plain_count.get(name) == Some(&1)
                && !taken.contains(name)
            {
                taken.insert(name.to_string());
                names.insert(&tool.id, name.to_string());
            }
        }
        for tool in &tools {
            if names.by_id.contains_key(&tool.id) {
                continue;
            }
            let base = sanitize(&format!("{}__{}", tool.owner, tool.name));
            let mut candidate = base.clone();
            let mut salt = 0;
            while !is_valid_provider_name(&candidate) || taken.contains(&candidate) {
                candidate = hashed(&base, &tool.id, salt);
                salt += 1;
            }
            taken.insert(candidate.clone());
            names.insert(&tool.id, candidate);
        }
        names
    }

    fn insert(&mut self, id: &str, name: String) {
        self.by_name.insert(name.clone(), id.to_string());
        self.by_id.insert(id.to_string(), name);
    }

    /// The provider name of tool `id`.
    pub fn name_of(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    /// The tool id behind a provider name.
    pub fn id_of(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }

    /// How many tools are named.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no tool is named.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}
