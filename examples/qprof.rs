#![allow(clippy::unwrap_used, missing_docs)]
use std::time::Instant;
use toolsearch::catalog::{CatalogSnapshot, Descriptor, Source, file};
use toolsearch::policy::{Authorized, Policy};
use toolsearch::search::SearchIndex;
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(10000);
    let iters: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(20);
    let mut pool: Vec<Descriptor> = Vec::new();
    let mut qs = Vec::new();
    for set in ["bfcl", "livemcpbench", "seal_tools", "toolbench"] {
        let l = file::load(
            std::path::Path::new(&format!("../shared/eval/{set}/catalog.jsonl")),
            Source::Plugin,
        )
        .unwrap();
        for mut t in l.descriptors {
            t.owner = format!("{set}-{}", t.owner);
            t.id = toolsearch::catalog::tool_id(t.source, &t.owner, &t.name);
            pool.push(t);
        }
        for line in std::fs::read_to_string(format!("../shared/eval/{set}/queries.dev.jsonl"))
            .unwrap()
            .lines()
            .take(64)
        {
            qs.push(
                serde_json::from_str::<serde_json::Value>(line).unwrap()["query"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    let mut tools = Vec::new();
    let mut round = 0;
    while tools.len() < n {
        for t in &pool {
            if tools.len() == n {
                break;
            }
            let mut c = t.clone();
            if round > 0 {
                c.name = format!("{}_{round}", t.name);
                c.owner = format!("{}{round}", t.owner);
                c.id = toolsearch::catalog::tool_id(c.source, &c.owner, &c.name);
            }
            tools.push(c);
        }
        round += 1;
    }
    let view = Authorized::new(CatalogSnapshot::build(tools), Policy::allow_all());
    let t = Instant::now();
    let index = SearchIndex::build(&view).unwrap();
    eprintln!("build {:?} segs {}", t.elapsed(), index.stats().segments);
    let t = Instant::now();
    let mut k = 0;
    for _ in 0..iters {
        for q in &qs {
            k += index.rank(q, 8).len();
        }
    }
    eprintln!(
        "query avg {:?} ({k})",
        t.elapsed() / (iters * qs.len()).max(1) as u32
    );
}
