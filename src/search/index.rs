//! The tantivy index of one authorized view and the ranker over it.
//!
//! One text field holds the whole bag of words of a tool: name, id, external id, label,
//! description and — for trusted tools only — parameter names and descriptions from a schema
//! walk of depth 4 through `properties` and `items`, capped at [`PARAM_NODE_CAP`] nodes.
//! A `pos` fast field maps every tantivy document back to its place in the view, which is in id
//! order, so the final tie-break (id) is a comparison of positions.
//!
//! Scoring is term-at-a-time over tantivy's postings with its BM25 weights (k1 1.2, b 0.75,
//! idf `ln(1 + (N - n + 0.5)/(n + 0.5))`), each distinct query term once, multiplied by the
//! term's weight (1 literal, 0.7 translation, 0.6/0.45 fuzzy, 0.35 expansion). Doing it
//! term-at-a-time tells us, in one pass, the best tier each document reached: 2 for a
//! literal term, 1 for a term standing in for a typed word (its lexicon translation or its
//! correct spelling), 0 for expansion only.
//!
//! Typo tolerance: a query word none of whose stems is in the index (and only such a word —
//! a correctly spelled indexed word is never fuzzed, so its ranking cannot change) gets up to
//! [`MAX_FUZZY_CANDIDATES`] terms of the index's own term dictionary within edit distance 1
//! (words of 4–7 letters) or 2 (8 and more; a transposition counts once), preferring the
//! smallest distance, then the most frequent term. At most [`MAX_FUZZY_WORDS`] words per query.
//! Distance 1 is a few hash lookups in a deletion index of the term dictionary (see `typo.rs`;
//! built on the first misspelled word); distance 2, tried only when 1 finds nothing, is
//! tantivy's Levenshtein automaton intersected with the dictionary's FST (no scan), keeping the
//! word's first letter. Both give exactly the terms within the distance.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tantivy::query::FuzzyTermQuery;
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexReader, Searcher, TantivyDocument, Term};

use super::analyzer::{
    ANALYZER_NAME, AnalyzerOptions, FUZZY_WEIGHT, FuzzyWord, QueryAnalysis, QueryTerm, TermKind,
    ToolTokenizer, analyze_query_in,
};
use super::exact::{ExactKeys, Form};
use super::hit::{Hints, Hit};
use super::typo::DeletionIndex;
use crate::cache::OnceCache;
use crate::catalog::{Descriptor, Fingerprint};
use crate::policy::Authorized;

/// At most this many schema nodes are walked for one tool's parameter text (R-1.6: untrusted
/// schemas are never walked at all; trusted ones are bounded too).
pub const PARAM_NODE_CAP: usize = 512;
/// Parameter walk depth through `properties` and `items`.
pub const PARAM_DEPTH: usize = 4;

/// Positions fit in 31 bits of a ranking key (catalogs are far smaller than 2^31 tools).
const POSITION_MASK: u32 = 0x7FFF_FFFF;

/// Most query words typo tolerance looks up, per query.
pub const MAX_FUZZY_WORDS: usize = 4;
/// Typo tolerance looks at queries of at most this many content words: in a longer request a
/// misspelled word is one of many, and the candidates of its unknown words (names, codes,
/// jargon) cost more ranking quality and latency than they find (measured on the dev sets).
pub const MAX_FUZZY_QUERY_WORDS: usize = 8;
/// Most fuzzy candidates kept per word.
pub const MAX_FUZZY_CANDIDATES: usize = 3;
/// Shortest fuzzy candidate, in characters.
const MIN_CANDIDATE_CHARS: usize = 3;

/// Query-side switches of the ranker; the index is the same for every setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    /// Fuzzy candidates for query words the index does not know.
    pub typo_tolerance: bool,
    /// Chinese, German, French and Indonesian words translated through the capability lexicon.
    pub multilingual: bool,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            typo_tolerance: true,
            multilingual: true,
        }
    }
}

/// Which ranker answers a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, clap::ValueEnum)]
pub enum RankerKind {
    /// BM25 with exact names, typo tolerance and the multilingual lexicon.
    #[default]
    Lexical,
    /// The lexical ranking fused with sentence-vector cosine (feature `semantic`, a model).
    Hybrid,
}

impl RankerKind {
    /// `"lexical"` or `"hybrid"`, as telemetry and `--json` say it.
    pub fn as_str(self) -> &'static str {
        match self {
            RankerKind::Lexical => "lexical",
            RankerKind::Hybrid => "hybrid",
        }
    }
}

/// How long building took and what went in (for telemetry and benches).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IndexStats {
    /// Documents indexed (allowed catalog tools).
    pub documents: usize,
    /// Segments in the built index.
    pub segments: usize,
    /// Wall time of the build.
    pub build_time: Duration,
}

/// A ranked hit before rendering: the tool's position in the view plus why it ranked there.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedHit {
    /// Position in [`Authorized::tools`] order.
    pub position: u32,
    /// BM25 score (0 for an exact match that matched no term).
    pub score: f32,
    /// Whether the query names this tool exactly, in any form of `exact.rs`.
    pub exact: bool,
    /// Whether at least one literal (unexpanded) query term matched.
    pub literal: bool,
    /// The best tier reached: 2 literal, 1 translation or fuzzy, 0 expansion only.
    pub tier: u8,
}

/// A ranking: the hits and how many allowed tools matched the query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranking {
    /// At most the limit's hits, best first.
    pub hits: Vec<RankedHit>,
    /// Allowed tools that matched: those the query names exactly (`exact.rs`) and those sharing
    /// at least one term with the analysed query — a literal word or its stem, a lexicon
    /// translation, an intent expansion or a typo candidate.
    pub matched: usize,
}

struct SegmentMap {
    /// Document id in the segment → position in the view.
    positions: Vec<u32>,
    inverted: Arc<tantivy::InvertedIndexReader>,
    fieldnorms: tantivy::fieldnorm::FieldNormReader,
    /// Document id in the segment → its position in the view and its BM25 length
    /// normalization `k1 * (1 - b + b * len / avgdl)`, avgdl over allowed tools only (filled
    /// once the average length is known): what scoring reads per posting, side by side.
    docs: Vec<(u32, f32)>,
}

/// The search index of one authorized view. Immutable once built.
pub struct SearchIndex {
    view: Authorized,
    // Holds the segment readers (and their in-RAM files) for the index's life.
    _searcher: Searcher,
    // Kept alive for the searcher's sake.
    _reader: IndexReader,
    body: Field,
    segments: Vec<SegmentMap>,
    /// The exact-name maps (`exact.rs`).
    exact: ExactKeys,
    hints: Vec<OnceLock<Arc<Hints>>>,
    /// The terms filed for typo tolerance's distance-1 lookups (built on first use).
    typos: OnceLock<DeletionIndex>,
    stats: IndexStats,
    /// The hybrid ranker's side, once its tool vectors are ready (`IndexCache::with_semantic`).
    #[cfg(feature = "semantic")]
    dense: OnceLock<Arc<super::hybrid::Attached>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("stats", &self.stats)
            .finish()
    }
}

/// Errors from tantivy while building; they indicate a bug or resource exhaustion, not bad input.
#[derive(Debug, thiserror::Error)]
#[error("search index could not be built: {0}")]
pub struct BuildError(#[from] tantivy::TantivyError);

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static MEMO: RefCell<TermMemo> = RefCell::new(TermMemo::default());
}

/// The term dictionary's answers for the query being ranked on this thread: each distinct
/// term is looked up once per segment, however often the lexicon check, typo tolerance and
/// scoring ask. Cleared by [`SearchIndex::query_analysis`]; valid only for `owner`.
#[derive(Default)]
struct TermMemo {
    /// The index the answers come from (its address while it ranks).
    owner: usize,
    /// xxh3 of a term → its entry.
    slots: rustc_hash::FxHashMap<u64, u32>,
    /// Every looked-up term, one after another (one buffer, not a string per term).
    text: String,
    /// (the term's byte range in `text`, documents containing it over all segments, first of
    /// its `infos`).
    entries: Vec<(std::ops::Range<usize>, u64, usize)>,
    /// One answer per segment per entry.
    infos: Vec<Option<tantivy::postings::TermInfo>>,
}

impl TermMemo {
    fn reset(&mut self, owner: usize) {
        self.owner = owner;
        self.slots.clear();
        self.text.clear();
        self.entries.clear();
        self.infos.clear();
    }

    /// The entry of `term`, looked up in `index` on first use; `None` on a hash collision
    /// (the caller then asks the dictionary itself).
    fn entry(&mut self, index: &SearchIndex, term: &str) -> Option<usize> {
        let key = xxhash_rust::xxh3::xxh3_64(term.as_bytes());
        if let Some(&at) = self.slots.get(&key) {
            let at = at as usize;
            let same = self.text.get(self.entries[at].0.clone()) == Some(term);
            return same.then_some(at);
        }
        let first = self.infos.len();
        let doc_freq = index.lookup_term(term, &mut self.infos);
        let at = self.entries.len();
        let start = self.text.len();
        self.text.push_str(term);
        self.entries.push((start..self.text.len(), doc_freq, first));
        self.slots.insert(key, at as u32);
        Some(at)
    }
}

#[derive(Default)]
struct Scratch {
    scores: Vec<f32>,
    /// Best tier + 1 per position (0 = untouched).
    tier: Vec<u8>,
    touched: Vec<u32>,
    keys: Vec<u64>,
}

impl SearchIndex {
    /// Builds the index of `view`: only allowed tools go in.
    pub fn build(view: &Authorized) -> Result<SearchIndex, BuildError> {
        let started = Instant::now();
        // Query-side data is parsed once per process; do it here rather than in a search.
        super::lexicon::lexicon();
        super::segment::warm();
        let mut schema = Schema::builder();
        let body = schema.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(ANALYZER_NAME)
                    .set_index_option(IndexRecordOption::WithFreqs)
                    .set_fieldnorms(true),
            ),
        );
        let pos_field = schema.add_u64_field("pos", FAST);
        let index = Index::create_in_ram(schema.build());
        index
            .tokenizers()
            .register(ANALYZER_NAME, ToolTokenizer::default());

        let documents = view.len();
        // One thread keeps catalogs up to 20k tools in one segment; larger ones index on two threads
        // (two segments; statistics are summed over segments, positions map back to the view).
        let threads = if documents > 20_000 { 2 } else { 1 };
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(threads, 400_000_000)?;
        let mut text = String::new();
        for (position, tool) in view.tools().enumerate() {
            text.clear();
            document_text(tool, &mut text);
            let mut doc = TantivyDocument::default();
            doc.add_text(body, &text);
            doc.add_u64(pos_field, position as u64);
            writer.add_document(doc)?;
        }
        writer.commit()?;
        drop(writer);
        let reader = index.reader()?;
        reader.reload()?;
        let searcher = reader.searcher();

        let mut segments = Vec::new();
        for segment in searcher.segment_readers() {
            let column = segment.fast_fields().u64("pos")?;
            let positions = (0..segment.max_doc())
                .map(|doc| column.first(doc).unwrap_or(u64::MAX) as u32)
                .collect();
            segments.push(SegmentMap {
                positions,
                inverted: segment.inverted_index(body)?,
                fieldnorms: segment.get_fieldnorms_reader(body)?,
                docs: Vec::new(),
            });
        }

        let exact = ExactKeys::build(view.tools());

        let total_tokens: u64 = segments.iter().map(|s| s.inverted.total_num_tokens()).sum();
        let average_length = if documents == 0 {
            1.0
        } else {
            total_tokens as f32 / documents as f32
        };
        let length_norm = length_norms(average_length);
        for segment in &mut segments {
            let norms = (0..segment.positions.len() as u32)
                .map(|doc| length_norm[usize::from(segment.fieldnorms.fieldnorm_id(doc))]);
            segment.docs = segment.positions.iter().copied().zip(norms).collect();
        }
        let stats = IndexStats {
            documents,
            segments: segments.len(),
            build_time: started.elapsed(),
        };
        Ok(SearchIndex {
            view: view.clone(),
            _searcher: searcher,
            _reader: reader,
            body,
            segments,
            exact,
            hints: (0..documents).map(|_| OnceLock::new()).collect(),
            typos: OnceLock::new(),
            stats,
            #[cfg(feature = "semantic")]
            dense: OnceLock::new(),
        })
    }

    /// Attaches the hybrid ranker's side; from then on [`SearchIndex::answer_ranking`] fuses.
    /// Only the first attachment counts (returns whether this one did).
    #[cfg(feature = "semantic")]
    pub fn attach_dense(&self, attached: Arc<super::hybrid::Attached>) -> bool {
        self.dense.set(attached).is_ok()
    }

    /// The hybrid ranker's side, when attached.
    #[cfg(feature = "semantic")]
    pub fn dense(&self) -> Option<&Arc<super::hybrid::Attached>> {
        self.dense.get()
    }

    /// The ranking a search answer gives, and which ranker gave it: the hybrid one once its
    /// tool vectors are attached, else [`SearchIndex::ranking`].
    pub fn answer_ranking(
        &self,
        query: &str,
        limit: usize,
        settings: &SearchSettings,
    ) -> (Ranking, RankerKind) {
        #[cfg(feature = "semantic")]
        if let Some(attached) = self.dense.get() {
            // A query the dense side has no weight for (Chinese) is not embedded.
            let vector = if super::hybrid::dense_weight(query, &attached.fusion) > 0.0 {
                attached.store.query(query)
            } else {
                Ok(Arc::from(Vec::new()))
            };
            match vector {
                Ok(vector) => {
                    let ranking = super::hybrid::hybrid_ranking(
                        self,
                        &attached.dense,
                        query,
                        &vector,
                        limit,
                        settings,
                        &attached.fusion,
                    );
                    return (ranking, RankerKind::Hybrid);
                }
                Err(error) => tracing::warn!(%error, "query not embedded: answered lexically"),
            }
        }
        (self.ranking(query, limit, settings), RankerKind::Lexical)
    }

    /// The view this index serves.
    pub fn view(&self) -> &Authorized {
        &self.view
    }

    /// Build statistics.
    pub fn stats(&self) -> IndexStats {
        self.stats
    }

    /// The allowed tool at `position` (view order).
    pub fn tool(&self, position: u32) -> Option<&Descriptor> {
        self.view.at(position)
    }

    /// Position (view order) of the allowed tool with exactly this id.
    pub fn position_of(&self, id: &str) -> Option<u32> {
        self.exact.id(id)
    }

    /// Positions of allowed tools whose id, name or external id equals `key` ignoring case.
    pub fn folded_matches(&self, key: &str) -> &[u32] {
        self.exact.folded(key)
    }

    /// Positions of the allowed tools `query` names exactly (`exact.rs`), closer forms first,
    /// then in view (id) order.
    pub(crate) fn named(&self, query: &str) -> Vec<u32> {
        let mut named = self.exact.named(query.trim());
        named.sort_unstable_by_key(|&(position, form)| (form, position));
        named.into_iter().map(|(position, _)| position).collect()
    }

    /// Ranks the allowed tools for `query` and returns at most `limit` of them, with
    /// the default settings (typo tolerance and the lexicon on).
    pub fn rank(&self, query: &str, limit: usize) -> Vec<RankedHit> {
        self.rank_with(query, limit, &SearchSettings::default())
    }

    /// The analyzed query as this index would score it: literal, translation and expansion
    /// terms, plus fuzzy candidates for words the index does not know (when enabled).
    pub fn query_analysis(&self, query: &str, settings: &SearchSettings) -> QueryAnalysis {
        MEMO.with(|memo| memo.borrow_mut().reset(self.address()));
        let mut analysis = analyze_query_in(
            query.trim(),
            AnalyzerOptions {
                multilingual: settings.multilingual,
                fuzzy_words: settings.typo_tolerance.then_some(MAX_FUZZY_QUERY_WORDS),
            },
            &|term| self.doc_freq(term) > 0,
        );
        if settings.typo_tolerance {
            self.add_fuzzy_candidates(&mut analysis);
        }
        analysis
    }

    /// [`SearchIndex::rank`] with explicit settings.
    pub fn rank_with(
        &self,
        query: &str,
        limit: usize,
        settings: &SearchSettings,
    ) -> Vec<RankedHit> {
        self.ranking(query, limit, settings).hits
    }

    /// Ranks the allowed tools for `query`: every tool the query names exactly (in any
    /// form of `exact.rs`) first, the closer forms first and each form in the ranker's order;
    /// then hits by tier (literal, translation or fuzzy, expansion), score and id. Returns at
    /// most `limit` hits and how many allowed tools matched ([`Ranking::matched`]).
    pub fn ranking(&self, query: &str, limit: usize, settings: &SearchSettings) -> Ranking {
        if limit == 0 {
            return Ranking::default();
        }
        let trimmed = query.trim();
        // (form, ranking key, position) of every tool the query names; the key is filled in
        // when the tool also matched a term, so that tools of one name keep the ranker's order.
        let mut named: Vec<(Form, u64, u32)> = self
            .exact
            .named(trimmed)
            .into_iter()
            .map(|(position, form)| (form, ranking_key(0, 0.0, position), position))
            .collect();
        let mut matched = named.len();
        let terms = self.query_analysis(trimmed, settings).terms;
        let wanted = limit.saturating_sub(named.len());
        let mut ranked: Vec<u64> = Vec::new();
        if !terms.is_empty() {
            SCRATCH.with(|scratch| {
                let mut scratch = scratch.borrow_mut();
                self.accumulate(&terms, &mut scratch);
                let Scratch {
                    scores,
                    tier,
                    touched,
                    keys,
                } = &mut *scratch;
                // One pass over the touched documents: each one's sortable key goes through a
                // min-heap of the `wanted` best (a key rarely beats the heap's smallest, so most
                // cost one comparison), and its accumulators are reset for the next query.
                keys.clear();
                for &position in touched.iter() {
                    let slot = position as usize;
                    let (score, best) = (scores[slot], tier[slot]);
                    scores[slot] = 0.0;
                    tier[slot] = 0;
                    if score <= 0.0 {
                        continue;
                    }
                    let key = ranking_key(best.saturating_sub(1), score, position);
                    if !named.is_empty()
                        && let Ok(at) = named.binary_search_by_key(&position, |n| n.2)
                    {
                        named[at].1 = key;
                        continue;
                    }
                    matched += 1;
                    if wanted == 0 {
                        continue;
                    }
                    if keys.len() < wanted {
                        keys.push(key);
                        let last = keys.len() - 1;
                        sift_up(keys, last);
                    } else if key > keys[0] {
                        keys[0] = key;
                        sift_down(keys, 0);
                    }
                }
                touched.clear();
                keys.sort_unstable_by(|a, b| b.cmp(a));
                ranked.extend_from_slice(keys);
            });
        }
        named.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let hits = named
            .iter()
            .take(limit)
            .map(|&(_, key, _)| ranked_hit(key, true))
            .chain(ranked.into_iter().map(|key| ranked_hit(key, false)))
            .collect();
        Ranking { hits, matched }
    }

    /// Adds every query term's weighted BM25 contribution into the scratch accumulators.
    fn accumulate(&self, terms: &[QueryTerm], scratch: &mut Scratch) {
        let documents = self.stats.documents;
        if documents == 0 {
            return;
        }
        if scratch.scores.len() < documents {
            scratch.scores.resize(documents, 0.0);
            scratch.tier.resize(documents, 0);
        }
        let mut infos: Vec<Option<tantivy::postings::TermInfo>> =
            Vec::with_capacity(self.segments.len());
        let Scratch {
            scores,
            tier: tiers,
            touched,
            ..
        } = scratch;
        let (scores, tiers) = (&mut scores[..documents], &mut tiers[..documents]);
        for term in terms {
            infos.clear();
            let doc_freq = self.term_infos(&term.term, &mut infos);
            if doc_freq == 0 {
                continue;
            }
            // BM25 with the term's query weight folded into the idf factor.
            let weight = idf(doc_freq, documents as u64) * (1.0 + BM25_K1) * term.weight;
            // Stored as tier + 1 so that 0 means "not touched yet".
            let tier = term.kind.tier() + 1;
            for (segment, info) in self.segments.iter().zip(&infos) {
                let Some(info) = info else { continue };
                // Whole blocks of 128 decoded documents and frequencies at a time.
                let Ok(mut block) = segment
                    .inverted
                    .read_block_postings_from_terminfo(info, IndexRecordOption::WithFreqs)
                else {
                    continue;
                };
                loop {
                    let docs = block.docs();
                    if docs.is_empty() {
                        break;
                    }
                    for (&doc, &tf) in docs.iter().zip(block.freqs()) {
                        let Some(&(position, norm)) = segment.docs.get(doc as usize) else {
                            continue;
                        };
                        let slot = position as usize;
                        let (Some(score), Some(best)) = (scores.get_mut(slot), tiers.get_mut(slot))
                        else {
                            continue;
                        };
                        if *best == 0 {
                            touched.push(position);
                        }
                        let tf = tf as f32;
                        *score += weight * tf / (tf + norm);
                        if *best < tier {
                            *best = tier;
                        }
                    }
                    block.advance();
                }
            }
        }
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Documents containing `term`, over all segments (through this query's memo).
    fn doc_freq(&self, term: &str) -> u64 {
        self.memoized(term, |_| ())
            .unwrap_or_else(|| self.lookup_term(term, &mut Vec::new()))
    }

    /// `term`'s document count and one dictionary answer per segment (pushed onto `out`),
    /// through this query's memo.
    fn term_infos(&self, term: &str, out: &mut Vec<Option<tantivy::postings::TermInfo>>) -> u64 {
        self.memoized(term, |infos| out.extend_from_slice(infos))
            .unwrap_or_else(|| self.lookup_term(term, out))
    }

    /// The memo's document count for `term` (its per-segment answers passed to `infos`), or
    /// `None` when the memo is another index's or the term's hash collides.
    fn memoized(
        &self,
        term: &str,
        infos: impl FnOnce(&[Option<tantivy::postings::TermInfo>]),
    ) -> Option<u64> {
        MEMO.with(|memo| {
            let mut memo = memo.borrow_mut();
            if memo.owner != self.address() {
                return None;
            }
            let at = memo.entry(self, term)?;
            let (_, doc_freq, first) = &memo.entries[at];
            infos(&memo.infos[*first..*first + self.segments.len()]);
            Some(*doc_freq)
        })
    }

    /// Looks `term` up in every segment's dictionary, pushing one answer per segment onto `out`;
    /// returns the documents containing it.
    fn lookup_term(&self, term: &str, out: &mut Vec<Option<tantivy::postings::TermInfo>>) -> u64 {
        let key = Term::from_field_text(self.body, term);
        let mut doc_freq = 0u64;
        for segment in &self.segments {
            let info = segment.inverted.get_term_info(&key).ok().flatten();
            doc_freq += info.as_ref().map_or(0, |i| u64::from(i.doc_freq));
            out.push(info);
        }
        doc_freq
    }

    /// Adds fuzzy candidates for the analysis's eligible words that the index does not know.
    fn add_fuzzy_candidates(&self, analysis: &mut QueryAnalysis) {
        if analysis.fuzzy.is_empty() || analysis.content_words > MAX_FUZZY_QUERY_WORDS {
            return;
        }
        let words = std::mem::take(&mut analysis.fuzzy);
        let mut looked_up = 0;
        let mut candidates: Vec<(usize, u64, String)> = Vec::new();
        for word in &words {
            if looked_up == MAX_FUZZY_WORDS {
                break;
            }
            if word.stems.iter().any(|stem| self.doc_freq(stem) > 0) {
                continue;
            }
            looked_up += 1;
            candidates.clear();
            self.fuzzy_candidates(word, &mut candidates);
            for (distance, _, term) in &candidates {
                let weight = FUZZY_WEIGHT[(*distance).clamp(1, 2) - 1];
                analysis.add(term, TermKind::Fuzzy, weight);
            }
        }
        analysis.fuzzy = words;
    }

    /// The best few index terms within the word's edit distance: (distance, doc freq, term).
    fn fuzzy_candidates(&self, word: &FuzzyWord, out: &mut Vec<(usize, u64, String)>) {
        let letters = word.word.chars().count();
        let allowed: u8 = if letters >= 8 { 2 } else { 1 };
        // The index holds stems: fuzz those (the light stemmer leaves most misspellings whole,
        // and strips a suffix the same way from a misspelled and a correct word) and, for long
        // words, the word itself ("calender" is one edit from "calendar", its stem two).
        // Distance 1 first; 2 only when 1 finds nothing (the distance-2 automaton visits far
        // more of the dictionary).
        let mut forms: Vec<&str> = word.stems.iter().map(String::as_str).collect();
        if allowed == 2 && !forms.contains(&word.word.as_str()) {
            forms.push(&word.word);
        }
        for distance in 1..=allowed {
            self.fuzzy_pass(&forms, distance, out);
            if !out.is_empty() {
                break;
            }
        }
        // Smallest distance first, then the most frequent term, then the term itself.
        out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        out.truncate(MAX_FUZZY_CANDIDATES);
    }

    /// Index terms within `max_distance` of any of `forms`, merged into `out`: distance 1
    /// from the deletion index, 2 (or a form too long for it) from tantivy's automaton.
    fn fuzzy_pass(&self, forms: &[&str], max_distance: u8, out: &mut Vec<(usize, u64, String)>) {
        let mut merge = |distance: usize, term: &str, doc_freq: u64| match out
            .iter_mut()
            .find(|(_, _, t)| t == term)
        {
            Some(existing) => {
                existing.0 = existing.0.min(distance);
                existing.1 += doc_freq;
            }
            None => out.push((distance, doc_freq, term.to_string())),
        };
        for &form in forms {
            if max_distance == 1 && DeletionIndex::covers(form) {
                let mut seen = Vec::new();
                // One entry per term over all segments: its doc freq is already the sum.
                self.deletion_index()
                    .within_one(form, &mut seen, |term, doc_freq| merge(1, term, doc_freq));
                continue;
            }
            self.automaton_terms(form, max_distance, &mut merge);
        }
    }

    /// Terms within `max_distance` (1 or 2) of `form` by tantivy's Levenshtein automaton over
    /// every segment's dictionary: `each(distance, term, doc_freq)` once per segment holding
    /// the term. At distance 2 only terms sharing the form's first letter.
    fn automaton_terms(
        &self,
        form: &str,
        max_distance: u8,
        each: &mut impl FnMut(usize, &str, u64),
    ) {
        let query = FuzzyTermQuery::new(Term::from_field_text(self.body, form), max_distance, true);
        let Ok(automaton) = query.automaton() else {
            return;
        };
        for segment in &self.segments {
            // The distance-2 pass keeps the first letter (its automaton would otherwise
            // walk most of the dictionary for every unknown long word, names included).
            let builder = segment.inverted.terms().search(&automaton);
            let first = form.chars().next().unwrap_or('a');
            let builder = match (max_distance, char::from_u32(first as u32 + 1)) {
                (2, Some(next)) => builder
                    .ge(first.encode_utf8(&mut [0; 4]).as_bytes())
                    .lt(next.encode_utf8(&mut [0; 4]).as_bytes()),
                _ => builder,
            };
            let Ok(mut stream) = builder.into_stream() else {
                continue;
            };
            while stream.advance() {
                let Ok(term) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                if term.chars().count() < MIN_CANDIDATE_CHARS {
                    continue;
                }
                let distance = strsim::osa_distance(form, term);
                if distance == 0 || distance > usize::from(max_distance) {
                    continue;
                }
                each(distance, term, u64::from(stream.value().doc_freq));
            }
        }
    }

    /// Every term of the index (≥ 3 characters) filed for distance-1 lookups; built on the
    /// first word that needs it.
    fn deletion_index(&self) -> &DeletionIndex {
        self.typos.get_or_init(|| {
            let mut terms: Vec<(String, u64)> = Vec::new();
            for segment in &self.segments {
                let Ok(mut stream) = segment.inverted.terms().stream() else {
                    continue;
                };
                while stream.advance() {
                    if let Ok(term) = std::str::from_utf8(stream.key()) {
                        terms.push((term.to_string(), u64::from(stream.value().doc_freq)));
                    }
                }
            }
            if self.segments.len() > 1 {
                // The same term in several segments: one entry, its frequencies summed.
                terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                terms.dedup_by(|later, kept| {
                    let same = later.0 == kept.0;
                    if same {
                        kept.1 += later.1;
                    }
                    same
                });
            }
            DeletionIndex::build(terms)
        })
    }

    /// Ranks and renders compact hits.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        self.rank(query, limit)
            .into_iter()
            .filter_map(|ranked| self.hit(ranked.position))
            .collect()
    }

    /// The compact hit of the tool at `position`.
    pub fn hit(&self, position: u32) -> Option<Hit> {
        let tool = self.tool(position)?;
        let hints = self.hints(position)?;
        Some(Hit::new(tool, &hints))
    }

    /// The signatures of the tool at `position`, rendered once per index.
    pub(crate) fn hints(&self, position: u32) -> Option<Arc<Hints>> {
        let tool = self.tool(position)?;
        let slot = self.hints.get(position as usize)?;
        Some(slot.get_or_init(|| Arc::new(Hints::for_tool(tool))).clone())
    }
}

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// BM25 length normalization.
pub const BM25_B: f32 = 0.75;

fn length_norms(average_length: f32) -> [f32; 256] {
    let mut table = [0f32; 256];
    for (id, slot) in table.iter_mut().enumerate() {
        let length = tantivy::fieldnorm::FieldNormReader::id_to_fieldnorm(id as u8) as f32;
        *slot = BM25_K1 * (1.0 - BM25_B + BM25_B * length / average_length.max(f32::MIN_POSITIVE));
    }
    table
}

/// Restores the min-heap order of `heap` after `heap[at]` was appended.
/// One sortable key per candidate, larger is better: the tier (bits 62–63), then the score's
/// bits (monotonic for positive floats, sign bit always 0: bits 31–61), then the inverted
/// position so that the smaller id wins ties.
fn ranking_key(tier: u8, score: f32, position: u32) -> u64 {
    (u64::from(tier & 3) << 62)
        | (u64::from(score.to_bits() & 0x7FFF_FFFF) << 31)
        | u64::from(POSITION_MASK - (position & POSITION_MASK))
}

/// The hit a ranking key stands for.
fn ranked_hit(key: u64, exact: bool) -> RankedHit {
    RankedHit {
        position: POSITION_MASK - (key as u32 & POSITION_MASK),
        score: f32::from_bits(((key >> 31) as u32) & 0x7FFF_FFFF),
        exact,
        literal: key >> 62 == 2,
        tier: (key >> 62) as u8,
    }
}

fn sift_up(heap: &mut [u64], mut at: usize) {
    while at > 0 {
        let parent = (at - 1) / 2;
        if heap[parent] <= heap[at] {
            break;
        }
        heap.swap(parent, at);
        at = parent;
    }
}

/// Restores the min-heap order of `heap` after `heap[at]` grew.
fn sift_down(heap: &mut [u64], mut at: usize) {
    loop {
        let (left, right) = (2 * at + 1, 2 * at + 2);
        let mut smallest = at;
        if left < heap.len() && heap[left] < heap[smallest] {
            smallest = left;
        }
        if right < heap.len() && heap[right] < heap[smallest] {
            smallest = right;
        }
        if smallest == at {
            return;
        }
        heap.swap(at, smallest);
        at = smallest;
    }
}

/// `ln(1 + (N - n + 0.5) / (n + 0.5))`.
fn idf(doc_freq: u64, documents: u64) -> f32 {
    let n = doc_freq.min(documents) as f32;
    (1.0 + (documents as f32 - n + 0.5) / (n + 0.5)).ln()
}

/// Writes the bag of words of one tool.
fn document_text(tool: &Descriptor, out: &mut String) {
    let mut push = |text: &str| {
        if !text.is_empty() {
            out.push_str(text);
            out.push('\n');
        }
    };
    push(&tool.name);
    push(&tool.id);
    if let Some(external) = &tool.external_id {
        push(external);
    }
    if let Some(label) = &tool.label {
        push(label);
    }
    push(&tool.description);
    if tool.is_trusted() {
        let mut budget = PARAM_NODE_CAP;
        parameter_text(&tool.input_schema, 1, &mut budget, out);
    }
}

/// Parameter names and descriptions through `properties` and `items`, depth ≤ 4, bounded.
fn parameter_text(schema: &Value, depth: usize, budget: &mut usize, out: &mut String) {
    if depth > PARAM_DEPTH || *budget == 0 {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            out.push_str(name);
            out.push('\n');
            if let Some(Value::String(description)) = property.get("description") {
                out.push_str(description);
                out.push('\n');
            }
            parameter_text(property, depth + 1, budget, out);
        }
    }
    if let Some(items) = map.get("items")
        && *budget > 0
    {
        *budget -= 1;
        parameter_text(items, depth + 1, budget, out);
    }
}

/// Indexes shared per (snapshot fingerprint, policy fingerprint), built once per key
/// even when several callers ask at the same moment; the least recently used is evicted first.
pub struct IndexCache {
    entries: OnceCache<(Fingerprint, u64), Arc<SearchIndex>>,
    builds: AtomicU64,
    #[cfg(feature = "semantic")]
    semantic: Option<super::hybrid::Semantic>,
}

/// How many (snapshot, policy) indexes a cache keeps.
pub const CACHE_CAPACITY: usize = 8;

impl Default for IndexCache {
    fn default() -> Self {
        IndexCache {
            entries: OnceCache::new(CACHE_CAPACITY),
            builds: AtomicU64::new(0),
            #[cfg(feature = "semantic")]
            semantic: None,
        }
    }
}

impl IndexCache {
    /// An empty cache.
    pub fn new() -> Self {
        IndexCache::default()
    }

    /// A cache whose indexes get the hybrid ranker: each new index's tool vectors come from
    /// `semantic`'s store, before [`IndexCache::get`] returns it, or in the background (the
    /// index answers lexically until they are ready).
    #[cfg(feature = "semantic")]
    pub fn with_semantic(mut self, semantic: super::hybrid::Semantic) -> Self {
        self.semantic = Some(semantic);
        self
    }

    /// How many indexes this cache has built (a build shared by concurrent callers counts once).
    pub fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }

    /// The index for `view`, built on first use and shared afterwards. A caller that finds the
    /// build of its key under way waits for it.
    pub fn get(&self, view: &Authorized) -> Result<Arc<SearchIndex>, BuildError> {
        self.entries.get_or_try_init(view.cache_key(), || {
            let index = Arc::new(SearchIndex::build(view)?);
            self.builds.fetch_add(1, Ordering::Relaxed);
            #[cfg(feature = "semantic")]
            if let Some(semantic) = &self.semantic {
                semantic.attach(&index);
            }
            Ok(index)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::catalog::{CatalogSnapshot, Descriptor, Source};
    use crate::policy::Policy;

    /// Lowercase words of 3–9 letters: short enough to collide at edit distance 1 or 2.
    fn word() -> impl Strategy<Value = String> {
        "[a-z]{3,9}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Typo tolerance never touches a query made only of correctly spelled indexed words:
        /// the ranking is exactly the same with it on and off.
        #[test]
        fn indexed_words_rank_the_same_with_typo_tolerance_on_and_off(
            docs in prop::collection::vec(prop::collection::vec(word(), 1..8), 2..24),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 1..6),
        ) {
            let tools: Vec<Descriptor> = docs
                .iter()
                .enumerate()
                .map(|(i, words)| {
                    Descriptor::new(Source::Plugin, "p", &format!("tool{i}"))
                        .description(words.join(" "))
                })
                .collect();
            let view = Authorized::new(CatalogSnapshot::build(tools), Policy::allow_all());
            let index = SearchIndex::build(&view).unwrap();
            let vocabulary: Vec<&String> = docs.iter().flatten().collect();
            let query: Vec<&str> = picks
                .iter()
                .map(|p| vocabulary[p.index(vocabulary.len())].as_str())
                .collect();
            let query = query.join(" ");
            let on = SearchSettings { typo_tolerance: true, ..SearchSettings::default() };
            let off = SearchSettings { typo_tolerance: false, ..SearchSettings::default() };
            prop_assert_eq!(index.rank_with(&query, 20, &on), index.rank_with(&query, 20, &off));
        }
    }

    /// The index's distance-1 candidates of `form`, from the deletion index and from the
    /// automaton: (term, doc freq), sorted.
    type Candidates = Vec<(String, u64)>;

    fn both_ways(index: &SearchIndex, form: &str) -> (Candidates, Candidates) {
        let mut deleted: Candidates = Vec::new();
        index
            .deletion_index()
            .within_one(form, &mut Vec::new(), |t, f| {
                deleted.push((t.to_string(), f))
            });
        let mut automaton: Candidates = Vec::new();
        index.automaton_terms(form, 1, &mut |_, t, f| automaton.push((t.to_string(), f)));
        deleted.sort();
        automaton.sort();
        (deleted, automaton)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The deletion index finds exactly the terms tantivy's automaton finds at distance 1,
        /// with the same document frequencies: for misspellings of indexed words (one
        /// substitution, deletion, insertion or transposition) and for unrelated words.
        #[test]
        fn the_deletion_index_agrees_with_the_automaton(
            docs in prop::collection::vec(prop::collection::vec("[a-dé]{2,7}", 1..10), 2..40),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..5, any::<prop::sample::Index>(), "[a-eé]"), 1..24),
        ) {
            let tools: Vec<Descriptor> = docs
                .iter()
                .enumerate()
                .map(|(i, words)| {
                    Descriptor::new(Source::Plugin, "p", &format!("t{i}")).description(words.join(" "))
                })
                .collect();
            let view = Authorized::new(CatalogSnapshot::build(tools), Policy::allow_all());
            let index = SearchIndex::build(&view).unwrap();
            let vocabulary: Vec<&String> = docs.iter().flatten().collect();
            for (word, kind, at, letter) in &edits {
                let mut chars: Vec<char> = vocabulary[word.index(vocabulary.len())].chars().collect();
                let at = at.index(chars.len());
                let letter = letter.chars().next().unwrap();
                match kind {
                    0 => chars[at] = letter,
                    1 => { chars.remove(at); }
                    2 => chars.insert(at, letter),
                    3 if at + 1 < chars.len() => chars.swap(at, at + 1),
                    _ => chars.push(letter),
                }
                let form: String = chars.into_iter().collect();
                let (deleted, automaton) = both_ways(&index, &form);
                prop_assert_eq!(deleted, automaton, "{}", form);
            }
        }
    }

    #[test]
    fn an_unknown_word_gets_fuzzy_candidates_below_literal_terms() {
        let tools = vec![
            Descriptor::new(Source::Plugin, "p", "create_issue").description("Create an issue"),
            Descriptor::new(Source::Plugin, "p", "create_page").description("Create a page"),
        ];
        let view = Authorized::new(CatalogSnapshot::build(tools), Policy::allow_all());
        let index = SearchIndex::build(&view).unwrap();
        let analysis = index.query_analysis("create isue", &SearchSettings::default());
        let fuzzy: Vec<&QueryTerm> = analysis
            .terms
            .iter()
            .filter(|t| t.kind == TermKind::Fuzzy)
            .collect();
        assert_eq!(fuzzy.len(), 1, "{:?}", analysis.terms);
        assert_eq!(fuzzy[0].term, "issu");
        assert!(fuzzy[0].weight < 1.0);
        let ranked = index.rank("create isue", 5);
        assert_eq!(index.tool(ranked[0].position).unwrap().name, "create_issue");
        // Off: the unknown word adds nothing.
        let off = SearchSettings {
            typo_tolerance: false,
            ..SearchSettings::default()
        };
        assert!(
            index
                .query_analysis("create isue", &off)
                .terms
                .iter()
                .all(|t| t.kind != TermKind::Fuzzy)
        );
    }
}
