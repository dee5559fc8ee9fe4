use pretty_assertions::assert_eq;
use serde_json::json;
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
fn a_non_english_query_that_matches_nothing_returns_nothing() {
    let index = demo_index();
    assert_eq!(index.search("天気予報を教えてください", 8), vec![]);
    assert_eq!(index.search("Wettervorhersage übermorgen", 8), vec![]);
    assert_eq!(index.search("the of and to", 8), vec![]);
    assert_eq!(index.search("   ", 8), vec![]);
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
