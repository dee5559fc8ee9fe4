//! The text analyzer shared by indexing and queries (SPEC ).
//!
//! Order matters and is the same for documents and queries:
//! 1. split on anything that is not a letter, digit or `_` (Unicode letters kept);
//! 2. per word: the whole word lowercased, plus — when it has two or more — its compound parts
//!    (split on `_` and on case changes, acronyms kept whole: `getURLs` → get, urls);
//! 3. drop the 59 stop words of R-3.3 (before stemming, so "its" never becomes "it");
//! 4. stem with the light suffix stripper of; a word ending in `-ies` yields both readings
//!    (`policies` → policy, polici) so whichever form the catalog uses matches.
//!
//! Queries also get intent expansion: trigger words add generic capability terms at
//! weight 0.35; a term the caller typed keeps weight 1. Triggers are matched on a singularized
//! word, not the stem, so "news" never fires on "new".
//!
//! [`ToolTokenizer`] runs steps 1–4 as a tantivy tokenizer registered under [`ANALYZER_NAME`];
//! [`query_terms`] runs the same functions, so both sides always agree.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use super::lexicon::{Entry, Lang, Langs, Lexicon, MAX_PHRASE_WORDS, is_han, lexicon};
use super::stem::{char_len, for_each_stem_in, stem};

/// The name the analyzer is registered under in the index's tokenizer manager.
pub const ANALYZER_NAME: &str = "toolsearch";

/// Weight of a term added by intent expansion; literal terms weigh 1.
pub const EXPANSION_WEIGHT: f32 = 0.35;

/// Tokens longer than this many bytes are dropped (they only ever match themselves, and the
/// exact-match path already finds a query equal to a whole name or id).
const MAX_TOKEN_BYTES: usize = 96;

/// Whether `word` (lowercase) is one of the 59 stop words of. Capability verbs such as
/// "get" are deliberately absent.
pub fn is_stop_word(word: &str) -> bool {
    // A match compiles to a length switch plus short compares: this runs for every word of
    // every document and query.
    matches!(
        word,
        "a" | "an"
            | "and"
            | "are"
            | "as"
            | "at"
            | "be"
            | "but"
            | "by"
            | "can"
            | "do"
            | "for"
            | "from"
            | "had"
            | "has"
            | "have"
            | "here"
            | "how"
            | "i"
            | "if"
            | "in"
            | "into"
            | "is"
            | "it"
            | "its"
            | "me"
            | "my"
            | "no"
            | "not"
            | "of"
            | "on"
            | "or"
            | "our"
            | "so"
            | "that"
            | "the"
            | "their"
            | "them"
            | "then"
            | "there"
            | "these"
            | "they"
            | "this"
            | "to"
            | "up"
            | "us"
            | "was"
            | "we"
            | "were"
            | "what"
            | "when"
            | "where"
            | "which"
            | "who"
            | "why"
            | "will"
            | "with"
            | "you"
            | "your"
    )
}

/// The expansion groups of: trigger words and the generic capability terms they add.
const EXPANSIONS: [(&[&str], &[&str]); 10] = [
    (
        &["look", "lookup", "google", "research"],
        &["search", "web", "find"],
    ),
    (
        &[
            "current", "today", "latest", "now", "recent", "news", "price", "weather",
        ],
        &["search", "web"],
    ),
    (
        &["url", "link", "page", "article", "site", "website"],
        &["fetch", "web", "browse"],
    ),
    (
        &[
            "remember",
            "recall",
            "memory",
            "earlier",
            "previously",
            "discussed",
            "decided",
        ],
        &["memory", "recall", "history"],
    ),
    (
        &[
            "remind",
            "reminder",
            "later",
            "tomorrow",
            "daily",
            "weekly",
            "recurring",
        ],
        &["schedule", "automations", "cron", "reminder"],
    ),
    (
        &["say", "tell", "reply", "respond", "answer"],
        &["message", "send"],
    ),
    (&["picture", "photo", "meme", "screenshot"], &["image"]),
    (&["speak", "say", "voice"], &["audio", "speech"]),
    (
        &["run", "execute", "command", "shell", "terminal"],
        &["exec", "process"],
    ),
    (&["directory", "folder", "path"], &["file", "list"]),
];

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Calls `emit(word)` for each analyzed word of `text` (steps 1–2), lowercased, stop words
/// *not yet* removed. `scratch` is reused between calls.
pub fn for_each_word(text: &str, scratch: &mut WordScratch, mut emit: impl FnMut(&str)) {
    for raw in text.split(|c: char| !is_word_char(c)) {
        if raw.is_empty() {
            continue;
        }
        scratch.lower.clear();
        lowercase_into(raw, &mut scratch.lower);
        emit(&scratch.lower);
        if scratch.segment_han && !raw.is_ascii() && raw.chars().any(is_han) {
            han_parts(raw, scratch, &mut emit);
            continue;
        }
        emit_compound_parts(raw, scratch, &mut emit);
    }
}

/// Emits the compound parts of `word` (step 2), lowercased, when it has two or more.
fn emit_compound_parts(word: &str, scratch: &mut WordScratch, emit: &mut impl FnMut(&str)) {
    compound_parts(word, scratch);
    if scratch.parts.len() >= 2 {
        for i in 0..scratch.parts.len() {
            let (start, end) = scratch.parts[i];
            scratch.lower.clear();
            lowercase_into(&word[start..end], &mut scratch.lower);
            emit(&scratch.lower);
        }
    }
}

/// The parts of a word holding Han characters: each Han run cut into words (step 2's compound
/// parts for Chinese), each other run as a word with its own compound parts. A part equal to
/// the whole word is not repeated.
fn han_parts(raw: &str, scratch: &mut WordScratch, emit: &mut impl FnMut(&str)) {
    let mut runs: Vec<(bool, &str)> = Vec::new();
    let mut start = 0;
    let mut current: Option<bool> = None;
    for (at, c) in raw.char_indices() {
        let han = is_han(c);
        if current.is_some_and(|h| h != han) {
            runs.push((current.unwrap_or(false), &raw[start..at]));
            start = at;
        }
        current = Some(han);
    }
    runs.push((current.unwrap_or(false), &raw[start..]));
    let whole = std::mem::take(&mut scratch.lower);
    for (han, run) in runs {
        if han {
            super::segment::for_each_han_word(run, |word| {
                if word != whole {
                    emit(word);
                }
            });
            continue;
        }
        scratch.lower.clear();
        lowercase_into(run, &mut scratch.lower);
        if scratch.lower != whole {
            emit(&scratch.lower);
        }
        emit_compound_parts(run, scratch, emit);
    }
    scratch.lower = whole;
}

/// Reusable buffers for [`for_each_word`].
#[derive(Default)]
pub struct WordScratch {
    /// Cut runs of Han characters into words (queries only: documents keep a Han run whole,
    /// so a catalog's term statistics do not depend on the segmenter).
    pub segment_han: bool,
    lower: String,
    stem: String,
    parts: Vec<(usize, usize)>,
    chars: Vec<(usize, char)>,
}

fn lowercase_into(text: &str, out: &mut String) {
    if text.is_ascii() {
        let start = out.len();
        out.push_str(text);
        out[start..].make_ascii_lowercase();
    } else {
        for c in text.chars() {
            out.extend(c.to_lowercase());
        }
    }
}

/// Fills `scratch.parts` with byte ranges of the compound parts of `raw`: split on `_`, then
/// within each piece match, in order of preference, an uppercase run with an optional plural
/// `s` not followed by a lowercase letter (acronyms: `URLs`), an optional capital followed by
/// lowercase letters (`Parser`), or a run of digits. Other characters (e.g. CJK) form no part.
fn compound_parts(raw: &str, scratch: &mut WordScratch) {
    scratch.parts.clear();
    // Fast path: a plain lowercase ASCII word (most words of most texts) has one part.
    if raw.bytes().all(|b| b.is_ascii_lowercase()) {
        return;
    }
    for (piece_start, piece) in split_underscores(raw) {
        scratch.chars.clear();
        scratch.chars.extend(piece.char_indices());
        let chars = &scratch.chars;
        let len = chars.len();
        let byte_at = |i: usize| {
            if i < len {
                piece_start + chars[i].0
            } else {
                piece_start + piece.len()
            }
        };
        let is_lower = |i: usize| i < len && chars[i].1.is_lowercase();
        let is_upper = |i: usize| i < len && chars[i].1.is_uppercase();
        let mut i = 0;
        while i < len {
            let c = chars[i].1;
            if c.is_uppercase() {
                let mut run_end = i;
                while is_upper(run_end) {
                    run_end += 1;
                }
                // Alternative 1: uppercase run (longest first), optional `s`, no lowercase next.
                let mut matched = None;
                let mut end = run_end;
                while end > i {
                    if end < len && chars[end].1 == 's' && !is_lower(end + 1) {
                        matched = Some(end + 1);
                        break;
                    }
                    if !is_lower(end) {
                        matched = Some(end);
                        break;
                    }
                    end -= 1;
                }
                if let Some(stop) = matched {
                    scratch.parts.push((byte_at(i), byte_at(stop)));
                    i = stop;
                    continue;
                }
                // Alternative 2: one capital, then lowercase letters.
                if is_lower(i + 1) {
                    let mut stop = i + 1;
                    while is_lower(stop) {
                        stop += 1;
                    }
                    scratch.parts.push((byte_at(i), byte_at(stop)));
                    i = stop;
                    continue;
                }
                i += 1;
            } else if c.is_lowercase() {
                let mut stop = i;
                while is_lower(stop) {
                    stop += 1;
                }
                scratch.parts.push((byte_at(i), byte_at(stop)));
                i = stop;
            } else if c.is_numeric() {
                let mut stop = i;
                while stop < len && chars[stop].1.is_numeric() {
                    stop += 1;
                }
                scratch.parts.push((byte_at(i), byte_at(stop)));
                i = stop;
            } else {
                i += 1;
            }
        }
    }
}

fn split_underscores(raw: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    raw.split('_').map(move |piece| {
        let start = offset;
        offset += piece.len() + 1;
        (start, piece)
    })
}

/// Calls `emit(term)` for every index term of `text` (steps 1–4).
pub fn for_each_term(text: &str, scratch: &mut WordScratch, mut emit: impl FnMut(&str)) {
    let mut buffer = std::mem::take(&mut scratch.stem);
    for_each_word(text, scratch, |word| {
        if !is_stop_word(word) && word.len() <= MAX_TOKEN_BYTES {
            for_each_stem_in(word, &mut buffer, &mut emit);
        }
    });
    scratch.stem = buffer;
}

/// The terms of `text`, as the index sees them.
#[cfg(test)]
pub fn document_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, &mut WordScratch::default(), |t| {
        out.push(t.to_string())
    });
    out
}

/// Where a query term came from, weakest first (the order of [`TermKind::tier`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TermKind {
    /// Added by intent expansion.
    Expansion,
    /// A term of the index within a small edit distance of an unknown query word.
    Fuzzy,
    /// An English term of the capability lexicon for a Chinese, German, French or Indonesian
    /// query word.
    Translation,
    /// A term the caller typed.
    Literal,
}

impl TermKind {
    /// The ranking tier a match of this kind earns: 2 for a literal term, 1 for a term
    /// standing in for a typed word (its translation or its correct spelling), 0 for expansion.
    pub fn tier(self) -> u8 {
        match self {
            TermKind::Literal => 2,
            TermKind::Translation | TermKind::Fuzzy => 1,
            TermKind::Expansion => 0,
        }
    }
}

/// A distinct query term with its weight (R-3.1: each distinct term counts once).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    /// The analyzed term.
    pub term: String,
    /// 1 for a literal term, [`TRANSLATION_WEIGHT`], [`FUZZY_WEIGHT`] (per edit distance) or
    /// [`EXPANSION_WEIGHT`] for the others.
    pub weight: f32,
    /// Where it came from.
    pub kind: TermKind,
}

impl QueryTerm {
    /// Whether the caller typed this term (as opposed to expansion, translation or typo
    /// tolerance adding it).
    pub fn is_literal(&self) -> bool {
        self.kind == TermKind::Literal
    }
}

/// Weight of a term the capability lexicon adds for a non-English word: between a literal term
/// (1) and intent expansion (0.35).
pub const TRANSLATION_WEIGHT: f32 = 0.7;

/// Weight of a fuzzy candidate at edit distance 1 and 2 (index 0 and 1): below literal terms.
pub const FUZZY_WEIGHT: [f32; 2] = [0.6, 0.45];

/// A query word typo tolerance may stand in for, if the index turns out not to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzyWord {
    /// The word, lowercased.
    pub word: String,
    /// Its stems (the forms the index would hold).
    pub stems: Vec<String>,
}

/// The shortest word typo tolerance considers, in characters (edit distance 1 up to 7, 2 from 8).
pub const FUZZY_MIN_CHARS: usize = 4;

/// A query analyzed into weighted terms, plus what typo tolerance may look at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryAnalysis {
    /// Distinct terms: literal ones first in query order, then translations, then expansions.
    pub terms: Vec<QueryTerm>,
    /// Words eligible for typo tolerance, in query order, distinct: alphabetic, at least
    /// [`FUZZY_MIN_CHARS`] characters, not a stop word, not translated by the lexicon.
    pub fuzzy: Vec<FuzzyWord>,
    /// Languages the lexicon recognized in the query.
    pub languages: Langs,
    /// Words of the query that are not stop words (of English or of a recognized language).
    pub content_words: usize,
}

impl QueryAnalysis {
    /// Adds `term` unless it is already there at least as strongly; a weaker occurrence is
    /// upgraded in place.
    pub fn add(&mut self, term: &str, kind: TermKind, weight: f32) {
        if let Some(existing) = self.terms.iter_mut().find(|t| t.term == term) {
            if (kind, weight) > (existing.kind, existing.weight) && kind >= existing.kind {
                existing.kind = kind;
                existing.weight = weight;
            }
            return;
        }
        self.terms.push(QueryTerm {
            term: term.to_string(),
            weight,
            kind,
        });
    }
}

/// Query-side switches (the index is the same either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalyzerOptions {
    /// Translate Chinese, German, French and Indonesian words through the lexicon.
    pub multilingual: bool,
    /// Collect the words typo tolerance may look at ([`QueryAnalysis::fuzzy`]) only in a query
    /// of at most this many content words (`None`: never). Typo tolerance ignores longer ones,
    /// and collecting costs a few allocations per word.
    pub fuzzy_words: Option<usize>,
}

impl Default for AnalyzerOptions {
    fn default() -> Self {
        AnalyzerOptions {
            multilingual: true,
            fuzzy_words: Some(usize::MAX),
        }
    }
}

/// Singularizes a word for trigger matching: `-ies` → `-y`, and a trailing `s` (not `ss`)
/// dropped, for words of more than 4 letters.
fn normalize_trigger(word: &str) -> std::borrow::Cow<'_, str> {
    let length = char_len(word);
    if length > 4 && word.ends_with("ies") {
        return std::borrow::Cow::Owned(format!("{}y", &word[..word.len() - 3]));
    }
    if length > 4 && word.ends_with('s') && !word.ends_with("ss") {
        return std::borrow::Cow::Borrowed(&word[..word.len() - 1]);
    }
    std::borrow::Cow::Borrowed(word)
}

/// The expansion table, computed once: singularized trigger → bit set of groups it fires, and
/// each group's stemmed additions.
struct ExpansionTable {
    triggers: rustc_hash::FxHashMap<String, u16>,
    additions: Vec<Vec<String>>,
}

fn expansion_table() -> &'static ExpansionTable {
    static TABLE: std::sync::OnceLock<ExpansionTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut triggers = rustc_hash::FxHashMap::default();
        for (group, (words, _)) in EXPANSIONS.iter().enumerate() {
            for word in *words {
                *triggers
                    .entry(normalize_trigger(word).into_owned())
                    .or_insert(0u16) |= 1 << group;
            }
        }
        ExpansionTable {
            triggers,
            additions: EXPANSIONS
                .iter()
                .map(|(_, additions)| additions.iter().map(|a| stem(a)).collect())
                .collect(),
        }
    })
}

/// Analyzes a query into distinct weighted terms, literal terms first in query order, then
/// translations, then expansion-only terms. Empty when the query has no usable
/// term.
#[cfg(test)]
pub fn query_terms(query: &str) -> Vec<QueryTerm> {
    analyze_query(query, AnalyzerOptions::default()).terms
}

/// One raw word of a query (split on non-word characters) and what the lexicon found for it.
struct RawWord<'a> {
    raw: &'a str,
    lower: String,
    /// Lexicon entries for this word (or for the phrase it starts).
    entries: Vec<u32>,
    /// Part of a multi-word key started by an earlier word.
    in_phrase: bool,
    /// The index knows the word: it is taken for English, and its entries count as ambiguous.
    known: bool,
}

/// Analyzes a query: literal terms, lexicon translations, intent expansion
/// and the words typo tolerance may look at. Without an index every word counts as
/// unknown (see [`analyze_query_in`]).
#[cfg(test)]
pub fn analyze_query(query: &str, options: AnalyzerOptions) -> QueryAnalysis {
    analyze_query_in(query, options, &|_| false)
}

/// [`analyze_query`] against an index: `known(stem)` says whether the index holds a term. A
/// word the index knows is matched against the lexicon only as written (a German or French
/// *stem* equal to an English word — `find`, `plan`, `send` — must not turn English into
/// German); an unknown word is also matched by its stems and, in German, as a compound.
pub fn analyze_query_in(
    query: &str,
    options: AnalyzerOptions,
    known: &dyn Fn(&str) -> bool,
) -> QueryAnalysis {
    let lexicon = lexicon();
    let mut raws = raw_words(query);
    if options.multilingual {
        find_lexicon_entries(lexicon, &mut raws, known);
    }
    let senses = Senses::detect(lexicon, &raws);
    let content_words = raws
        .iter()
        .filter(|w| !senses.function_word(w) && !is_stop_word(&w.lower))
        .count();
    let collect_fuzzy = options
        .fuzzy_words
        .is_some_and(|most| content_words <= most);
    let mut analyzer = QueryAnalyzer {
        senses,
        table: expansion_table(),
        scratch: WordScratch {
            segment_han: true,
            ..WordScratch::default()
        },
        fired: 0,
        analysis: QueryAnalysis {
            languages: senses.languages,
            content_words,
            ..QueryAnalysis::default()
        },
    };
    analyzer.literal_terms(&raws, collect_fuzzy);
    analyzer.translations(&raws);
    analyzer.expansions();
    analyzer.analysis
}

/// Splits a query into raw words on non-word characters, each with its lowercase form.
fn raw_words(query: &str) -> Vec<RawWord<'_>> {
    query
        .split(|c: char| !is_word_char(c))
        .filter(|w| !w.is_empty())
        .map(|raw| {
            let mut lower = String::new();
            lowercase_into(raw, &mut lower);
            RawWord {
                raw,
                lower,
                entries: Vec::new(),
                in_phrase: false,
                known: false,
            }
        })
        .collect()
}

/// The lexicon together with the languages a query is in: what a word's entries may say.
#[derive(Clone, Copy)]
struct Senses {
    lexicon: &'static Lexicon,
    languages: Langs,
}

impl Senses {
    /// Finds the query's languages. A language counts as the query's when its unambiguous
    /// content words (unknown to the index) make up at least a third of the query's content
    /// words: one false friend in a long English request ("statutes" → statut) does not make
    /// it French.
    fn detect(lexicon: &'static Lexicon, raws: &[RawWord<'_>]) -> Self {
        let mut languages = Langs::default();
        let content = raws.iter().filter(|w| !is_stop_word(&w.lower)).count();
        for lang in [Lang::Zh, Lang::De, Lang::Fr, Lang::Id] {
            let shown = raws
                .iter()
                .filter(|w| !w.known)
                .filter(|w| {
                    w.entries
                        .iter()
                        .filter_map(|&id| lexicon.entry(id))
                        .any(|e| e.lang == lang && !e.is_stop() && !e.ambiguous)
                })
                .count();
            if shown > 0 && shown * 3 >= content {
                languages.insert(lang);
            }
        }
        Senses { lexicon, languages }
    }

    /// Whether entry `id` of `word` may translate it: a content entry, unambiguous for a word
    /// the index does not know, or of one of the query's languages.
    fn usable(&self, word: &RawWord<'_>, id: &u32) -> bool {
        self.lexicon.entry(*id).is_some_and(|e| {
            !e.is_stop() && ((!e.ambiguous && !word.known) || self.languages.contains(e.lang))
        })
    }

    /// Whether `word` is a function word of a language the query is in (it says nothing).
    fn function_word(&self, word: &RawWord<'_>) -> bool {
        word.entries.iter().any(|&id| {
            self.lexicon
                .entry(id)
                .is_some_and(|e| e.is_stop() && self.languages.contains(e.lang))
        })
    }

    /// What the literal filter needs to know about the word at `position`.
    fn flags(&self, position: usize, word: &RawWord<'_>, collect_fuzzy: bool) -> WordFlags {
        // A capitalized word after the first is most likely a name (Paris, Lakers): typo
        // tolerance leaves it alone.
        let name_like = position > 0 && word.raw.chars().next().is_some_and(char::is_uppercase);
        let translated = word.in_phrase || word.entries.iter().any(|id| self.usable(word, id));
        // A foreign word (translated, not spelled like its English sense): its own stems are
        // no English literal terms ("alle" → all), so they count as translations (tier 1) and
        // can never lift a document above one matching the query's real English words.
        let has_han = !word.raw.is_ascii() && word.raw.chars().any(is_han);
        let foreign = !has_han
            && word.entries.iter().any(|id| {
                self.usable(word, id) && self.lexicon.entry(*id).is_some_and(|e| !e.identity)
            });
        // Never typo-correct a function word of any lexicon language ("bitte" is no "bite").
        let any_function_word = word
            .entries
            .iter()
            .any(|&id| self.lexicon.entry(id).is_some_and(Entry::is_stop));
        WordFlags {
            foreign,
            fuzzy: collect_fuzzy && !translated && !name_like && !any_function_word,
        }
    }
}

/// Per-word switches of the literal filter.
struct WordFlags {
    /// The word's stems count as translations, not literal terms.
    foreign: bool,
    /// Its tokens may be collected for typo tolerance (subject to [`fuzzy_token`]).
    fuzzy: bool,
}

/// Whether a token of a query word yields no term: a stop word, an over-long token, or a
/// Chinese function word.
fn is_dropped_token(token: &str) -> bool {
    is_stop_word(token) || token.len() > MAX_TOKEN_BYTES || is_chinese_function_word(token)
}

/// Whether typo tolerance may look at `token` (of a word whose flags allow it): long enough,
/// alphabetic, no Han, and not collected yet.
fn fuzzy_token(token: &str, fuzzy: &[FuzzyWord]) -> bool {
    char_len(token) >= FUZZY_MIN_CHARS
        && token.chars().all(char::is_alphabetic)
        && !token.chars().any(is_han)
        && !fuzzy.iter().any(|f| f.word == token)
}

/// Appends `term` as a literal term unless already there. `seen` maps the xxh3 of each literal
/// term to its index in `terms` (another term with the same hash is found by a scan).
fn push_literal(
    seen: &mut rustc_hash::FxHashMap<u64, usize>,
    terms: &mut Vec<QueryTerm>,
    term: &str,
) {
    let key = xxhash_rust::xxh3::xxh3_64(term.as_bytes());
    let new = match seen.entry(key) {
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(terms.len());
            true
        }
        std::collections::hash_map::Entry::Occupied(slot) => {
            terms[*slot.get()].term != term
                && !terms
                    .iter()
                    .any(|t| t.kind == TermKind::Literal && t.term == term)
        }
    };
    if new {
        terms.push(QueryTerm {
            term: term.to_string(),
            weight: 1.0,
            kind: TermKind::Literal,
        });
    }
}

impl ExpansionTable {
    /// Sets in `fired` the groups `word` triggers (matched singularized).
    fn fire(&self, word: &str, fired: &mut u16) {
        if let Some(groups) = self.triggers.get(normalize_trigger(word).as_ref()) {
            *fired |= groups;
        }
    }
}

/// State carried through the stages of [`analyze_query_in`].
struct QueryAnalyzer {
    senses: Senses,
    table: &'static ExpansionTable,
    scratch: WordScratch,
    /// Expansion groups fired so far, as bits.
    fired: u16,
    analysis: QueryAnalysis,
}

impl QueryAnalyzer {
    /// Literal filter: cuts each content word into tokens, fires their expansion triggers and
    /// adds their stems as distinct literal terms (a foreign word's as translations), noting
    /// the words typo tolerance may look at.
    fn literal_terms(&mut self, raws: &[RawWord<'_>], collect_fuzzy: bool) {
        let mut buffer = String::new();
        let mut seen = rustc_hash::FxHashMap::default();
        let mut demoted: Vec<String> = Vec::new();
        for (position, word) in raws.iter().enumerate() {
            if self.senses.function_word(word) {
                continue;
            }
            let flags = self.senses.flags(position, word, collect_fuzzy);
            let table = self.table;
            let fired = &mut self.fired;
            let terms = &mut self.analysis.terms;
            let fuzzy = &mut self.analysis.fuzzy;
            for_each_word(word.raw, &mut self.scratch, |w| {
                if is_dropped_token(w) {
                    return;
                }
                table.fire(w, fired);
                // Only a word typo tolerance may look at keeps its stems (most words are known).
                let eligible = flags.fuzzy && fuzzy_token(w, fuzzy);
                let mut stems: Vec<String> = Vec::new();
                for_each_stem_in(w, &mut buffer, |term| {
                    if eligible {
                        stems.push(term.to_string());
                    }
                    if flags.foreign {
                        demoted.push(term.to_string());
                        return;
                    }
                    push_literal(&mut seen, terms, term);
                });
                if eligible {
                    fuzzy.push(FuzzyWord {
                        word: w.to_string(),
                        stems,
                    });
                }
            });
        }
        for term in &demoted {
            self.analysis
                .add(term, TermKind::Translation, TRANSLATION_WEIGHT);
        }
    }

    /// Translation filter: the English senses of each word's usable lexicon entries, in query
    /// order; they may fire expansion triggers too. The main sense weighs
    /// [`TRANSLATION_WEIGHT`], further senses half of it (an entry's synonyms must not add up
    /// to more than its main sense).
    fn translations(&mut self, raws: &[RawWord<'_>]) {
        let senses = self.senses;
        let mut english = String::new();
        for word in raws {
            for entry in word
                .entries
                .iter()
                .filter(|id| senses.usable(word, id))
                .filter_map(|&id| senses.lexicon.entry(id))
            {
                for (sense, target) in entry.english.iter().enumerate() {
                    self.table.fire(target, &mut self.fired);
                    let weight = if sense == 0 {
                        TRANSLATION_WEIGHT
                    } else {
                        TRANSLATION_WEIGHT / 2.0
                    };
                    english.clear();
                    english.push_str(target);
                    let analysis = &mut self.analysis;
                    for_each_term(&english, &mut self.scratch, |term| {
                        analysis.add(term, TermKind::Translation, weight);
                    });
                }
            }
        }
    }

    /// Expansion filter: the additions of every fired group not already present, group by
    /// group.
    fn expansions(&mut self) {
        let terms = &mut self.analysis.terms;
        for (group, additions) in self.table.additions.iter().enumerate() {
            if self.fired & (1 << group) == 0 {
                continue;
            }
            for term in additions {
                if !terms.iter().any(|t| t.term == *term) {
                    terms.push(QueryTerm {
                        term: term.clone(),
                        weight: EXPANSION_WEIGHT,
                        kind: TermKind::Expansion,
                    });
                }
            }
        }
    }
}

/// Whether `word` is a Chinese function word of the lexicon (的, 了, 我, 请 …): dropped
/// from queries, so that it never earns a literal match in a catalog with Chinese text.
fn is_chinese_function_word(word: &str) -> bool {
    if word.is_ascii() || !word.chars().all(is_han) {
        return false;
    }
    let lexicon = lexicon();
    let ids = lexicon.chinese_key(word);
    !ids.is_empty()
        && ids
            .iter()
            .filter_map(|&id| lexicon.entry(id))
            .all(Entry::is_stop)
}

/// Fills each raw word's lexicon entries: Chinese runs by longest match, then multi-word keys
/// (longest first), then single words, then German compounds.
fn find_lexicon_entries(lexicon: &Lexicon, raws: &mut [RawWord<'_>], known: &dyn Fn(&str) -> bool) {
    let mut folded = String::new();
    let mut stem_buffer = String::new();
    let mut i = 0;
    while i < raws.len() {
        if !raws[i].raw.is_ascii() && raws[i].raw.chars().any(is_han) {
            let mut found = Vec::new();
            let lower = raws[i].lower.clone();
            for run in lower.split(|c: char| !is_han(c)).filter(|r| !r.is_empty()) {
                lexicon.chinese(run, |ids| found.extend_from_slice(ids));
            }
            raws[i].entries = found;
            i += 1;
            continue;
        }
        let mut matched = 0;
        let longest = if lexicon.starts_phrase(&raws[i].lower, &mut folded) {
            MAX_PHRASE_WORDS.min(raws.len() - i)
        } else {
            0
        };
        for len in (2..=longest).rev() {
            let words: Vec<&str> = raws[i..i + len].iter().map(|w| w.lower.as_str()).collect();
            let ids = lexicon.phrase(&words);
            if !ids.is_empty() {
                raws[i].entries = ids.to_vec();
                for follower in &mut raws[i + 1..i + len] {
                    follower.in_phrase = true;
                }
                matched = len;
                break;
            }
        }
        if matched > 0 {
            i += matched;
            continue;
        }
        let lower = std::mem::take(&mut raws[i].lower);
        if lower.chars().any(char::is_alphabetic) && !is_stop_word(&lower) {
            let mut ids = Vec::new();
            lexicon.word(&lower, false, &mut folded, &mut ids);
            // Whether the index knows the word matters only where the lexicon may say
            // something: an exact key, or a stem or compound that could be one.
            let may_stem = lower.chars().count() >= 4 && lexicon.may_stem_match(&folded);
            if !ids.is_empty() || may_stem || lower.len() >= 7 {
                let mut unknown = true;
                for_each_stem_in(&lower, &mut stem_buffer, |stem| unknown &= !known(stem));
                raws[i].known = !unknown;
                if unknown && ids.is_empty() {
                    if may_stem {
                        lexicon.word(&lower, true, &mut folded, &mut ids);
                    }
                    if ids.is_empty() {
                        lexicon.german_compound(&lower, &mut ids);
                    }
                }
            }
            raws[i].entries = ids;
        } else if is_stop_word(&lower) {
            // English stop words are dropped anyway; still note foreign function words so the
            // same word is not looked up as content.
            let mut ids = Vec::new();
            lexicon.word(&lower, false, &mut folded, &mut ids);
            ids.retain(|&id| lexicon.entry(id).is_some_and(Entry::is_stop));
            raws[i].entries = ids;
        }
        raws[i].lower = lower;
        i += 1;
    }
}

/// The analyzer as a tantivy tokenizer (steps 1–4), registered under [`ANALYZER_NAME`].
#[derive(Default)]
pub struct ToolTokenizer {
    tokens: Vec<Token>,
    len: usize,
    scratch: WordScratch,
}

impl Clone for ToolTokenizer {
    /// A clone starts with empty buffers: they are scratch space, not state.
    fn clone(&self) -> Self {
        ToolTokenizer::default()
    }
}

/// The token stream of [`ToolTokenizer`]: tokens are computed up front into a reused buffer.
pub struct ToolTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl Tokenizer for ToolTokenizer {
    type TokenStream<'a> = ToolTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ToolTokenStream<'a> {
        // Token buffers are reused across documents: only their strings are overwritten.
        let mut count = 0;
        let tokens = &mut self.tokens;
        for_each_term(text, &mut self.scratch, |term| {
            if count == tokens.len() {
                tokens.push(Token::default());
            }
            let token = &mut tokens[count];
            token.text.clear();
            token.text.push_str(term);
            token.position = count;
            token.position_length = 1;
            count += 1;
        });
        self.len = count;
        ToolTokenStream {
            tokens: &mut self.tokens[..count],
            next: 0,
        }
    }
}

impl TokenStream for ToolTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self
            .next
            .saturating_sub(1)
            .min(self.tokens.len().saturating_sub(1))]
    }

    fn token_mut(&mut self) -> &mut Token {
        let index = self
            .next
            .saturating_sub(1)
            .min(self.tokens.len().saturating_sub(1));
        &mut self.tokens[index]
    }
}

#[cfg(test)]
mod tests {
    use super::super::stem::for_each_stem;
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, &mut WordScratch::default(), |w| {
            out.push(w.to_string())
        });
        out
    }

    #[test]
    fn compound_identifiers_keep_the_whole_word_and_acronyms() {
        assert_eq!(words("getURLs"), ["geturls", "get", "urls"]);
        assert_eq!(words("get_weather"), ["get_weather", "get", "weather"]);
        assert_eq!(words("HTMLParser"), ["htmlparser", "html", "parser"]);
        assert_eq!(words("API-get-user"), ["api", "get", "user"]);
        assert_eq!(words("schedule"), ["schedule"]);
        assert_eq!(words("v2Api"), ["v2api", "v", "2", "api"]);
        assert_eq!(words("搜索关键词 abc"), ["搜索关键词", "abc"]);
    }

    #[test]
    fn stemmer_follows_r_3_4() {
        assert_eq!(stem("reminders"), "remind");
        assert_eq!(stem("scheduling"), "schedul");
        assert_eq!(stem("schedule"), "schedul");
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("calling"), "call");
        assert_eq!(stem("process"), "process");
        assert_eq!(stem("news"), "news");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("repositories"), "repository");
        assert_eq!(stem("use"), "use");
        assert_eq!(stem("uses"), "use");
        let mut variants = Vec::new();
        for_each_stem("policies", |s| variants.push(s));
        assert_eq!(variants, ["policy", "polici"]);
    }

    #[test]
    fn queries_deduplicate_and_expand() {
        let terms = query_terms("look up the price price");
        let literal: Vec<_> = terms.iter().filter(|t| t.is_literal()).collect();
        assert_eq!(literal.len(), 2, "{terms:?}");
        assert!(
            terms
                .iter()
                .any(|t| t.term == "search" && t.weight == EXPANSION_WEIGHT)
        );
        assert!(query_terms("the of and").is_empty());
        // A literal term keeps full weight even when expansion would add it too.
        let terms = query_terms("search the web for news");
        assert!(
            terms
                .iter()
                .filter(|t| t.term == "search" || t.term == "web")
                .all(|t| t.is_literal())
        );
    }

    #[test]
    fn tokenizer_and_query_path_agree() {
        let text = "Schedule_recurring reminders for getURLs, policies and running jobs";
        let mut tokenizer = ToolTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut indexed = Vec::new();
        while stream.advance() {
            indexed.push(stream.token().text.clone());
        }
        assert_eq!(indexed, document_terms(text));
        let mut literal: Vec<String> = query_terms(text)
            .into_iter()
            .filter(QueryTerm::is_literal)
            .map(|t| t.term)
            .collect();
        literal.sort();
        let mut distinct = indexed.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(literal, distinct);
    }
}
