//! `toolsearch eval`: search quality on a catalog and a query file.
//!
//! For each query the top 20 are ranked and compared, by the catalog lines' own ids
//! (`external_id`), with the gold ids. Metrics are macro-averaged over queries with binary
//! relevance: Recall@k = |gold ∩ top-k| / |gold|; NDCG@10 with the ideal DCG over
//! min(|gold|, 10) items; MRR = 1 / rank of the first gold tool in the top 20 (0 if none).

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::json;

use crate::catalog::Source;
use crate::policy::{Authorized, Policy};
use crate::search::SearchIndex;

/// How many results each query ranks.
const RANKED: usize = 20;

#[derive(Debug, Deserialize)]
struct QueryLine {
    #[serde(default)]
    qid: Option<serde_json::Value>,
    query: String,
    gold: Vec<String>,
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
    /// Mean NDCG@10.
    pub ndcg_10: f64,
    /// Mean reciprocal rank within the top 20.
    pub mrr: f64,
}

/// Scores one ranked list of ids against gold ids.
fn score(ranked: &[&str], gold: &HashSet<&str>) -> (f64, f64, f64, f64, f64) {
    if gold.is_empty() {
        return (0.0, 0.0, 0.0, 0.0, 0.0);
    }
    let hits_at = |k: usize| {
        ranked
            .iter()
            .take(k)
            .filter(|id| gold.contains(*id))
            .count()
    };
    let g = gold.len() as f64;
    let recall = |k: usize| hits_at(k) as f64 / g;
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
    (recall(1), recall(5), recall(10), dcg / ideal, mrr)
}

/// Evaluates `index` on the queries in `queries_path`.
pub fn evaluate(index: &SearchIndex, queries_path: &Path) -> Result<Metrics> {
    let text = std::fs::read_to_string(queries_path)
        .with_context(|| format!("cannot read queries file {}", queries_path.display()))?;
    let mut totals = Metrics::default();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let query: QueryLine = serde_json::from_str(line).with_context(|| {
            format!(
                "{}: line {}: expected {{\"qid\", \"query\", \"gold\": [ids]}}",
                queries_path.display(),
                number + 1
            )
        })?;
        let _ = &query.qid;
        let ranked: Vec<&str> = index
            .rank(&query.query, RANKED)
            .iter()
            .filter_map(|r| index.tool(r.position))
            .map(|t| t.external_id.as_deref().unwrap_or(t.id.as_str()))
            .collect();
        let gold: HashSet<&str> = query.gold.iter().map(String::as_str).collect();
        let (r1, r5, r10, ndcg, mrr) = score(&ranked, &gold);
        totals.queries += 1;
        totals.recall_1 += r1;
        totals.recall_5 += r5;
        totals.recall_10 += r10;
        totals.ndcg_10 += ndcg;
        totals.mrr += mrr;
    }
    if totals.queries == 0 {
        bail!("no queries in {}", queries_path.display());
    }
    let n = totals.queries as f64;
    totals.recall_1 /= n;
    totals.recall_5 /= n;
    totals.recall_10 /= n;
    totals.ndcg_10 /= n;
    totals.mrr /= n;
    Ok(totals)
}

pub(super) fn run(catalog: Option<&Path>, queries: &Path, as_json: bool) -> Result<ExitCode> {
    let snapshot = match catalog {
        Some(path) => super::load_files(&[path.to_path_buf()], Source::Plugin)?,
        None => super::default_catalog()?,
    };
    let view = Authorized::new(snapshot, Policy::allow_all());
    let index = SearchIndex::build(&view)?;
    let metrics = evaluate(&index, queries)?;
    let mut out = std::io::stdout().lock();
    if as_json {
        let value = json!({
            "queries": metrics.queries,
            "recall@1": metrics.recall_1,
            "recall@5": metrics.recall_5,
            "recall@10": metrics.recall_10,
            "ndcg@10": metrics.ndcg_10,
            "mrr": metrics.mrr,
        });
        writeln!(out, "{value}")?;
    } else {
        writeln!(out, "queries    {}", metrics.queries)?;
        writeln!(out, "Recall@1   {:.3}", metrics.recall_1)?;
        writeln!(out, "Recall@5   {:.3}", metrics.recall_5)?;
        writeln!(out, "Recall@10  {:.3}", metrics.recall_10)?;
        writeln!(out, "NDCG@10    {:.3}", metrics.ndcg_10)?;
        writeln!(out, "MRR        {:.3}", metrics.mrr)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_follow_the_eval_readme() {
        let gold: HashSet<&str> = ["b", "x"].into_iter().collect();
        let (r1, r5, r10, ndcg, mrr) = score(&["a", "b", "c"], &gold);
        assert_eq!((r1, r5, r10), (0.0, 0.5, 0.5));
        assert!((mrr - 0.5).abs() < 1e-12);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg - (1.0 / 3f64.log2()) / ideal).abs() < 1e-12);
    }
}
