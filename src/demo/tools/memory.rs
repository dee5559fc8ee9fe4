//! `memory`: long-term facts the agent remembers about the user, recalled by word overlap.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DAY, DEMO_NOW, format_utc};
use super::super::kit::{
    Args, Kind, Reply, fail, listed, match_count, next_id, ok, ok_text, words,
};
use super::super::world::{DemoWorld, Handler};
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "remember_fact" => remember_fact,
        "recall" => recall,
        "list_memories" => list_memories,
        "update_memory" => update_memory,
        "forget" => forget,
        "memory_stats" => memory_stats,
        "summarize_memories" => summarize_memories,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Fact {
    id: String,
    fact: String,
    tags: Vec<String>,
    created_at: i64,
}

impl Fact {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "fact": self.fact, "tags": self.tags, "created_at": format_utc(self.created_at)})
    }
}

/// Remembered facts.
#[derive(Debug)]
pub(crate) struct Memory {
    facts: BTreeMap<String, Fact>,
    next_fact: u64,
}

const MAX_FACTS: usize = 10_000;

impl Memory {
    pub(crate) fn seeded() -> Memory {
        let mut facts = BTreeMap::new();
        for (i, (fact, tags, days_ago)) in [
            ("User prefers metric units", &["preferences"][..], 40),
            (
                "User's manager is Dana Whitfield",
                &["work", "people"][..],
                30,
            ),
            (
                "Favourite coffee: flat white with oat milk",
                &["preferences", "food"][..],
                12,
            ),
            (
                "User is travelling to Lisbon for the team offsite on March 19",
                &["travel", "work"][..],
                3,
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let id = format!("mem_{}", i + 1);
            facts.insert(
                id.clone(),
                Fact {
                    id,
                    fact: fact.to_string(),
                    tags: tags.iter().map(|t| t.to_string()).collect(),
                    created_at: DEMO_NOW - days_ago * DAY,
                },
            );
        }
        Memory {
            facts,
            next_fact: 5,
        }
    }

    fn newest(&self) -> Vec<&Fact> {
        let mut list: Vec<&Fact> = self.facts.values().collect();
        list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        list
    }
}

fn remember_fact(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let fact = args.trimmed("fact")?;
    let tags = args.opt_str_list("tags")?.unwrap_or_default();
    let mut memory = lock(&world.memory);
    if let Some(existing) = memory
        .facts
        .values()
        .find(|f| f.fact.eq_ignore_ascii_case(fact))
    {
        return Err(fail(format!(
            "already remembered as {}; use update_memory to change it",
            existing.id
        )));
    }
    if memory.facts.len() >= MAX_FACTS {
        return Err(fail("memory is full; forget something first"));
    }
    let id = next_id("mem_", &mut memory.next_fact);
    let entry = Fact {
        id: id.clone(),
        fact: fact.to_string(),
        tags,
        created_at: DEMO_NOW,
    };
    let details = json!({"memory": entry.to_json(), "total": memory.facts.len() + 1});
    memory.facts.insert(id, entry);
    ok(details)
}

fn recall(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let limit = args.i64_or("limit", 5)?.clamp(1, 50) as usize;
    let memory = lock(&world.memory);
    let mut scored: Vec<(usize, &Fact)> = memory
        .newest()
        .into_iter()
        .map(|f| {
            (
                match_count(&format!("{} {}", f.fact, f.tags.join(" ")), query),
                f,
            )
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    let total = scored.len();
    let list: Vec<Value> = scored
        .iter()
        .take(limit)
        .map(|(_, f)| f.to_json())
        .collect();
    let text = if list.is_empty() {
        format!("Nothing remembered about {query:?}.")
    } else {
        scored
            .iter()
            .take(limit)
            .map(|(_, f)| format!("- {}\n", f.fact))
            .collect()
    };
    ok_text(json!({"memories": list, "total": total}), text)
}

fn list_memories(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let memory = lock(&world.memory);
    ok(listed(
        "memories",
        memory.newest().iter().map(|f| f.to_json()),
    ))
}

fn update_memory(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("memory_id")?;
    let fact = args.trimmed("fact")?;
    let mut memory = lock(&world.memory);
    let entry = MEMORY.get_mut(&mut memory.facts, id)?;
    let previous = std::mem::replace(&mut entry.fact, fact.to_string());
    entry.created_at = DEMO_NOW;
    ok(json!({"memory": entry.to_json(), "previous": previous}))
}

const MEMORY: Kind = Kind::new("memory", "list them with list_memories");

fn forget(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut memory = lock(&world.memory);
    let removed = MEMORY.take(&mut memory.facts, args.str("memory_id")?)?;
    ok(json!({"forgotten": removed.fact, "remaining": memory.facts.len()}))
}

fn memory_stats(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let memory = lock(&world.memory);
    let mut by_tag: BTreeMap<&str, usize> = BTreeMap::new();
    for tag in memory.facts.values().flat_map(|f| f.tags.iter()) {
        *by_tag.entry(tag).or_default() += 1;
    }
    let oldest = memory
        .facts
        .values()
        .map(|f| f.created_at)
        .min()
        .map(format_utc);
    ok(json!({"facts": memory.facts.len(), "by_tag": by_tag, "oldest": oldest}))
}

fn summarize_memories(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let memory = lock(&world.memory);
    let list = memory.newest();
    let mut by_tag: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &list {
        let tag = f
            .tags
            .first()
            .cloned()
            .unwrap_or_else(|| "general".to_string());
        by_tag.entry(tag).or_default().push(f.fact.clone());
    }
    let mut text = String::from("What I know about you:\n");
    for (tag, facts) in &by_tag {
        text.push_str(&format!("{tag}: {}\n", facts.join("; ")));
    }
    let keywords: usize = list.iter().map(|f| words(&f.fact).len()).sum();
    ok_text(
        json!({"sections": by_tag, "facts": list.len(), "words": keywords}),
        text,
    )
}
