//! Hybrid ranking (feature `semantic`): the lexical ranking and sentence-vector cosine fused
//! over the allowed tools of one index.
//!
//! Owns: [`DenseIndex`] (one unit vector per allowed tool, in the index's positions, so a
//! denied tool has no row: it can neither be a candidate nor move a normalisation), the text a
//! tool is embedded from ([`embed_text`]: name, owner and description — never a schema, for
//! trusted and untrusted tools alike), and [`hybrid_ranking`]: every tool the query names
//! exactly first, as in the lexical ranking; then the union of the lexical top
//! [`Fusion::candidates`] and the dense top as many whose cosine reaches
//! [`Fusion::dense_match`], ordered by `w · lexical + (1 − w) · dense`, each side min-max
//! normalised over its own top list (a candidate absent from a side's list scores 0 there),
//! ties by id.
//!
//! The dense side's weight falls with the share of the query's letters outside Latin script
//! ([`dense_share`]): the model is English, so a Chinese query is ranked by the lexical side
//! (its lexicon translations) alone, while a German, French or Indonesian query keeps both.
//!
//! Never does: embed (it is given vectors), or decide policy.

use std::sync::{Arc, Mutex};

pub use super::index::RankerKind;
use super::index::{RankedHit, Ranking, SearchIndex, SearchSettings};
use super::semantic::{EmbedError, Embedded, VectorStore, cosine, query_pool};
use crate::catalog::Descriptor;
use crate::config::SemanticSettings;
use crate::sync::Locked;

/// How the two sides are fused. The default weight was chosen on the dev splits of the four
/// evaluation sets (one weight for all; NDCG@10 over lexical-weight 0.65–0.8, every set
/// separately: 0.7 is the largest mean gain with no set below the lexical ranker).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The lexical side's weight `w` in `w · lexical + (1 − w) · dense` (0–1).
    pub lexical_weight: f32,
    /// Candidates taken from each side's top list.
    pub candidates: usize,
    /// A tool the lexical side did not match is a candidate (and counts as matched) only when
    /// its cosine is at least this: unrelated tools are not shown just because every tool has
    /// a cosine.
    pub dense_match: f32,
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion {
            lexical_weight: 0.7,
            candidates: 50,
            dense_match: 0.2,
        }
    }
}

/// The text a tool is embedded from: `name (owner): description`. The same for trusted and
/// untrusted tools: no schema text.
pub fn embed_text(tool: &Descriptor) -> String {
    let description = tool.description.trim();
    let name = tool.name.trim();
    let owner = tool.owner.trim();
    let mut text = String::with_capacity(name.len() + owner.len() + description.len() + 8);
    text.push_str(name);
    if !owner.is_empty() && owner != name {
        text.push_str(" (");
        text.push_str(owner);
        text.push(')');
    }
    if !description.is_empty() {
        text.push_str(": ");
        text.push_str(description);
    }
    text
}

/// The hybrid side of one index: its tool vectors, the store that embeds queries, the fusion.
#[derive(Debug)]
pub struct Attached {
    /// The tool vectors, in the index's positions.
    pub dense: DenseIndex,
    /// Embeds queries.
    pub store: Arc<VectorStore>,
    /// How the sides are fused.
    pub fusion: Fusion,
}

/// What an [`IndexCache`](super::IndexCache) needs to give its indexes the hybrid ranker.
#[derive(Debug, Clone)]
pub struct Semantic {
    /// The vector store (model, cache).
    pub store: Arc<VectorStore>,
    /// How the sides are fused.
    pub fusion: Fusion,
    /// Embed a new index's tools in the background (long-running `serve` and `agent`: the
    /// index answers lexically meanwhile) instead of before the index is handed out (one-shot
    /// commands).
    pub background: bool,
}

/// One embedding at a time in the background, whatever the number of indexes built: the
/// pool is one thread's worth of CPU.
static BACKGROUND: Mutex<()> = Mutex::new(());

impl Semantic {
    /// Embeds `index`'s tools (cached vectors first) and attaches the result, now or in the
    /// background. A failure is logged; the index keeps answering lexically, and says so.
    pub fn attach(&self, index: &Arc<SearchIndex>) {
        let (index, store, fusion) = (index.clone(), self.store.clone(), self.fusion);
        let work = move || {
            let started = std::time::Instant::now();
            match DenseIndex::build(&index, &store) {
                Ok((dense, embedded)) => {
                    tracing::info!(
                        tools = dense.len(),
                        cached = embedded.cached,
                        computed = embedded.computed,
                        ms = started.elapsed().as_millis() as u64,
                        "tool vectors ready: hybrid ranking"
                    );
                    index.attach_dense(Arc::new(Attached {
                        dense,
                        store,
                        fusion,
                    }));
                }
                Err(error) => {
                    tracing::warn!(%error, "tool vectors not computed: lexical ranking only")
                }
            }
        };
        if self.background {
            let spawned = std::thread::Builder::new()
                .name("toolsearch-embed".into())
                .spawn(move || {
                    let _one_at_a_time = BACKGROUND.locked();
                    work();
                });
            if let Err(error) = spawned {
                tracing::warn!(%error, "embedding thread not started: lexical ranking only");
            }
        } else {
            work();
        }
    }
}

/// Tools from which the cosine scan is spread over the query pool: below, handing it over costs
/// more than the scan (a few microseconds per thousand tools).
const PARALLEL_SCAN: usize = 4096;

/// One unit vector per allowed tool of an index, in its positions.
#[derive(Debug, Clone)]
pub struct DenseIndex {
    dimension: usize,
    rows: Vec<f32>,
}

impl DenseIndex {
    /// The vectors of `index`'s tools from `store` (cached, or embedded now), and how many
    /// were cached or computed.
    pub fn build(index: &SearchIndex, store: &VectorStore) -> Result<(Self, Embedded), EmbedError> {
        let count = index.stats().documents;
        let texts: Vec<String> = (0..count as u32)
            .filter_map(|position| index.tool(position))
            .map(embed_text)
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embedded = store.vectors(&refs)?;
        let dimension = store.embedder().dimension();
        let mut rows = Vec::with_capacity(count * dimension);
        for vector in &embedded.vectors {
            rows.extend_from_slice(vector);
        }
        let dense = DenseIndex { dimension, rows };
        let embedded = Embedded {
            vectors: Vec::new(),
            ..embedded
        };
        Ok((dense, embedded))
    }

    /// Tools with a vector.
    pub fn len(&self) -> usize {
        self.rows.len().checked_div(self.dimension).unwrap_or(0)
    }

    /// Whether no tool has a vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cosine of `query` with every tool, in position order. The scan is bound by memory
    /// bandwidth, so it is spread over the query pool (each core brings its own).
    pub fn cosines(&self, query: &[f32]) -> Vec<f32> {
        use rayon::prelude::*;
        if query.len() != self.dimension || self.dimension == 0 {
            return vec![0.0; self.len()];
        }
        let rows = self.rows.chunks_exact(self.dimension);
        if rows.len() < PARALLEL_SCAN {
            return rows.map(|row| cosine(row, query)).collect();
        }
        let scan = || {
            self.rows
                .par_chunks_exact(self.dimension)
                .with_min_len(PARALLEL_SCAN / 4)
                .map(|row| cosine(row, query))
                .collect()
        };
        match query_pool() {
            Some(pool) => pool.install(scan),
            None => rows.map(|row| cosine(row, query)).collect(),
        }
    }
}

/// The share (0–1) of the dense side's weight a query keeps: its letters in Latin script over
/// all its letters (1 for a query without letters).
pub fn dense_share(query: &str) -> f32 {
    let (mut latin, mut letters) = (0usize, 0usize);
    for c in query.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if c.is_ascii_alphabetic() || ('\u{00C0}'..='\u{024F}').contains(&c) {
            latin += 1;
        }
    }
    if letters == 0 {
        1.0
    } else {
        latin as f32 / letters as f32
    }
}

/// The dense side's weight for `query`: `1 − w`, times its [`dense_share`]. At 0 the ranking
/// is the lexical one and the query needs no vector.
pub fn dense_weight(query: &str, fusion: &Fusion) -> f32 {
    (1.0 - fusion.lexical_weight.clamp(0.0, 1.0)) * dense_share(query)
}

/// Ranks `index`'s tools for `query` by fusing its lexical ranking with the cosine of
/// `query_vector` over `dense` (see the module doc). Returns at most `limit` hits; `matched`
/// counts the lexically matched tools plus the dense-only candidates (those at or above
/// [`Fusion::dense_match`]).
pub fn hybrid_ranking(
    index: &SearchIndex,
    dense: &DenseIndex,
    query: &str,
    query_vector: &[f32],
    limit: usize,
    settings: &SearchSettings,
    fusion: &Fusion,
) -> Ranking {
    if limit == 0 {
        return Ranking::default();
    }
    let depth = fusion.candidates.max(limit);
    let lexical = index.ranking(query, depth, settings);
    let dense_weight = dense_weight(query, fusion);
    if dense.len() != index.stats().documents || dense_weight <= 0.0 {
        let mut lexical = lexical;
        lexical.hits.truncate(limit);
        return lexical;
    }
    let lexical_weight = 1.0 - dense_weight;
    let cosines = dense.cosines(query_vector);

    // The dense top list.
    let mut dense_top: Vec<u32> = (0..cosines.len() as u32).collect();
    let take = depth.min(dense_top.len());
    if take < dense_top.len() {
        dense_top.select_nth_unstable_by(take, |&a, &b| {
            cosines[b as usize].total_cmp(&cosines[a as usize])
        });
        dense_top.truncate(take);
    }
    let (dense_min, dense_max) = min_max(dense_top.iter().map(|&p| cosines[p as usize]));
    let ranked_lexical: Vec<&RankedHit> = lexical.hits.iter().filter(|h| !h.exact).collect();
    let (lexical_min, lexical_max) = min_max(ranked_lexical.iter().map(|h| h.score));

    let normalise = |value: f32, min: f32, max: f32| {
        if max > min {
            ((value - min) / (max - min)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    };
    // position → (fused score, the lexical hit if any)
    let mut fused: Vec<(f32, u32, Option<&RankedHit>)> = Vec::with_capacity(depth * 2);
    let exact: Vec<&RankedHit> = lexical.hits.iter().filter(|h| h.exact).collect();
    let is_exact = |position: u32| exact.iter().any(|h| h.position == position);
    let mut in_lexical = rustc_hash::FxHashSet::default();
    for hit in &ranked_lexical {
        in_lexical.insert(hit.position);
        // A tool outside the dense top list has a cosine at most its minimum: 0 here.
        let dense_score = normalise(cosines[hit.position as usize], dense_min, dense_max);
        let score = lexical_weight * normalise(hit.score, lexical_min, lexical_max)
            + dense_weight * dense_score;
        fused.push((score, hit.position, Some(hit)));
    }
    let mut dense_only_matched = 0;
    for &position in &dense_top {
        if in_lexical.contains(&position) || is_exact(position) {
            continue;
        }
        let cos = cosines[position as usize];
        if cos < fusion.dense_match {
            continue;
        }
        dense_only_matched += 1;
        let score = dense_weight * normalise(cos, dense_min, dense_max);
        fused.push((score, position, None));
    }
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

    let hits = exact
        .iter()
        .map(|h| (*h).clone())
        .chain(fused.into_iter().map(|(score, position, hit)| match hit {
            Some(hit) => RankedHit {
                score,
                ..hit.clone()
            },
            None => RankedHit {
                position,
                score,
                exact: false,
                literal: false,
                tier: 0,
            },
        }))
        .take(limit)
        .collect();
    Ranking {
        hits,
        matched: lexical.matched + dense_only_matched,
    }
}

fn min_max(values: impl Iterator<Item = f32>) -> (f32, f32) {
    values.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// The command-line flags of hybrid search, shared by every command that searches.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SemanticArgs {
    /// Hybrid search's model: a sentence-transformers directory (config.json, tokenizer.json,
    /// model.safetensors; scripts/fetch-model.sh fetches all-MiniLM-L6-v2). Default:
    /// $TOOLSEARCH_SEMANTIC_MODEL.
    #[arg(long, value_name = "DIR")]
    pub semantic_model: Option<std::path::PathBuf>,
    /// Use a model the manifest of known models does not know, or whose files differ from the
    /// published ones.
    #[arg(long)]
    pub semantic_unverified: bool,
    /// Where tool vectors are cached. Default: $TOOLSEARCH_CACHE_DIR, else
    /// $XDG_CACHE_HOME/toolsearch, else ~/.cache/toolsearch.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<std::path::PathBuf>,
    /// The ranker: lexical or hybrid. Default: hybrid when a model is given, else lexical.
    #[arg(long, value_enum)]
    pub ranker: Option<RankerKind>,
}

/// Hybrid search cannot start as asked. Never answered by falling back to lexical search.
#[derive(Debug, thiserror::Error)]
pub enum HybridError {
    /// `--ranker hybrid` without a model.
    #[error(
        "--ranker hybrid needs a model: --semantic-model DIR, TOOLSEARCH_SEMANTIC_MODEL or the config's tools.toolSearch.semantic.model (scripts/fetch-model.sh fetches all-MiniLM-L6-v2)"
    )]
    NoModel,
    /// The model directory is missing, unknown or broken.
    #[error(transparent)]
    Model(#[from] super::semantic::ModelError),
    /// The cache directory cannot be created.
    #[error(transparent)]
    Cache(#[from] super::semantic::CacheError),
}

/// A non-empty environment variable as a path.
fn env_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

impl SemanticArgs {
    /// The model directory: the flag, else `TOOLSEARCH_SEMANTIC_MODEL`, else the config's.
    pub fn model(&self, config: &SemanticSettings) -> Option<std::path::PathBuf> {
        self.semantic_model
            .clone()
            .or_else(|| env_path("TOOLSEARCH_SEMANTIC_MODEL"))
            .or_else(|| config.model.clone())
    }

    /// The ranker these flags (and the config) ask for.
    pub fn ranker_kind(&self, config: &SemanticSettings) -> RankerKind {
        self.ranker.unwrap_or(if self.model(config).is_some() {
            RankerKind::Hybrid
        } else {
            RankerKind::Lexical
        })
    }

    /// The cache root: the flag, else `TOOLSEARCH_CACHE_DIR`, else the config's, else the
    /// user's cache directory.
    pub fn cache_root(&self, config: &SemanticSettings) -> Option<std::path::PathBuf> {
        self.cache_dir
            .clone()
            .or_else(|| env_path("TOOLSEARCH_CACHE_DIR"))
            .or_else(|| config.cache_dir.clone())
            .or_else(super::semantic::default_cache_root)
    }

    /// The vector store of the hybrid ranker, or `None` for the lexical one. Loads the model
    /// (checked against the manifest unless `--semantic-unverified` or the config's
    /// `unverified`) and reads the cache. `config` is `tools.toolSearch.semantic`.
    pub fn open(
        &self,
        config: &SemanticSettings,
    ) -> Result<Option<std::sync::Arc<VectorStore>>, HybridError> {
        if self.ranker_kind(config) == RankerKind::Lexical {
            return Ok(None);
        }
        let model = self.model(config).ok_or(HybridError::NoModel)?;
        let trust = if self.semantic_unverified || config.unverified {
            super::semantic::Trust::Unverified
        } else {
            super::semantic::Trust::Verified
        };
        let embedder = std::sync::Arc::new(super::semantic::Embedder::open(&model, trust)?);
        let store = VectorStore::open(embedder, self.cache_root(config).as_deref())?;
        Ok(Some(std::sync::Arc::new(store)))
    }
}
