use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::SearchIndex;
use toolsearch::{Authorized, Policy};
use toolsearch::{CatalogSnapshot, Descriptor, Source};

fn demo_index() -> SearchIndex {
    SearchIndex::build(&Authorized::new(
        toolsearch::demo::catalog(),
        Policy::allow_all(),
    ))
    .unwrap()
}

fn index_of(tools: Vec<Descriptor>) -> SearchIndex {
    SearchIndex::build(&Authorized::new(
        CatalogSnapshot::build(tools),
        Policy::allow_all(),
    ))
    .unwrap()
}

fn ids(index: &SearchIndex, query: &str, limit: usize) -> Vec<String> {
    index
        .search(query, limit)
        .into_iter()
        .map(|h| h.id)
        .collect()
}

#[test]
fn scheduling_ranks_the_recurring_task_tool_first() {
    let index = demo_index();
    let hits = index.search("scheduling", 8);
    assert!(!hits.is_empty());
    assert!(
        hits[0].description.starts_with("Schedule a recurring task"),
        "{hits:#?}"
    );
}

#[test]
fn look_up_the_price_finds_web_search_through_expansion() {
    let index = demo_index();
    let ranked = index.rank("look up the price", 8);
    let web = ranked
        .iter()
        .find(|r| index.tool(r.position).unwrap().id == "plugin:web:web_search")
        .unwrap_or_else(|| {
            panic!(
                "web search not in {:?}",
                ids(&index, "look up the price", 8)
            )
        });
    assert!(!web.literal, "web_search matched only through expansion");
}

/// R-3.3's 59 stop words.
const STOP_WORDS: &str = "a an and are as at be but by can do for from had has have here how i if in into is it its me my no not of on or our so that the their them then there these they this to up us was we were what when where which who why will with you your";

#[test]
fn a_tool_named_like_a_stop_word_is_found_by_its_exact_name() {
    let index = demo_index();
    let when = index
        .view()
        .tools()
        .find(|t| STOP_WORDS.split(' ').any(|w| w == t.name))
        .expect("the demo catalog has a tool named like a stop word");
    let name = when.name.clone();
    let id = when.id.clone();
    // No term survives the analyzer: the hit is exact and matched nothing.
    let ranked = index.rank(&name, 8);
    assert!(ranked[0].exact && ranked[0].score == 0.0, "{ranked:?}");
    let hits = index.search(&name, 8);
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some(id.as_str()));
    let hits = index.search(&format!("  {}  ", name.to_uppercase()), 8);
    assert_eq!(hits.first().map(|h| h.id.as_str()), Some(id.as_str()));
}

#[test]
fn a_query_that_matches_nothing_returns_nothing() {
    let index = demo_index();
    // No lexicon word, no index term, nothing within typo distance: nothing.
    assert_eq!(index.search("Quatsch Blabla Unsinn", 8), vec![]);
    assert_eq!(index.search("the of and to", 8), vec![]);
    assert_eq!(index.search("   ", 8), vec![]);
}

#[test]
fn non_english_queries_find_the_tools_through_the_lexicon() {
    let index = demo_index();
    for (query, wanted) in [
        ("Wettervorhersage übermorgen", "weather"),
        ("GitHub-Issue erstellen", "plugin:github:create_issue"),
        ("créer un ticket", "plugin:github:create_issue"),
        ("buat issue baru", "plugin:github:create_issue"),
        ("创建 GitHub 问题", "plugin:github:create_issue"),
    ] {
        let got = ids(&index, query, 5);
        assert!(got.iter().any(|id| id.contains(wanted)), "{query}: {got:?}");
    }
}

#[test]
fn a_mixed_querys_english_words_outrank_translation_only_matches() {
    let index = index_of(vec![
        // Matches only the translation of "erstellen" (create), many times.
        Descriptor::new(Source::Plugin, "p", "create_things").description("create create create"),
        // Matches the English literal word once.
        Descriptor::new(Source::Plugin, "p", "widget_report")
            .description("a widget report among many other words that make it long"),
    ]);
    let ranked = index.rank("Widget erstellen", 5);
    let first = index.tool(ranked[0].position).unwrap();
    assert_eq!(first.id, "plugin:p:widget_report", "{ranked:?}");
    assert_eq!(ranked[0].tier, 2);
    assert_eq!(ranked[1].tier, 1, "the translation-only match is tier 1");
    // A query entirely in German still ranks the tools matching its translated terms.
    let ranked = index.rank("Dinge erstellen", 5);
    assert_eq!(
        index.tool(ranked[0].position).unwrap().id,
        "plugin:p:create_things"
    );
}

#[test]
fn misspelled_words_find_the_tool_and_literal_matches_stay_first() {
    let index = demo_index();
    for (query, wanted) in [
        ("craete isue", "plugin:github:create_issue"),
        ("serach emial", "plugin:mail:search_messages"),
        ("calender evnt", "plugin:calendar:"),
    ] {
        let got = ids(&index, query, 5);
        assert!(got.iter().any(|id| id.contains(wanted)), "{query}: {got:?}");
    }
    // With a correctly spelled word in the query, its literal matches come first.
    let ranked = index.rank("create isue", 8);
    let tiers: Vec<u8> = ranked.iter().map(|r| r.tier).collect();
    let mut sorted = tiers.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(tiers, sorted, "tiers never increase down the ranking");
}

/// The multilingual and typo sets of `tests/fixtures/queries/`, through the real `eval`
/// binary over the demo catalog plus GitHub's and the npm reference MCP servers: Hit@5 ≥ 0.8
/// per language and on the typo set.
#[test]
fn multilingual_and_typo_sets_reach_hit_at_5_of_0_8() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/queries");
    let catalogs = crate::support::shared().join("catalogs");
    let github = catalogs.join("github_mcp_server.jsonl");
    let npm = catalogs.join("npm_mcp_servers.jsonl");
    for file in ["multilingual.jsonl", "typos.jsonl"] {
        let queries = fixtures.join(file);
        let out = crate::support::toolsearch(&[
            "eval",
            "--catalog",
            "demo",
            "--catalog",
            github.to_str().unwrap(),
            "--catalog",
            npm.to_str().unwrap(),
            "--queries",
            queries.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", crate::support::stderr(&out));
        let value: Value = serde_json::from_str(&crate::support::stdout(&out)).unwrap();
        if file == "typos.jsonl" {
            assert!(value["queries"].as_u64().unwrap() >= 40, "{value}");
            assert!(value["hit@5"].as_f64().unwrap() >= 0.8, "{value}");
            continue;
        }
        let languages = value["languages"].as_object().unwrap();
        for lang in ["de", "fr", "id", "zh"] {
            let metrics = &languages[lang];
            assert!(
                metrics["queries"].as_u64().unwrap() >= 15,
                "{lang}: {metrics}"
            );
            assert!(
                metrics["hit@5"].as_f64().unwrap() >= 0.8,
                "{lang}: {metrics}"
            );
        }
    }
}

#[test]
fn unicode_catalog_text_is_searchable() {
    let index = index_of(vec![
        Descriptor::new(Source::Plugin, "cn", "bing_search")
            .description("使用必应搜索指定的关键词"),
        Descriptor::new(Source::Plugin, "de", "wetter").description("Wettervorhersage für morgen"),
    ]);
    assert_eq!(ids(&index, "wettervorhersage", 5), ["plugin:de:wetter"]);
    assert_eq!(
        ids(&index, "使用必应搜索指定的关键词", 5),
        ["plugin:cn:bing_search"]
    );
}

#[test]
fn ordering_is_exact_then_literal_then_score_then_id() {
    let index = index_of(vec![
        // Matches only an expansion term ("web"), many times.
        Descriptor::new(Source::Plugin, "p", "web_web").description("web web web web"),
        // Matches the literal term once, in a long description.
        Descriptor::new(Source::Plugin, "p", "quotes").description(
            "price of things and many other unrelated words to make this document long indeed",
        ),
        // Two identical tools: tie broken by id.
        Descriptor::new(Source::Plugin, "b", "price_b").description("price"),
        Descriptor::new(Source::Plugin, "a", "price_a").description("price"),
        // Named exactly like the query.
        Descriptor::new(Source::Plugin, "z", "price").description("nothing relevant"),
    ]);
    let got = ids(&index, "price", 10);
    assert_eq!(got[0], "plugin:z:price", "exact name first");
    assert!(got.iter().position(|i| i == "plugin:p:web_web").unwrap() == got.len() - 1);
    let a = got.iter().position(|i| i == "plugin:a:price_a").unwrap();
    let b = got.iter().position(|i| i == "plugin:b:price_b").unwrap();
    assert!(a < b, "equal scores are ordered by id: {got:?}");
    // An exact id is case-sensitive; a name match is not.
    assert_eq!(ids(&index, "plugin:p:quotes", 1), ["plugin:p:quotes"]);
    assert_eq!(ids(&index, "QUOTES", 1), ["plugin:p:quotes"]);
}

#[test]
fn repeated_query_words_count_once() {
    let index = index_of(vec![
        Descriptor::new(Source::Plugin, "p", "alpha").description("calendar event"),
        Descriptor::new(Source::Plugin, "p", "beta").description("calendar calendar"),
        Descriptor::new(Source::Plugin, "p", "gamma").description("event planning"),
    ]);
    let once = index.rank("calendar event", 3);
    let repeated = index.rank("calendar calendar calendar event", 3);
    assert_eq!(once, repeated);
}

#[test]
fn untrusted_tools_show_no_signatures_and_their_schemas_are_not_indexed() {
    let schema = json!({"type":"object","properties":{"zebra_param":{"type":"string","description":"unicorn"}},"required":["zebra_param"]});
    let index = index_of(vec![
        Descriptor::new(Source::Mcp, "srv", "mcp_tool")
            .description("does things")
            .input_schema(schema.clone()),
        Descriptor::new(Source::Plugin, "p", "trusted_tool")
            .description("does things")
            .input_schema(schema),
    ]);
    assert_eq!(
        ids(&index, "unicorn zebra_param", 5),
        ["plugin:p:trusted_tool"]
    );
    let hits = index.search("does things", 5);
    let mcp = hits.iter().find(|h| h.source == Source::Mcp).unwrap();
    assert_eq!(mcp.input, "unknown");
    assert_eq!(mcp.output, None);
    let trusted = hits.iter().find(|h| h.source == Source::Plugin).unwrap();
    assert_eq!(trusted.input, "{ zebra_param: string }");
}

#[test]
fn the_index_is_built_once_per_snapshot_and_policy() {
    let cache = toolsearch::IndexCache::new();
    let snapshot = toolsearch::demo::catalog();
    let view = Authorized::new(snapshot.clone(), Policy::allow_all());
    let first = cache.get(&view).unwrap();
    let again = cache
        .get(&Authorized::new(
            toolsearch::demo::catalog(),
            Policy::allow_all(),
        ))
        .unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "same content, same index"
    );
    let narrowed = Policy::from_json(&json!({"session": {"deny": ["plugin:web:*"]}})).unwrap();
    let other = cache.get(&Authorized::new(snapshot, narrowed)).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &other));
}
