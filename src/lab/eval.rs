//! `toolsearch eval`: search quality (and the latency of the searches it ran) on catalogs and
//! query files.
//!
//! For each query the top 20 are ranked and compared, by the catalog lines' own ids
//! (`external_id`), with the gold ids. Metrics are macro-averaged over queries with binary
//! relevance: Recall@k = |gold ∩ top-k| / |gold|; Hit@k = 1 when any gold id is in the top k;
//! NDCG@10 with the ideal DCG over min(|gold|, 10) items; MRR = 1 / rank of the first gold tool
//! in the top 20 (0 if none).
//!
//! Modes:
//! - one `--queries` file against the `--catalog` files (merged; the demo catalog without any):
//!   one flat table;
//! - several `--queries` files against the same merged catalogs: a table per file plus the
//!   macro average over files;
//! - `--pooled`: `--catalog`/`--queries` pairs, in order; every set's queries are searched
//!   against the union of all catalogs, each tool's id prefixed `<set>:` (the set is the
//!   catalog's folder for a file named `catalog.*`, its file stem otherwise, `demo` for the
//!   embedded demo catalog), and gold ids are prefixed the same way.
//!
//! Query lines may carry `"lang"`; then every table also breaks down by language. Latency is
//! the wall time of each `rank` call (analysis, fuzzy and lexicon lookups, scoring, top-k),
//! reported as p50 and p99 in microseconds.
//!
//! Never does: change the ranker. `--no-typos` and `--no-lexicon` only turn typo tolerance or
//! the lexicon off, for comparisons.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{CatalogSnapshot, Descriptor};
use crate::policy::{Authorized, Policy};
use crate::search::{RankedHit, SearchIndex, SearchSettings};

/// How many results each query ranks.
const RANKED: usize = 20;

/// The `--catalog` value that names the embedded demo catalog.
pub(crate) const DEMO: &str = "demo";

#[derive(Debug, Deserialize)]
struct QueryLine {
    #[serde(default)]
    qid: Option<Value>,
    query: String,
    gold: Vec<String>,
    #[serde(default)]
    lang: Option<String>,
}

/// Aggregated metrics over a query set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    /// Queries evaluated.
    pub queries: usize,
    /// Mean Recall@1.
    pub recall_1: f64,
    /// Mean Recall@5.
    pub recall_5: f64,
    /// Mean Recall@10.
    pub recall_10: f64,
    /// Share of queries with a gold tool at rank 1.
    pub hit_1: f64,
    /// Share of queries with a gold tool in the top 5.
    pub hit_5: f64,
    /// Share of queries with a gold tool in the top 10.
    pub hit_10: f64,
    /// Mean NDCG@10.
    pub ndcg_10: f64,
    /// Mean reciprocal rank within the top 20.
    pub mrr: f64,
}

/// One query's scores, before averaging.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Scores {
    recall_1: f64,
    recall_5: f64,
    recall_10: f64,
    hit_1: f64,
    hit_5: f64,
    hit_10: f64,
    ndcg_10: f64,
    mrr: f64,
}

impl Metrics {
    fn add(&mut self, s: &Scores) {
        self.queries += 1;
        self.recall_1 += s.recall_1;
        self.recall_5 += s.recall_5;
        self.recall_10 += s.recall_10;
        self.hit_1 += s.hit_1;
        self.hit_5 += s.hit_5;
        self.hit_10 += s.hit_10;
        self.ndcg_10 += s.ndcg_10;
        self.mrr += s.mrr;
    }

    fn merge(&mut self, sums: &Metrics) {
        self.queries += sums.queries;
        self.recall_1 += sums.recall_1;
        self.recall_5 += sums.recall_5;
        self.recall_10 += sums.recall_10;
        self.hit_1 += sums.hit_1;
        self.hit_5 += sums.hit_5;
        self.hit_10 += sums.hit_10;
        self.ndcg_10 += sums.ndcg_10;
        self.mrr += sums.mrr;
    }

    fn averaged(mut self) -> Metrics {
        if self.queries == 0 {
            return self;
        }
        let n = self.queries as f64;
        for value in [
            &mut self.recall_1,
            &mut self.recall_5,
            &mut self.recall_10,
            &mut self.hit_1,
            &mut self.hit_5,
            &mut self.hit_10,
            &mut self.ndcg_10,
            &mut self.mrr,
        ] {
            *value /= n;
        }
        self
    }

    /// The unweighted mean of several tables (each set counts once).
    fn macro_of(tables: &[Metrics]) -> Metrics {
        let mut sum = Metrics::default();
        for t in tables {
            sum.merge(t);
        }
        let n = tables.len().max(1) as f64;
        Metrics {
            queries: sum.queries,
            recall_1: sum.recall_1 / n,
            recall_5: sum.recall_5 / n,
            recall_10: sum.recall_10 / n,
            hit_1: sum.hit_1 / n,
            hit_5: sum.hit_5 / n,
            hit_10: sum.hit_10 / n,
            ndcg_10: sum.ndcg_10 / n,
            mrr: sum.mrr / n,
        }
    }

    fn json(&self) -> Value {
        json!({
            "queries": self.queries,
            "recall@1": self.recall_1,
            "recall@5": self.recall_5,
            "recall@10": self.recall_10,
            "hit@1": self.hit_1,
            "hit@5": self.hit_5,
            "hit@10": self.hit_10,
            "ndcg@10": self.ndcg_10,
            "mrr": self.mrr,
        })
    }
}

/// Scores one ranked list of ids against gold ids. An id ranked twice (a catalog with duplicate
/// ids: its lines keep their own id, the catalog's `~2` suffix is only on the internal id) counts
/// at its first rank only, so every metric stays in [0, 1].
fn score(ranked: &[&str], gold: &HashSet<&str>) -> Scores {
    if gold.is_empty() {
        return Scores::default();
    }
    let mut seen = HashSet::with_capacity(ranked.len());
    let ranked: Vec<&str> = ranked
        .iter()
        .copied()
        .filter(|id| seen.insert(*id))
        .collect();
    let ranked = ranked.as_slice();
    let hits_at = |k: usize| {
        ranked
            .iter()
            .take(k)
            .filter(|id| gold.contains(*id))
            .count()
    };
    let g = gold.len() as f64;
    let recall = |k: usize| hits_at(k) as f64 / g;
    let hit = |k: usize| if hits_at(k) > 0 { 1.0 } else { 0.0 };
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .filter(|(_, id)| gold.contains(*id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..gold.len().min(10))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let mrr = ranked
        .iter()
        .take(RANKED)
        .position(|id| gold.contains(id))
        .map_or(0.0, |p| 1.0 / (p + 1) as f64);
    Scores {
        recall_1: recall(1),
        recall_5: recall(5),
        recall_10: recall(10),
        hit_1: hit(1),
        hit_5: hit(5),
        hit_10: hit(10),
        ndcg_10: dcg / ideal,
        mrr,
    }
}

/// The result of evaluating one query file.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// Metrics over every query of the file.
    pub metrics: Metrics,
    /// Sums (not yet averaged) per `lang` field; queries without one are under `""`.
    pub language_sums: BTreeMap<String, Metrics>,
    /// Wall time of each search, in microseconds.
    pub latencies_us: Vec<f64>,
}

/// A ranker for [`evaluate`]: a query → its ranked hits (at least the top 20).
pub type RankFn<'a> = dyn Fn(&str) -> Result<Vec<RankedHit>> + 'a;

/// Evaluates `rank` (the lexical or the hybrid ranker over `index`'s positions) on the queries
/// in `queries_path`; gold ids get `gold_prefix` prepended.
pub fn evaluate(
    index: &SearchIndex,
    rank: &RankFn<'_>,
    queries_path: &Path,
    gold_prefix: &str,
    settings: &SearchSettings,
    per_query: bool,
) -> Result<Evaluation> {
    let text = crate::config::input::read_text(
        queries_path,
        crate::config::input::MAX_QUERY_FILE_BYTES,
        "queries file",
    )
    .map_err(anyhow::Error::msg)?;
    let mut out = Evaluation::default();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let query: QueryLine = serde_json::from_str(line).with_context(|| {
            format!(
                "{}: line {}: expected {{\"qid\", \"query\", \"gold\": [ids], \"lang\"?}}",
                queries_path.display(),
                number + 1
            )
        })?;
        let started = Instant::now();
        let ranked = rank(&query.query)?;
        out.latencies_us
            .push(started.elapsed().as_secs_f64() * 1_000_000.0);
        let ranked: Vec<&str> = ranked
            .iter()
            .filter_map(|r| index.tool(r.position))
            .map(|t| t.external_id.as_deref().unwrap_or(t.id.as_str()))
            .collect();
        let gold_ids: Vec<String> = query
            .gold
            .iter()
            .map(|g| format!("{gold_prefix}{g}"))
            .collect();
        let gold: HashSet<&str> = gold_ids.iter().map(String::as_str).collect();
        let scores = score(&ranked, &gold);
        if per_query {
            let terms: Vec<Value> = index
                .query_analysis(&query.query, settings)
                .terms
                .iter()
                .map(|t| json!([t.term, format!("{:?}", t.kind), t.weight]))
                .collect();
            let line = json!({
                "terms": terms,
                "qid": query.qid,
                "query": query.query,
                "ndcg@10": scores.ndcg_10,
                "hit@5": scores.hit_5,
                "top5": ranked.iter().take(5).collect::<Vec<_>>(),
            });
            eprintln!("{line}");
        }
        out.metrics.add(&scores);
        out.language_sums
            .entry(query.lang.clone().unwrap_or_default())
            .or_default()
            .add(&scores);
    }
    if out.metrics.queries == 0 {
        bail!("no queries in {}", queries_path.display());
    }
    out.metrics = out.metrics.averaged();
    Ok(out)
}

/// The name of a set: the folder of a file named `catalog.*`, else the file stem.
fn set_name(path: &Path) -> String {
    if path.as_os_str() == DEMO {
        return DEMO.to_string();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem == "catalog"
        && let Some(parent) = path.parent().and_then(Path::file_name)
    {
        return parent.to_string_lossy().into_owned();
    }
    stem
}

/// Loads one catalog argument: a file, or `demo` for the embedded catalog.
fn load_one(path: &Path) -> Result<Vec<Descriptor>> {
    if path.as_os_str() == DEMO && !path.exists() {
        return Ok(crate::demo::catalog().tools().to_vec());
    }
    let snapshot = super::load_catalog_file(path)?;
    Ok(snapshot.tools().to_vec())
}

/// p-th percentile (nearest rank) of `values`.
fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// What `run` was asked.
pub(crate) struct EvalRequest<'a> {
    pub(crate) catalogs: &'a [PathBuf],
    pub(crate) queries: &'a [PathBuf],
    pub(crate) pooled: bool,
    pub(crate) as_json: bool,
    pub(crate) typo_tolerance: bool,
    pub(crate) multilingual: bool,
    pub(crate) per_query: bool,
    #[cfg(feature = "semantic")]
    pub(crate) semantic: &'a crate::search::hybrid::SemanticArgs,
    #[cfg(feature = "semantic")]
    pub(crate) lexical_weight: Option<f32>,
}

/// Attaches the hybrid ranker the flags ask for to `index`, its tool vectors ready (cached or
/// embedded now; what it did goes to stderr); `false` for the lexical ranker.
#[cfg(feature = "semantic")]
fn attach_hybrid(
    index: &SearchIndex,
    semantic: &crate::search::hybrid::SemanticArgs,
    lexical_weight: Option<f32>,
) -> Result<bool> {
    use crate::search::hybrid::{Attached, DenseIndex, Fusion};
    let Some(store) = semantic.open(&crate::config::SemanticSettings::default())? else {
        return Ok(false);
    };
    for skipped in store.skipped() {
        eprintln!("vector cache: skipped {skipped}");
    }
    let started = Instant::now();
    let (dense, embedded) = DenseIndex::build(index, &store)?;
    eprintln!(
        "hybrid ranker: {} tool vectors, {} from the cache, {} embedded in {:.1} s ({})",
        dense.len(),
        embedded.cached,
        embedded.computed,
        started.elapsed().as_secs_f64(),
        store
            .cache_dir()
            .map_or("no cache".into(), |d| d.display().to_string())
    );
    let mut fusion = Fusion::default();
    if let Some(weight) = lexical_weight {
        fusion.lexical_weight = weight;
    }
    Ok(index.attach_dense(std::sync::Arc::new(Attached {
        dense,
        store,
        fusion,
    })))
}

/// One query set: its name, its queries file and the prefix its gold ids get.
struct EvalSet {
    name: String,
    queries: PathBuf,
    prefix: String,
}

/// The catalog the request names and its query sets.
fn load_sets(request: &EvalRequest<'_>) -> Result<(CatalogSnapshot, Vec<EvalSet>)> {
    if request.pooled {
        pooled_sets(request)
    } else {
        separate_sets(request)
    }
}

/// `--pooled`: every catalog's tools under its set's name, each set's gold ids prefixed the same.
fn pooled_sets(request: &EvalRequest<'_>) -> Result<(CatalogSnapshot, Vec<EvalSet>)> {
    if request.catalogs.len() != request.queries.len() {
        bail!(
            "--pooled needs --catalog/--queries pairs: got {} catalog(s) and {} query file(s)",
            request.catalogs.len(),
            request.queries.len()
        );
    }
    let mut sets = Vec::new();
    let mut tools = Vec::new();
    let mut names = HashSet::new();
    for (catalog, queries) in request.catalogs.iter().zip(request.queries) {
        let name = set_name(catalog);
        if !names.insert(name.clone()) {
            bail!("--pooled: two catalogs are both named {name:?}");
        }
        let stem = catalog
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for mut tool in load_one(catalog)? {
            // Owners the file did not name (the file stem) become the set, so equal names
            // from different sets keep distinct ids; the gold key is `<set>:<line id>`.
            if tool.owner == stem {
                tool.owner = crate::catalog::safe_owner(&name);
                tool.id = crate::catalog::tool_id(tool.source, &tool.owner, &tool.name);
            }
            let key = tool.external_id.clone().unwrap_or_else(|| tool.id.clone());
            tool.external_id = Some(format!("{name}:{key}"));
            tools.push(tool);
        }
        sets.push(EvalSet {
            name: name.clone(),
            queries: queries.clone(),
            prefix: format!("{name}:"),
        });
    }
    Ok((CatalogSnapshot::build(tools), sets))
}

/// The catalogs merged (the demo catalog without any), each queries file a set.
fn separate_sets(request: &EvalRequest<'_>) -> Result<(CatalogSnapshot, Vec<EvalSet>)> {
    let mut tools = Vec::new();
    for catalog in request.catalogs {
        tools.extend(load_one(catalog)?);
    }
    let sets = request
        .queries
        .iter()
        .map(|queries| EvalSet {
            name: set_name(queries),
            queries: queries.clone(),
            prefix: String::new(),
        })
        .collect();
    let snapshot = if request.catalogs.is_empty() {
        crate::demo::catalog()
    } else {
        CatalogSnapshot::build(tools)
    };
    Ok((snapshot, sets))
}

/// Every set's evaluation and the figures the report draws from them.
struct Summary {
    results: Vec<(String, Evaluation)>,
    latencies: Vec<f64>,
    p50: f64,
    p99: f64,
    macro_metrics: Metrics,
    /// Averaged metrics per language, queries pooled across sets.
    languages: BTreeMap<String, Metrics>,
    /// Whether any query carried a language.
    tagged: bool,
}

/// Evaluates each set with `rank` and summarises the results.
fn evaluate_sets(
    index: &SearchIndex,
    rank: &RankFn<'_>,
    sets: &[EvalSet],
    settings: &SearchSettings,
    per_query: bool,
) -> Result<Summary> {
    let mut results = Vec::new();
    let mut latencies = Vec::new();
    for set in sets {
        let evaluation = evaluate(index, rank, &set.queries, &set.prefix, settings, per_query)?;
        latencies.extend_from_slice(&evaluation.latencies_us);
        results.push((set.name.clone(), evaluation));
    }
    let p50 = percentile(&mut latencies, 50.0);
    let p99 = percentile(&mut latencies, 99.0);
    let tables: Vec<Metrics> = results.iter().map(|(_, e)| e.metrics).collect();
    let macro_metrics = Metrics::macro_of(&tables);
    // Languages across all sets (queries pooled per language).
    let mut languages: BTreeMap<String, Metrics> = BTreeMap::new();
    for (_, evaluation) in &results {
        for (lang, sums) in &evaluation.language_sums {
            languages.entry(lang.clone()).or_default().merge(sums);
        }
    }
    let tagged = languages.keys().any(|lang| !lang.is_empty());
    for metrics in languages.values_mut() {
        *metrics = metrics.averaged();
    }
    Ok(Summary {
        results,
        latencies,
        p50,
        p99,
        macro_metrics,
        languages,
        tagged,
    })
}

pub(crate) fn run(request: EvalRequest<'_>) -> Result<ExitCode> {
    let settings = SearchSettings {
        typo_tolerance: request.typo_tolerance,
        multilingual: request.multilingual,
    };
    if request.queries.is_empty() {
        bail!("eval needs --queries FILE");
    }
    let (snapshot, sets) = load_sets(&request)?;
    let view = Authorized::new(snapshot, Policy::allow_all());
    let index = SearchIndex::build(&view)?;
    #[cfg(feature = "semantic")]
    let hybrid = attach_hybrid(&index, request.semantic, request.lexical_weight)?;
    #[cfg(not(feature = "semantic"))]
    let hybrid = false;
    let ranker = if hybrid { "hybrid" } else { "lexical" };
    // The ranker search answers give (hybrid once attached).
    let rank = |query: &str| -> Result<Vec<RankedHit>> {
        Ok(index.answer_ranking(query, RANKED, &settings).0.hits)
    };
    let summary = evaluate_sets(&index, &rank, &sets, &settings, request.per_query)?;

    let mut out = std::io::stdout().lock();
    if request.as_json {
        write_json(&mut out, &request, &index, ranker, &summary)?;
    } else {
        write_text(&mut out, &request, &settings, &index, ranker, &summary)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report as one JSON line.
fn write_json(
    out: &mut impl Write,
    request: &EvalRequest<'_>,
    index: &SearchIndex,
    ranker: &str,
    summary: &Summary,
) -> Result<()> {
    let results = &summary.results;
    let single = results.len() == 1 && !request.pooled;
    let mut value = if single {
        results[0].1.metrics.json()
    } else {
        let mut sets = serde_json::Map::new();
        for (name, evaluation) in results {
            sets.insert(name.clone(), evaluation.metrics.json());
        }
        json!({
            "mode": if request.pooled { "pooled" } else { "separate" },
            "tools": index.stats().documents,
            "sets": sets,
            "macro": summary.macro_metrics.json(),
        })
    };
    value["latency_us"] = json!({"p50": summary.p50, "p99": summary.p99});
    value["ranker"] = json!(ranker);
    if summary.tagged {
        let by_lang: serde_json::Map<String, Value> = summary
            .languages
            .iter()
            .map(|(lang, m)| (lang.clone(), m.json()))
            .collect();
        value["languages"] = Value::Object(by_lang);
    }
    writeln!(out, "{value}")?;
    Ok(())
}

/// The report as tables: per set (and their macro average), per language, then latency.
fn write_text(
    out: &mut impl Write,
    request: &EvalRequest<'_>,
    settings: &SearchSettings,
    index: &SearchIndex,
    ranker: &str,
    summary: &Summary,
) -> Result<()> {
    let results = &summary.results;
    let single = results.len() == 1 && !request.pooled;
    writeln!(
        out,
        "{} tools{}, {ranker} ranker, typo tolerance {}, lexicon {}",
        index.stats().documents,
        if request.pooled { " (pooled)" } else { "" },
        if settings.typo_tolerance { "on" } else { "off" },
        if settings.multilingual { "on" } else { "off" }
    )?;
    let mut rows: Vec<(String, Metrics)> = results
        .iter()
        .map(|(name, e)| (name.clone(), e.metrics))
        .collect();
    if !single {
        rows.push(("macro".to_string(), summary.macro_metrics));
    }
    write_table(out, "set", &rows)?;
    if summary.tagged {
        writeln!(out)?;
        let rows: Vec<(String, Metrics)> = summary
            .languages
            .iter()
            .map(|(lang, m)| {
                let name = if lang.is_empty() { "(none)" } else { lang };
                (name.to_string(), *m)
            })
            .collect();
        write_table(out, "lang", &rows)?;
    }
    writeln!(
        out,
        "\nlatency of {} searches: p50 {:.1} µs, p99 {:.1} µs",
        summary.latencies.len(),
        summary.p50,
        summary.p99
    )?;
    Ok(())
}

fn write_table(out: &mut impl Write, first: &str, rows: &[(String, Metrics)]) -> Result<()> {
    let width = rows
        .iter()
        .map(|(name, _)| name.chars().count())
        .chain([first.len()])
        .max()
        .unwrap_or(4);
    writeln!(
        out,
        "{first:<width$}  queries  R@1    R@5    R@10   Hit@1  Hit@5  Hit@10 NDCG@10 MRR"
    )?;
    for (name, m) in rows {
        writeln!(
            out,
            "{name:<width$}  {:>7}  {:.3}  {:.3}  {:.3}  {:.3}  {:.3}  {:.3}  {:.4}  {:.3}",
            m.queries,
            m.recall_1,
            m.recall_5,
            m.recall_10,
            m.hit_1,
            m.hit_5,
            m.hit_10,
            m.ndcg_10,
            m.mrr
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_ids_in_a_ranking_keep_metrics_in_range() {
        let gold: HashSet<&str> = ["a", "b"].into_iter().collect();
        let s = score(&["a", "a", "a", "b", "b", "x"], &gold);
        for m in [
            s.recall_1,
            s.recall_5,
            s.recall_10,
            s.hit_1,
            s.ndcg_10,
            s.mrr,
        ] {
            assert!((0.0..=1.0).contains(&m), "{s:?}");
        }
        assert_eq!(s.recall_5, 1.0);
        assert_eq!(s.recall_1, 0.5);
        // Deduplicated, `b` is second: a perfect ranking.
        assert!((s.ndcg_10 - 1.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn metrics_follow_the_eval_readme() {
        let gold: HashSet<&str> = ["b", "x"].into_iter().collect();
        let s = score(&["a", "b", "c"], &gold);
        assert_eq!((s.recall_1, s.recall_5, s.recall_10), (0.0, 0.5, 0.5));
        assert_eq!((s.hit_1, s.hit_5, s.hit_10), (0.0, 1.0, 1.0));
        assert!((s.mrr - 0.5).abs() < 1e-12);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((s.ndcg_10 - (1.0 / 3f64.log2()) / ideal).abs() < 1e-12);
    }

    #[test]
    fn set_names_come_from_the_folder_or_the_stem() {
        assert_eq!(
            set_name(Path::new("../shared/eval/bfcl/catalog.jsonl")),
            "bfcl"
        );
        assert_eq!(
            set_name(Path::new("../shared/catalogs/npm_mcp_servers.jsonl")),
            "npm_mcp_servers"
        );
        assert_eq!(set_name(Path::new("demo")), "demo");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut v, 50.0), 3.0);
        assert_eq!(percentile(&mut v, 99.0), 5.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
    }

    #[test]
    fn macro_averages_weigh_each_set_once() {
        let a = Metrics {
            queries: 10,
            ndcg_10: 1.0,
            ..Metrics::default()
        };
        let b = Metrics {
            queries: 30,
            ndcg_10: 0.0,
            ..Metrics::default()
        };
        let m = Metrics::macro_of(&[a, b]);
        assert_eq!(m.queries, 40);
        assert!((m.ndcg_10 - 0.5).abs() < 1e-12);
    }
}

/// The per-series latency table of `bench search`: queries per round, p50, p99, mean (µs).
fn write_latencies(
    out: &mut impl Write,
    rounds: usize,
    series: &[(&str, &super::search::Latency)],
) -> Result<()> {
    let width = series.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + 2;
    writeln!(
        out,
        "{:<width$} {:>8} {:>8} {:>8} {:>8}",
        "series", "queries", "p50", "p99", "mean"
    )?;
    for (name, latency) in series {
        writeln!(
            out,
            "{:<width$} {:>8} {:>8.1} {:>8.1} {:>8.1}",
            name,
            latency.samples / rounds.max(1),
            latency.p50_us,
            latency.p99_us,
            latency.mean_us
        )?;
    }
    Ok(())
}

/// `toolsearch bench search --ranker hybrid`.
#[cfg(feature = "semantic")]
fn bench_search_hybrid(
    workload: &super::search::Workload,
    args: &BenchSearchArgs,
) -> Result<ExitCode> {
    let semantic = &args.semantic;
    let open = || -> Result<std::sync::Arc<crate::search::semantic::VectorStore>, String> {
        semantic
            .open(&Default::default())
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no hybrid ranker".to_string())
    };
    let report = super::search::run_hybrid_search_bench(workload, args.tools, args.rounds, &open)
        .map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.json())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} tools, hybrid ranker: lexical index {:.0} ms; model and vector cache {:.0} ms; tool vectors {:.0} ms ({} cached, {} embedded{})",
        report.tools,
        report.build_ms,
        report.open_ms,
        report.vectors_ms,
        report.cached,
        report.computed,
        if report.computed > 0 {
            format!(", {:.0} tools/s", report.embedded_per_s())
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "second start over the same catalog: {:.0} ms, {} tools embedded",
        report.restart_ms, report.restart_computed
    )?;
    writeln!(
        out,
        "resident memory: {:.0} MiB with the lexical index, {:.0} with the model and the cache read, {:.0} ready",
        report.rss_mib[0], report.rss_mib[1], report.rss_mib[2]
    )?;
    writeln!(
        out,
        "{} rounds; per-query latency (limit 8), µs",
        report.rounds
    )?;
    write_latencies(
        &mut out,
        report.rounds,
        &[
            ("English, lexical (baseline)", &report.lexical),
            ("English, hybrid, new query", &report.english),
            ("  of which the query embedding", &report.embedding),
            ("  of which fusion", &report.fusion),
            ("English, hybrid, repeated query", &report.repeated),
            ("misspelled, hybrid, new query", &report.misspelled),
            (
                "non-English (zh/de/fr/id), hybrid, new",
                &report.non_english,
            ),
        ],
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `toolsearch bench search`: per-query latency at N tools.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchSearchArgs {
    /// Tools in the index (the pooled eval catalogs, replicated past their 8,935 tools).
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Rounds over every query series.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// The evaluation sets' directory (default $TOOLSEARCH_SHARED/eval or ../shared/eval).
    #[arg(long, value_name = "DIR")]
    eval_dir: Option<PathBuf>,
    /// Print the report as JSON: {tools, build_ms, rounds, english, english_plain, misspelled,
    /// non_english: {samples, p50_us, p99_us, mean_us}, ratio_english_over_plain_p50}; with
    /// the hybrid ranker {ranker, tools, rounds, build_ms, open_ms, vectors: {ms, cached,
    /// computed, embedded_per_s}, restart: {ms, computed}, rss_mib, lexical, english,
    /// embedding, fusion, repeated, misspelled, non_english, ratio_english_over_lexical_p50}.
    #[arg(long)]
    json: bool,
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    semantic: crate::search::hybrid::SemanticArgs,
}

pub(crate) fn bench_search(args: BenchSearchArgs) -> Result<ExitCode> {
    use super::search::{Workload, run_search_bench};
    let dir = match args.eval_dir.clone() {
        Some(dir) => dir,
        None => super::shared_dir("eval").context("no evaluation sets directory ($TOOLSEARCH_SHARED/eval or ../shared/eval): give --eval-dir DIR")?,
    };
    if args.tools == 0 || args.rounds == 0 {
        bail!("--tools and --rounds must be at least 1");
    }
    let workload = Workload::load(&dir).map_err(anyhow::Error::msg)?;
    #[cfg(feature = "semantic")]
    if args.semantic.ranker_kind(&Default::default()) == crate::search::RankerKind::Hybrid {
        return bench_search_hybrid(&workload, &args);
    }
    let report =
        run_search_bench(&workload, args.tools, args.rounds).map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report.json())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{} tools (built in {:.0} ms), {} rounds; per-query latency of `rank` (limit 8), µs",
        report.tools, report.build_ms, report.rounds
    )?;
    write_latencies(
        &mut out,
        report.rounds,
        &[
            ("English (typo tolerance + lexicon)", &report.english),
            ("English, both off (baseline)", &report.english_plain),
            ("misspelled", &report.misspelled),
            ("non-English (zh/de/fr/id)", &report.non_english),
        ],
    )?;
    writeln!(
        out,
        "English p50 on / off: {:.2}×",
        report.english.p50_us / report.english_plain.p50_us
    )?;
    Ok(ExitCode::SUCCESS)
}
