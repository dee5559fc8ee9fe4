//! The bilingual capability lexicon: Chinese, German, French and Indonesian words of tool
//! catalogs mapped to the English terms catalogs use (create, list, file, issue, …).
//!
//! Owns:
//! - The data: `lexicon/{zh,de,fr,id}.tsv`, embedded with `include_str!`, parsed once. A line is
//!   `foreign words<TAB>english words`; the first English word is the main sense. `-` instead
//!   of English marks a function word (article, preposition, pronoun, politeness word) that is
//!   dropped from a query once the query is seen to be in that language. `#` starts a comment;
//!   several keys may share a line, separated by `|`; a key starting with `=` is matched only
//!   as written (no stem), for words whose stem is another word's (`memperbarui` → baru).
//! - Lookup of one Latin-script word: its accent-folded form, then its Snowball stem in each
//!   language (German, French, Indonesian — so `erstellt`, `erstellen`, `erstelle` and `créez`,
//!   `créer`, `creer` and `membuat`, `buat` find one entry); multi-word keys (`base de données`,
//!   `mettre à jour`, `pull request`); German compounds split into two or three known parts
//!   (`Kalendereintrag` → Kalender + Eintrag).
//! - Lookup in a run of Chinese characters by forward longest match over the Chinese keys.
//!
//! Never does: decide weights or tiers (the query analyzer does), or touch documents — only
//! queries are translated, so a catalog's statistics never depend on this file.
//! Bounds: keys up to 3 words or 8 Chinese characters; at most 3 English words per entry.

use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use std::sync::OnceLock;

use frostem::{Algorithm, Stemmer};

/// A language of the lexicon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// Chinese (simplified and common traditional forms).
    Zh,
    /// German.
    De,
    /// French.
    Fr,
    /// Indonesian.
    Id,
}

impl Lang {
    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::De => "de",
            Lang::Fr => "fr",
            Lang::Id => "id",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Lang::Zh => 1,
            Lang::De => 2,
            Lang::Fr => 4,
            Lang::Id => 8,
        }
    }
}

/// A set of languages, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Langs(u8);

impl Langs {
    /// Adds `lang`.
    pub fn insert(&mut self, lang: Lang) {
        self.0 |= lang.bit();
    }

    /// Whether `lang` is in the set.
    pub fn contains(self, lang: Lang) -> bool {
        self.0 & lang.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// One lexicon line.
#[derive(Debug)]
pub struct Entry {
    /// Its language.
    pub lang: Lang,
    /// The English words (lowercase), main sense first; empty for a function word.
    pub english: Vec<String>,
    /// The key is an English word too (marked `~`, or spelled like one of its English words):
    /// translated only when another word shows the query is in this language, and never
    /// evidence of the language itself.
    pub ambiguous: bool,
    /// The key is spelled like one of its English words (`status`, `issue`): a word matching
    /// it stays a literal English word.
    pub identity: bool,
}

impl Entry {
    /// Whether this is a function word (dropped from queries in its language).
    pub fn is_stop(&self) -> bool {
        self.english.is_empty()
    }
}

/// Most English words kept per entry.
pub const MAX_ENGLISH_PER_ENTRY: usize = 3;
/// Longest multi-word key, in words.
pub const MAX_PHRASE_WORDS: usize = 3;
/// Longest Chinese key, in characters.
pub const MAX_ZH_CHARS: usize = 8;
/// Shortest Snowball stem used as a lookup key (shorter stems collide too easily).
const MIN_STEM_CHARS: usize = 3;
/// Most characters a German or French stem may drop from a query word.
const MAX_SUFFIX_CHARS: usize = 3;

const LATIN: [(Lang, Algorithm); 3] = [
    (Lang::De, Algorithm::German),
    (Lang::Fr, Algorithm::French),
    (Lang::Id, Algorithm::Indonesian),
];

/// The parsed lexicon.
pub struct Lexicon {
    entries: Vec<Entry>,
    /// Per Latin language (de, fr, id): folded key → entries.
    words: [HashMap<String, Vec<u32>>; 3],
    /// Every folded one-word key of any Latin language and every first word of a multi-word
    /// key, with what `words` and `phrase_starts` say of it: one lookup per query word instead
    /// of one per language (the query path looks up every word of every query).
    exact: HashMap<String, Exact>,
    /// [`Lexicon::prefixes`] as one map: a prefix → the Latin languages (bit per slot) with a
    /// key form starting with it.
    prefix_slots: HashMap<String, u8>,
    /// Per Latin language: folded Snowball stem of a key → entries. Kept apart from `words`
    /// so that a stem spelled like an English word (`finden` → find) matches only a word
    /// looked up by its stem, never that English word as written.
    stems: [HashMap<String, Vec<u32>>; 3],
    /// Folded multi-word keys (words joined by one space) → entries.
    phrases: HashMap<String, Vec<u32>>,
    /// The folded first word of every multi-word key (most words start none).
    phrase_starts: FxHashSet<String>,
    /// Chinese keys → entries.
    zh: HashMap<String, Vec<u32>>,
    stemmers: [Stemmer; 3],
    /// Per Latin language: the first [`PREFIX_CHARS`] characters of every key form. A word
    /// none of whose possible stems can start like a key is not stemmed at all.
    prefixes: [FxHashSet<String>; 3],
    /// The first [`PREFIX_CHARS`] characters of every German key and key stem of at least 3
    /// bytes: a compound's first part starts the word, so a word whose start is not here does
    /// not split (one lookup instead of one per split point).
    german_starts: FxHashSet<String>,
}

/// Every Latin language's bit in [`Exact::slots`].
const ALL_SLOTS: u8 = (1 << LATIN.len()) - 1;

/// What the lexicon knows of one folded word (see [`Lexicon::exact`]).
#[derive(Debug, Default)]
struct Exact {
    /// The Latin languages (bit per slot of `LATIN`) that have it as a one-word key.
    slots: u8,
    /// Its entries over those languages, in slot order, each once.
    ids: Vec<u32>,
    /// Whether a multi-word key starts with it.
    phrase_start: bool,
}

/// Characters of a key form's prefix in [`Lexicon::prefixes`].
const PREFIX_CHARS: usize = 3;

/// Indonesian prefixes the Snowball stemmer removes (a word starting with one is stemmed even
/// when its own start matches no key).
const INDONESIAN_PREFIXES: [&str; 7] = ["me", "pe", "di", "te", "ke", "be", "se"];

fn prefix(word: &str) -> &str {
    match word.char_indices().nth(PREFIX_CHARS) {
        Some((at, _)) => &word[..at],
        None => word,
    }
}

impl std::fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lexicon")
            .field("entries", &self.entries.len())
            .finish()
    }
}

const SOURCES: [(Lang, &str); 4] = [
    (Lang::Zh, include_str!("lexicon/zh.tsv")),
    (Lang::De, include_str!("lexicon/de.tsv")),
    (Lang::Fr, include_str!("lexicon/fr.tsv")),
    (Lang::Id, include_str!("lexicon/id.tsv")),
];

/// The lexicon, parsed on first use.
pub fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(Lexicon::parse_embedded)
}

/// Lowercases and strips Latin diacritics (`é` → e, `ö` → o, `ß` → ss, `œ` → oe) into `out`.
pub fn fold_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
        return;
    }
    for c in word.chars().flat_map(char::to_lowercase) {
        match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => out.push('a'),
            'ç' | 'č' | 'ć' => out.push('c'),
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' => out.push('e'),
            'ì' | 'í' | 'î' | 'ï' | 'ī' => out.push('i'),
            'ñ' | 'ń' => out.push('n'),
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => out.push('o'),
            'ù' | 'ú' | 'û' | 'ü' | 'ū' => out.push('u'),
            'ý' | 'ÿ' => out.push('y'),
            'ß' => out.push_str("ss"),
            'œ' => out.push_str("oe"),
            'æ' => out.push_str("ae"),
            '’' | '\'' => {}
            other => out.push(other),
        }
    }
}

/// [`fold_into`] into a new string.
pub fn fold(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    fold_into(word, &mut out);
    out
}

/// Whether `c` is a Chinese (Han) character.
pub fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF)
}

impl Lexicon {
    fn parse_embedded() -> Lexicon {
        let mut lexicon = Lexicon {
            entries: Vec::new(),
            words: [HashMap::default(), HashMap::default(), HashMap::default()],
            exact: HashMap::default(),
            prefix_slots: HashMap::default(),
            stems: [HashMap::default(), HashMap::default(), HashMap::default()],
            phrases: HashMap::default(),
            phrase_starts: Default::default(),
            zh: HashMap::default(),
            stemmers: LATIN.map(|(_, algorithm)| Stemmer::new(algorithm)),
            prefixes: Default::default(),
            german_starts: Default::default(),
        };
        for (lang, text) in SOURCES {
            lexicon.add_source(lang, text);
        }
        for slot in 0..LATIN.len() {
            let prefixes: FxHashSet<String> = lexicon.stems[slot]
                .keys()
                .map(|form| prefix(form).to_string())
                .collect();
            lexicon.prefixes[slot] = prefixes;
        }
        for slot in 0..LATIN.len() {
            for (key, ids) in &lexicon.words[slot] {
                let exact = lexicon.exact.entry(key.clone()).or_default();
                exact.slots |= 1 << slot;
                push_new(&mut exact.ids, 0, ids);
            }
            for form in &lexicon.prefixes[slot] {
                *lexicon.prefix_slots.entry(form.clone()).or_default() |= 1 << slot;
            }
        }
        for first in &lexicon.phrase_starts {
            lexicon.exact.entry(first.clone()).or_default().phrase_start = true;
        }
        let german_starts = lexicon.words[0]
            .keys()
            .chain(lexicon.stems[0].keys())
            .filter(|key| key.len() >= 3)
            .map(|key| prefix(key).to_string())
            .collect();
        lexicon.german_starts = german_starts;
        lexicon
    }

    fn add_source(&mut self, lang: Lang, text: &str) {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim_end();
            let Some((keys, english)) = line.split_once('\t') else {
                continue;
            };
            let english: Vec<String> = if english.trim() == "-" {
                Vec::new()
            } else {
                english
                    .split_whitespace()
                    .take(MAX_ENGLISH_PER_ENTRY)
                    .map(str::to_lowercase)
                    .collect()
            };
            // Several keys may share a line, separated by `|`.
            for key in keys.split('|') {
                let key = key.trim();
                let (key, marked) = match key.strip_prefix('~') {
                    Some(rest) => (rest, true),
                    None => (key, false),
                };
                let (key, exact) = match key.strip_prefix('=') {
                    Some(rest) => (rest, true),
                    None => (key, false),
                };
                if key.is_empty() {
                    continue;
                }
                let id = self.entries.len() as u32;
                // Spelled like an English sense, or an inflection of one (`images`).
                let folded_key = fold(key);
                let key_stem = super::stem::stem(&folded_key);
                let spelled_like_english = english
                    .iter()
                    .any(|e| fold(e) == folded_key || super::stem::stem(e) == key_stem)
                    || fold(&english.join(" ")) == folded_key;
                self.entries.push(Entry {
                    lang,
                    english: english.clone(),
                    ambiguous: marked || spelled_like_english,
                    identity: spelled_like_english,
                });
                self.add_key(lang, key, exact, id);
            }
        }
    }

    fn add_key(&mut self, lang: Lang, key: &str, exact: bool, id: u32) {
        if lang == Lang::Zh {
            let key: String = key.chars().filter(|c| !c.is_whitespace()).collect();
            if key.chars().count() <= MAX_ZH_CHARS {
                self.zh.entry(key).or_default().push(id);
            }
            return;
        }
        let words: Vec<String> = key
            .split(|c: char| !(c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(fold)
            .collect();
        match words.len() {
            0 => {}
            1 => {
                let slot = LATIN.iter().position(|(l, _)| *l == lang).unwrap_or(0);
                let ids = self.words[slot].entry(words[0].clone()).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
                let lower = key.to_lowercase();
                let sources: &[&str] = if exact {
                    &[]
                } else {
                    &[lower.as_str(), words[0].as_str()]
                };
                let mut forms: Vec<String> = Vec::new();
                for source in sources {
                    let stem = fold(&self.stemmers[slot].stem(source));
                    if stem.chars().count() >= MIN_STEM_CHARS && !forms.contains(&stem) {
                        forms.push(stem);
                    }
                }
                for form in forms {
                    let ids = self.stems[slot].entry(form).or_default();
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            n if n <= MAX_PHRASE_WORDS => {
                self.phrase_starts.insert(words[0].clone());
                self.phrases.entry(words.join(" ")).or_default().push(id);
            }
            _ => {}
        }
    }

    /// The entry with this id.
    pub fn entry(&self, id: u32) -> Option<&Entry> {
        self.entries.get(id as usize)
    }

    /// Entries for one lowercase Latin-script word, in any of de, fr, id: its folded form, then
    /// (when `stems`) its stem per language. `folded` is scratch space.
    pub fn word(&self, word: &str, stems: bool, folded: &mut String, out: &mut Vec<u32>) {
        let start = out.len();
        fold_into(word, folded);
        let exact = self.exact.get(folded.as_str());
        let in_slots = exact.map_or(0, |e| e.slots);
        if !stems || in_slots == ALL_SLOTS {
            if let Some(exact) = exact {
                push_new(out, start, &exact.ids);
            }
            return;
        }
        // Per language in slot order, as the entries of each are pushed: its key, else a stem.
        let prefix_slots = self.prefix_slots.get(prefix(folded)).copied().unwrap_or(0);
        for (slot, map) in self.words.iter().enumerate() {
            if in_slots & (1 << slot) != 0 {
                if let Some(ids) = map.get(folded.as_str()) {
                    push_new(out, start, ids);
                }
                continue;
            }
            // Suffix-stripping stemmers keep the word's start; Indonesian also strips prefixes.
            let may_match = prefix_slots & (1 << slot) != 0
                || (LATIN[slot].0 == Lang::Id
                    && INDONESIAN_PREFIXES.iter().any(|p| folded.starts_with(p)));
            if !may_match {
                continue;
            }
            let stems = &self.stems[slot];
            // German and French endings are short: a stem that drops more than
            // `MAX_SUFFIX_CHARS` is an English derivation (consult-ants, manag-ement), not an
            // inflection. Indonesian affixes are longer (mem-buat-kan).
            let word_chars = word.chars().count();
            let plausible = |stem: &str| {
                let chars = stem.chars().count();
                chars >= MIN_STEM_CHARS
                    && (LATIN[slot].0 == Lang::Id
                        || word_chars - chars.min(word_chars) <= MAX_SUFFIX_CHARS)
            };
            let stem = fold(&self.stemmers[slot].stem(word));
            if plausible(&stem)
                && let Some(ids) = stems.get(stem.as_str())
            {
                push_new(out, start, ids);
                continue;
            }
            if folded.as_str() != word {
                let stem = fold(&self.stemmers[slot].stem(folded));
                if plausible(&stem)
                    && let Some(ids) = stems.get(stem.as_str())
                {
                    push_new(out, start, ids);
                }
            }
        }
    }

    /// Whether a Snowball stem of this folded word could be a key form (a cheap test before
    /// stemming: suffix-stripping stemmers keep a word's start; Indonesian also strips
    /// prefixes).
    pub fn may_stem_match(&self, folded: &str) -> bool {
        // Indonesian (one of the Latin languages) also strips prefixes.
        self.prefix_slots.contains_key(prefix(folded))
            || INDONESIAN_PREFIXES.iter().any(|p| folded.starts_with(p))
    }

    /// Whether some multi-word key starts with this (lowercase) word.
    pub fn starts_phrase(&self, word: &str, folded: &mut String) -> bool {
        fold_into(word, folded);
        self.exact
            .get(folded.as_str())
            .is_some_and(|e| e.phrase_start)
    }

    /// Entries of a multi-word key (lowercase words), if any.
    pub fn phrase(&self, words: &[&str]) -> &[u32] {
        let Some(first) = words.first() else {
            return &[];
        };
        if !self.phrase_starts.contains(fold(first).as_str()) {
            return &[];
        }
        let mut key = String::new();
        let mut folded = String::new();
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                key.push(' ');
            }
            fold_into(word, &mut folded);
            key.push_str(&folded);
        }
        self.phrases.get(&key).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Splits a German compound into 2–3 known parts (with the linking `s`, `es`, `n`, `en`
    /// or `e` allowed after a part) and returns the parts' entries; empty when it does not
    /// split.
    pub fn german_compound(&self, word: &str, out: &mut Vec<u32>) {
        let folded = fold(word);
        if folded.chars().count() < 7 || !folded.is_ascii() {
            return;
        }
        // Every part found is at least 3 bytes, so the first part starts with a known start.
        if !self.german_starts.contains(prefix(&folded)) {
            return;
        }
        let start = out.len();
        if !self.split_compound(&folded, 0, out) {
            out.truncate(start);
        }
    }

    fn german_part(&self, part: &str, out: &mut Vec<u32>) -> bool {
        if part.len() < 3 {
            return false;
        }
        // Keys, then stems of keys, with a plural or genitive ending tried off (no stemmer
        // here: this runs for every split point of a long word).
        for map in [&self.words[0], &self.stems[0]] {
            for ending in ["", "s", "n", "en", "e", "es", "er"] {
                let Some(base) = part.strip_suffix(ending) else {
                    continue;
                };
                if base.len() >= 3
                    && let Some(ids) = map.get(base)
                {
                    out.extend_from_slice(ids);
                    return true;
                }
            }
        }
        false
    }

    fn split_compound(&self, word: &str, depth: usize, out: &mut Vec<u32>) -> bool {
        // Prefer the longest head (the last part carries the meaning in German compounds).
        for split in 3..=word.len().saturating_sub(3) {
            let (head_part, tail) = word.split_at(split);
            let mark = out.len();
            if !self.german_part(tail, out) {
                continue;
            }
            let tail_ids = out.split_off(mark);
            let mut found = false;
            for link in ["", "s", "es", "n", "en", "e"] {
                let Some(modifier) = head_part.strip_suffix(link) else {
                    continue;
                };
                if self.german_part(modifier, out)
                    || (depth == 0 && self.split_compound(modifier, 1, out))
                {
                    found = true;
                    break;
                }
            }
            if found {
                out.extend_from_slice(&tail_ids);
                return true;
            }
        }
        false
    }

    /// Calls `emit` with the entries of each Chinese key found in `run` by forward longest
    /// match (characters no key starts with are skipped).
    pub fn chinese(&self, run: &str, mut emit: impl FnMut(&[u32])) {
        let chars: Vec<(usize, char)> = run.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let mut matched = 0;
            for len in (1..=MAX_ZH_CHARS.min(chars.len() - i)).rev() {
                let start = chars[i].0;
                let end = chars.get(i + len).map_or(run.len(), |&(b, _)| b);
                if let Some(ids) = self.zh.get(&run[start..end]) {
                    emit(ids);
                    matched = len;
                    break;
                }
            }
            i += matched.max(1);
        }
    }

    /// The entries of exactly this Chinese key.
    pub fn chinese_key(&self, word: &str) -> &[u32] {
        self.zh.get(word).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every Chinese key (the segmenter's dictionary).
    pub fn chinese_words(&self) -> impl Iterator<Item = &str> {
        self.zh.keys().map(String::as_str)
    }
}

fn push_new(out: &mut Vec<u32>, start: usize, ids: &[u32]) {
    for &id in ids {
        if !out[start..].contains(&id) {
            out.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn english(ids: &[u32]) -> Vec<String> {
        let lexicon = lexicon();
        let mut out: Vec<String> = ids
            .iter()
            .filter_map(|&id| lexicon.entry(id))
            .flat_map(|e| e.english.iter().cloned())
            .collect();
        out.dedup();
        out
    }

    fn word(w: &str) -> Vec<String> {
        let mut ids = Vec::new();
        lexicon().word(w, true, &mut String::new(), &mut ids);
        english(&ids)
    }

    #[test]
    fn inflections_and_missing_accents_find_one_entry() {
        for w in ["erstellen", "erstelle", "erstellt"] {
            assert_eq!(word(w).first().map(String::as_str), Some("create"), "{w}");
        }
        for w in ["créer", "creer", "créez"] {
            assert_eq!(word(w).first().map(String::as_str), Some("create"), "{w}");
        }
        for w in ["löschen", "loschen"] {
            assert_eq!(word(w).first().map(String::as_str), Some("delete"), "{w}");
        }
        for w in ["membuat", "buat", "dibuat"] {
            assert_eq!(word(w).first().map(String::as_str), Some("create"), "{w}");
        }
    }

    #[test]
    fn phrases_compounds_and_chinese() {
        let lexicon = lexicon();
        assert_eq!(
            english(lexicon.phrase(&["base", "de", "données"])),
            ["database"]
        );
        let mut ids = Vec::new();
        lexicon.german_compound("kalendereintrag", &mut ids);
        let words = english(&ids);
        assert!(words.contains(&"calendar".to_string()), "{words:?}");
        let mut found = Vec::new();
        lexicon.chinese("创建问题", |ids| found.extend(english(ids)));
        assert!(found.contains(&"create".to_string()), "{found:?}");
        assert!(found.contains(&"issue".to_string()), "{found:?}");
    }

    #[test]
    fn folding_strips_diacritics() {
        assert_eq!(fold("Événement"), "evenement");
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("tâche"), "tache");
    }
}
