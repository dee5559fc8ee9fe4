//! Exact names: the rule in front of the ranker that a query which *is* a tool's name returns
//! that tool first, in whichever form a model copied the name (R-3.6, extended).
//!
//! A tool's keys are its id, name, external id and raw upstream name (the keys a policy glob is
//! matched against, [`Descriptor::match_keys`]), plus the provider-safe (sanitised) form of each
//! (every character outside `[A-Za-z0-9_-]` read as `_`, as provider tool names are written).
//! A query names a tool in one of four forms, tried all at once:
//!
//! 1. [`Form::Id`]: the trimmed query is the tool's id, case-sensitive;
//! 2. [`Form::Given`]: it is another key, case-sensitive (`calculate_BMI` before `calculate_bmi`);
//! 3. [`Form::Folded`]: it equals a key ignoring case;
//! 4. [`Form::Spaced`]: it equals a key once both are [`spaced`] — `_`, `-`, `.`, `/`, `:` and
//!    runs of whitespace read as one separator, case ignored (`Google Maps - Geocoding` is
//!    `Google_Maps_-_Geocoding`);
//! 5. [`Form::Words`]: as 4, with camelCase also split into words ([`words`]: `npm versions` is
//!    `npmVersions`, `http response` is `HTTPResponse`).
//!
//! Every tool named in any form comes first, the closer forms before the looser ones and, within
//! a form, in the ranker's order ([`SearchIndex::ranking`](super::SearchIndex::ranking)). Only
//! allowed tools are filed (the index holds nothing else), so a denied tool is never found this
//! way and a denied name answers exactly like a name that does not exist.
//!
//! Never does: scoring, policy, or fuzzy matching (a misspelled name is the ranker's business).

use std::collections::HashMap;

use crate::catalog::Descriptor;

/// How closely a query names a tool; smaller is closer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Form {
    /// The tool's id, exactly.
    Id = 0,
    /// Another key, exactly.
    Given = 1,
    /// A key, ignoring case.
    Folded = 2,
    /// A key with separators read as spaces, ignoring case.
    Spaced = 3,
    /// A key with separators read as spaces and camelCase split, ignoring case.
    Words = 4,
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '_' | '-' | '.' | '/' | ':')
}

/// The spaced form of a name or query: lowercased, `_ - . / :` and whitespace read as one
/// separator, trimmed. Empty when nothing but separators is left.
pub fn spaced(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(is_separator).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The words of a name or query: [`spaced`], with camelCase split first — a word starts at an
/// upper-case letter after a lower-case letter or digit (`npmVersions`, `base64Encode`), and at
/// the last capital of a run followed by a lower-case letter (`HTTPResponse`).
pub fn words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut split = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let before = chars[i - 1];
            let after = chars.get(i + 1).copied();
            let boundary = before.is_lowercase()
                || before.is_numeric()
                || (before.is_uppercase() && after.is_some_and(char::is_lowercase));
            if boundary {
                split.push(' ');
            }
        }
        split.push(c);
    }
    spaced(&split)
}

/// A key as a provider tool name would carry it: characters outside `[A-Za-z0-9_-]` as `_`.
fn sanitised(key: &str) -> Option<String> {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!key.chars().all(keep)).then(|| key.chars().map(|c| if keep(c) { c } else { '_' }).collect())
}

/// The exact-name maps of one index (positions in view order, each list ascending).
#[derive(Debug, Default)]
pub(crate) struct ExactKeys {
    /// Id → position (case-sensitive).
    id: HashMap<String, u32>,
    /// Every other key as given (case-sensitive) → positions.
    given: HashMap<String, Vec<u32>>,
    /// Lowercased id, name and external id → positions (describe's view, [`ExactKeys::folded`]).
    folded: HashMap<String, Vec<u32>>,
    /// Lowercased raw upstream names and sanitised keys not among a tool's folded keys.
    other: HashMap<String, Vec<u32>>,
    /// Spaced form of every key → positions.
    spaced: HashMap<String, Vec<u32>>,
    /// Words of every key whose words differ from its spaced form → positions.
    words: HashMap<String, Vec<u32>>,
}

fn file(map: &mut HashMap<String, Vec<u32>>, forms: &mut Vec<String>, position: u32) {
    forms.sort_unstable();
    forms.dedup();
    for form in forms.drain(..) {
        if !form.is_empty() {
            map.entry(form).or_default().push(position);
        }
    }
}

impl ExactKeys {
    /// The keys of `tools`, the allowed tools in view order.
    pub(crate) fn build<'a>(tools: impl ExactSizeIterator<Item = &'a Descriptor>) -> ExactKeys {
        let documents = tools.len();
        let mut keys = ExactKeys {
            id: HashMap::with_capacity(documents),
            given: HashMap::with_capacity(documents * 2),
            folded: HashMap::with_capacity(documents * 2),
            other: HashMap::new(),
            spaced: HashMap::with_capacity(documents * 2),
            words: HashMap::with_capacity(documents * 2),
        };
        let (mut given, mut folded, mut other) = (Vec::new(), Vec::new(), Vec::new());
        let (mut spaced_forms, mut word_forms) = (Vec::new(), Vec::new());
        for (position, tool) in tools.enumerate() {
            let position = position as u32;
            keys.id.insert(tool.id.clone(), position);
            folded.push(tool.id.to_lowercase());
            folded.push(tool.name.to_lowercase());
            if let Some(external) = &tool.external_id {
                folded.push(external.to_lowercase());
            }
            for key in tool.match_keys() {
                let safe = sanitised(key);
                for key in std::iter::once(key).chain(safe.as_deref()) {
                    if key != tool.id {
                        given.push(key.to_string());
                    }
                    let lower = key.to_lowercase();
                    if !folded.contains(&lower) {
                        other.push(lower);
                    }
                    // A key without camelCase is filed once: a query's words are looked up
                    // among the spaced forms too.
                    let (spaced_key, word_key) = (spaced(key), words(key));
                    if word_key != spaced_key {
                        word_forms.push(word_key);
                    }
                    spaced_forms.push(spaced_key);
                }
            }
            file(&mut keys.given, &mut given, position);
            file(&mut keys.folded, &mut folded, position);
            file(&mut keys.other, &mut other, position);
            file(&mut keys.spaced, &mut spaced_forms, position);
            file(&mut keys.words, &mut word_forms, position);
        }
        keys
    }

    /// Position of the tool with exactly this id.
    pub(crate) fn id(&self, id: &str) -> Option<u32> {
        self.id.get(id).copied()
    }

    /// Positions whose id, name or external id equals `key` ignoring case (describe's view).
    pub(crate) fn folded(&self, key: &str) -> &[u32] {
        self.folded
            .get(&key.to_lowercase())
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The tools a trimmed query names, each with the closest form it is named in, sorted by
    /// position. Empty when the query names no tool.
    pub(crate) fn named(&self, query: &str) -> Vec<(u32, Form)> {
        let mut out: Vec<(u32, Form)> = Vec::new();
        if query.is_empty() {
            return out;
        }
        if let Some(&position) = self.id.get(query) {
            out.push((position, Form::Id));
        }
        let mut add = |positions: Option<&Vec<u32>>, form: Form| {
            for &position in positions.into_iter().flatten() {
                out.push((position, form));
            }
        };
        add(self.given.get(query), Form::Given);
        let lower = query.to_lowercase();
        add(self.folded.get(&lower), Form::Folded);
        add(self.other.get(&lower), Form::Folded);
        let spaced_query = spaced(query);
        if !spaced_query.is_empty() {
            add(self.spaced.get(&spaced_query), Form::Spaced);
            add(self.words.get(&spaced_query), Form::Words);
            // Without a capital there is no camelCase: the words are the spaced form.
            let word_query = if query.chars().any(char::is_uppercase) {
                words(query)
            } else {
                spaced_query.clone()
            };
            if word_query != spaced_query {
                add(self.spaced.get(&word_query), Form::Words);
                add(self.words.get(&word_query), Form::Words);
            }
        }
        // One entry per tool, its closest form.
        out.sort_unstable();
        out.dedup_by_key(|(position, _)| *position);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{ExactKeys, Form, spaced, words};
    use crate::catalog::{Descriptor, Source};

    #[test]
    fn spaced_forms_read_separators_as_one_space() {
        assert_eq!(spaced("Google_Maps_-_Geocoding"), "google maps geocoding");
        assert_eq!(spaced("Google Maps - Geocoding"), "google maps geocoding");
        assert_eq!(spaced("  create__issue  "), "create issue");
        assert_eq!(
            spaced("mcp:github:list/pull.requests"),
            "mcp github list pull requests"
        );
        assert_eq!(spaced("_-./:"), "");
        assert_eq!(spaced("npmVersions"), "npmversions");
    }

    #[test]
    fn words_split_camel_case() {
        assert_eq!(words("npmVersions"), "npm versions");
        assert_eq!(words("HTTPResponse"), "http response");
        assert_eq!(words("getHTTPResponseCode"), "get http response code");
        assert_eq!(words("base64Encode"), "base64 encode");
        assert_eq!(words("sha256"), "sha256");
        assert_eq!(words("GitHub_Create-Issue"), "git hub create issue");
        assert_eq!(words("ALLCAPS"), "allcaps");
        assert_eq!(words("Éclair Été"), "éclair été");
    }

    fn tools() -> Vec<Descriptor> {
        vec![
            Descriptor::new(Source::Plugin, "gh", "create_issue"),
            Descriptor::new(Source::Plugin, "jira", "Create-Issue"),
            Descriptor::new(Source::Plugin, "npm", "npmVersions"),
            Descriptor::new(Source::Plugin, "w", "weather (city)"),
        ]
    }

    #[test]
    fn a_query_names_tools_in_the_closest_form() {
        let tools = tools();
        let keys = ExactKeys::build(tools.iter());
        let cases: &[(&str, &[(u32, Form)])] = &[
            ("plugin:gh:create_issue", &[(0, Form::Id)]),
            ("CREATE_ISSUE", &[(0, Form::Folded), (1, Form::Spaced)]),
            ("create_issue", &[(0, Form::Given), (1, Form::Spaced)]),
            ("create issue", &[(0, Form::Spaced), (1, Form::Spaced)]),
            ("create-issue", &[(0, Form::Spaced), (1, Form::Folded)]),
            ("Create-Issue", &[(0, Form::Spaced), (1, Form::Given)]),
            ("npm versions", &[(2, Form::Words)]),
            ("NPMVERSIONS", &[(2, Form::Folded)]),
            ("Npm Versions", &[(2, Form::Words)]),
            ("weather__city_", &[(3, Form::Given)]),
            ("WEATHER__CITY_", &[(3, Form::Folded)]),
            ("gh create issue", &[]),
            ("plugin gh create issue", &[(0, Form::Spaced)]),
            ("create", &[]),
            ("", &[]),
            (" - ", &[]),
        ];
        for &(query, named) in cases {
            assert_eq!(keys.named(query), named, "{query:?}");
        }
    }
}
