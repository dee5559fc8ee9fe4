//! The index's terms within edit distance 1 of a word, by symmetric deletion: every term and
//! every form of it with one character deleted is filed under its hash; a word's candidates
//! are the terms filed under the word or one of its one-deletion forms, kept when their
//! restricted Damerau–Levenshtein (OSA) distance is exactly 1.
//!
//! Owns: [`DeletionIndex`], built once per search index from its term dictionary (on the
//! first word that needs it) and immutable after.
//! Never does: distance 2 (its deletion sets grow with the square of a word's length; the
//! index keeps tantivy's Levenshtein automaton for that rarer pass), or decide which words are
//! fuzzed or how candidates weigh (the index does).
//! Invariants: complete for distance 1 — a substitution deletes the same position on both
//! sides, an insertion or deletion deletes one side's extra character, a transposition `ab` →
//! `ba` deletes `a` on both — so it finds exactly the terms the automaton finds at distance 1
//! (a unit test compares the two over real vocabularies). A hash collision only adds a
//! candidate that the distance check then drops.
//! Bounds: terms and words of 3 to [`MAX_TERM_BYTES`] bytes; a word past that is left to the
//! caller's automaton.

/// Longest term (and word) this index files, in bytes; longer ones are left to the automaton.
pub const MAX_TERM_BYTES: usize = 48;
/// Shortest term filed, in characters (shorter candidates are never wanted).
pub const MIN_TERM_CHARS: usize = 3;

/// Terms filed under the hashes of themselves and their one-deletion forms.
#[derive(Debug, Default)]
pub struct DeletionIndex {
    /// (term, documents containing it over all segments), in dictionary order.
    terms: Vec<(Box<str>, u64)>,
    /// Hash of a form, ascending; `ids[i]` is the term filed under `keys[i]`.
    keys: Vec<u64>,
    ids: Vec<u32>,
}

fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Calls `each` with `word` and every form of it with one character deleted (each distinct
/// form once when the word has runs of a repeated character: deleting any of a run gives the
/// same form).
fn forms(word: &str, mut each: impl FnMut(&[u8])) {
    let bytes = word.as_bytes();
    each(bytes);
    let mut buffer = [0u8; MAX_TERM_BYTES];
    let mut previous: Option<char> = None;
    for (at, c) in word.char_indices() {
        if previous == Some(c) {
            continue;
        }
        previous = Some(c);
        let end = at + c.len_utf8();
        let len = bytes.len() - c.len_utf8();
        buffer[..at].copy_from_slice(&bytes[..at]);
        buffer[at..len].copy_from_slice(&bytes[end..]);
        each(&buffer[..len]);
    }
}

fn fileable(term: &str) -> bool {
    term.len() <= MAX_TERM_BYTES && term.chars().nth(MIN_TERM_CHARS - 1).is_some()
}

impl DeletionIndex {
    /// Files `terms` ((term, document frequency), each term once).
    pub fn build(terms: impl IntoIterator<Item = (String, u64)>) -> DeletionIndex {
        let terms: Vec<(Box<str>, u64)> = terms
            .into_iter()
            .filter(|(term, _)| fileable(term))
            .map(|(term, freq)| (term.into_boxed_str(), freq))
            .collect();
        let mut filed: Vec<(u64, u32)> = Vec::with_capacity(terms.len() * 9);
        for (id, (term, _)) in terms.iter().enumerate() {
            forms(term, |form| filed.push((hash(form), id as u32)));
        }
        filed.sort_unstable();
        filed.dedup();
        let (keys, ids) = filed.into_iter().unzip();
        DeletionIndex { terms, keys, ids }
    }

    /// Terms filed.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether `word` can be looked up here (else the caller uses the automaton).
    pub fn covers(word: &str) -> bool {
        word.len() <= MAX_TERM_BYTES
    }

    /// Calls `each(term, doc_freq)` for every filed term at OSA distance exactly 1 from
    /// `word` (each once). `seen` is scratch space.
    pub fn within_one(&self, word: &str, seen: &mut Vec<u32>, mut each: impl FnMut(&str, u64)) {
        seen.clear();
        if !Self::covers(word) || word.is_empty() {
            return;
        }
        forms(word, |form| {
            let key = hash(form);
            let start = self.keys.partition_point(|k| *k < key);
            for (&k, &id) in self.keys[start..].iter().zip(&self.ids[start..]) {
                if k != key {
                    break;
                }
                if !seen.contains(&id) {
                    seen.push(id);
                }
            }
        });
        for &id in seen.iter() {
            let (term, freq) = &self.terms[id as usize];
            if strsim::osa_distance(word, term) == 1 {
                each(term, *freq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(index: &DeletionIndex, word: &str) -> Vec<String> {
        let mut out = Vec::new();
        index.within_one(word, &mut Vec::new(), |t, _| out.push(t.to_string()));
        out.sort();
        out
    }

    #[test]
    fn every_kind_of_single_edit_is_found_and_nothing_else() {
        let terms = [
            "calendar",
            "calendars",
            "issue",
            "create",
            "email",
            "search",
            "ab",
            "été",
        ];
        let index =
            DeletionIndex::build(terms.iter().map(|t| (t.to_string(), 1)).collect::<Vec<_>>());
        assert_eq!(index.len(), 7, "terms under 3 characters are not filed");
        assert_eq!(found(&index, "calender"), ["calendar"]); // substitution
        assert_eq!(found(&index, "calendr"), ["calendar"]); // deletion
        assert_eq!(found(&index, "calendarr"), ["calendar", "calendars"]); // insertion
        assert_eq!(found(&index, "craete"), ["create"]); // transposition
        assert_eq!(found(&index, "isue"), ["issue"]);
        assert_eq!(found(&index, "emial"), ["email"]);
        assert_eq!(found(&index, "serach"), ["search"]);
        assert!(found(&index, "ete").is_empty(), "two substitutions");
        assert_eq!(found(&index, "éte"), ["été"]); // a multi-byte character substituted
        assert!(found(&index, "calendar").contains(&"calendars".to_string()));
        assert!(!found(&index, "calendar").contains(&"calendar".to_string()));
        assert_eq!(found(&index, "xyzzy"), Vec::<String>::new());
    }
}
