//! Exact names win in every form: the pooled real catalogs and the pooled eval catalogs, every
//! name of at least 6 characters verbatim, with separators as spaces, camelCase split, and in
//! another case; the rule is in front of the ranker and never sees a denied tool.

use std::path::Path;

use pretty_assertions::assert_eq;
use toolsearch::{
    Authorized, CatalogSnapshot, Descriptor, Policy, SearchIndex, Source, load_catalog_file,
    tool_id,
};

/// Every tool of the real catalogs in `../shared/catalogs/`, pooled into one snapshot.
pub fn pooled_real_catalogs() -> CatalogSnapshot {
    let mut files: Vec<_> = std::fs::read_dir(crate::support::shared().join("catalogs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let mut tools = Vec::new();
    for path in files {
        tools.extend(
            load_catalog_file(&path, Source::Plugin)
                .unwrap()
                .descriptors,
        );
    }
    CatalogSnapshot::build(tools)
}

/// The four eval catalogs pooled as `toolsearch eval --pooled` pools them: tools whose owner is
/// the file's stem belong to their set, so equal names from different sets stay distinct tools.
pub fn pooled_eval_catalogs() -> CatalogSnapshot {
    let mut tools = Vec::new();
    for set in ["bfcl", "livemcpbench", "seal_tools", "toolbench"] {
        let path = crate::support::shared()
            .join("eval")
            .join(set)
            .join("catalog.jsonl");
        for mut tool in load_catalog_file(&path, Source::Plugin)
            .unwrap()
            .descriptors
        {
            if tool.owner == "catalog" {
                tool.owner = set.to_string();
                tool.id = tool_id(tool.source, &tool.owner, &tool.name);
            }
            let key = tool.external_id.clone().unwrap_or_else(|| tool.id.clone());
            tool.external_id = Some(format!("{set}:{key}"));
            tools.push(tool);
        }
    }
    CatalogSnapshot::build(tools)
}

/// Lowercased words: `_ - . / :` and whitespace as separators, camelCase split (the test's
/// own reading of "the same name", written independently of the crate's).
fn words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let starts_word = i > 0
            && c.is_uppercase()
            && (chars[i - 1].is_lowercase()
                || chars[i - 1].is_numeric()
                || (chars[i - 1].is_uppercase()
                    && chars.get(i + 1).is_some_and(|n| n.is_lowercase())));
        if c.is_whitespace() || matches!(c, '_' | '-' | '.' | '/' | ':') || starts_word {
            out.push(' ');
        }
        if !(c.is_whitespace() || matches!(c, '_' | '-' | '.' | '/' | ':')) {
            out.extend(c.to_lowercase());
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The name with `_`, `-` and `.` written as spaces.
fn with_spaces(name: &str) -> String {
    name.replace(['_', '-', '.'], " ")
}

/// The name with `_`, `-` and `.` written as spaces and camelCase split.
fn split_words(name: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() && (chars[i - 1].is_lowercase() || chars[i - 1].is_numeric()) {
            out.push(' ');
        }
        out.push(if matches!(c, '_' | '-' | '.') { ' ' } else { c });
    }
    out
}

/// One failed check: (form, query, first hit's name).
type Failure = (&'static str, String, Option<String>);

/// How many names were checked, and every check that failed.
fn failures(index: &SearchIndex) -> (usize, Vec<Failure>) {
    let mut names: Vec<&str> = index
        .view()
        .tools()
        .map(|tool| tool.name.as_str())
        .filter(|name| name.chars().count() >= 6)
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut failed = Vec::new();
    let mut first = |form: &'static str, query: String, same: &dyn Fn(&str) -> bool| {
        let hit = index.search(&query, 8).into_iter().next();
        if !hit.as_ref().is_some_and(|hit| same(&hit.name)) {
            failed.push((form, query, hit.map(|hit| hit.name)));
        }
    };
    for &name in &names {
        first("verbatim", name.to_string(), &|got| got == name);
        first("lower case", name.to_lowercase(), &|got| {
            got.to_lowercase() == name.to_lowercase()
        });
        first("upper case", name.to_uppercase(), &|got| {
            got.to_lowercase() == name.to_lowercase()
        });
        first("spaces", with_spaces(name), &|got| {
            words(got) == words(name)
        });
        first("camelCase split", split_words(name), &|got| {
            words(got) == words(name)
        });
    }
    (names.len(), failed)
}

fn assert_every_name_first(snapshot: CatalogSnapshot, at_least: usize) {
    let index = SearchIndex::build(&Authorized::new(snapshot, Policy::allow_all())).unwrap();
    let (names, failed) = failures(&index);
    assert!(names >= at_least, "only {names} names");
    assert!(
        failed.is_empty(),
        "{} of {} queries did not rank a tool of that name first, e.g. {:?}",
        failed.len(),
        names * 5,
        &failed[..failed.len().min(15)]
    );
}

#[test]
fn every_real_tool_name_finds_its_tool_first_in_every_form() {
    assert_every_name_first(pooled_real_catalogs(), 3_000);
}

#[test]
fn every_eval_tool_name_finds_its_tool_first_in_every_form_pooled() {
    assert_every_name_first(pooled_eval_catalogs(), 5_000);
}

fn tool(owner: &str, name: &str, description: &str) -> Descriptor {
    Descriptor::new(Source::Plugin, owner, name).description(description)
}

fn index_of(tools: Vec<Descriptor>, policy: Policy) -> SearchIndex {
    SearchIndex::build(&Authorized::new(CatalogSnapshot::build(tools), policy)).unwrap()
}

fn ids(index: &SearchIndex, query: &str, limit: usize) -> Vec<String> {
    index
        .search(query, limit)
        .into_iter()
        .map(|hit| hit.id)
        .collect()
}

/// Tools whose words overlap, so that the lexical score alone would put another tool first.
fn overlapping() -> Vec<Descriptor> {
    vec![
        tool("maps", "Google_Maps_-_Geocoding", "Geocode"),
        tool(
            "maps",
            "Google_Maps_-_Address_Validation",
            "Google Maps address validation with Google Maps geocoding of each Google Maps address",
        ),
        tool("gh", "create_issue", "Open a ticket"),
        tool("jira", "Create-Issue", "Open a ticket in Jira"),
        tool(
            "tracker",
            "file_bug",
            "Create an issue: create issue, create a new issue, issue creation, create issue",
        ),
        tool("npm", "npmVersions", "List versions"),
        tool(
            "npm",
            "npm_search",
            "Search npm packages and their versions; npm versions list",
        ),
    ]
}

#[test]
fn a_named_tool_beats_any_score() {
    let index = index_of(overlapping(), Policy::allow_all());
    for query in [
        "Google Maps - Geocoding",
        "google maps geocoding",
        "GOOGLE_MAPS_-_GEOCODING",
        "Google.Maps.Geocoding",
        "google/maps/geocoding",
    ] {
        assert_eq!(
            ids(&index, query, 3)[0],
            "plugin:maps:Google_Maps_-_Geocoding",
            "{query}"
        );
    }
    for query in [
        "npm versions",
        "NPM VERSIONS",
        "Npm Versions",
        "npmversions",
        "npm_versions",
    ] {
        assert_eq!(
            ids(&index, query, 3)[0],
            "plugin:npm:npmVersions",
            "{query}"
        );
    }
    // Several tools of one name: all of them first, in the ranker's order, above the tool whose
    // description repeats the words.
    let got = ids(&index, "create issue", 3);
    let ranked = index.rank("create issue", 3);
    assert!(
        ranked[0].exact && ranked[1].exact && !ranked[2].exact,
        "{ranked:?}"
    );
    assert!(ranked[0].score >= ranked[1].score, "{ranked:?}");
    assert!(
        ranked[2].score > ranked[0].score,
        "the wordier tool scores higher: {ranked:?}"
    );
    let mut first_two = got[..2].to_vec();
    first_two.sort();
    assert_eq!(
        first_two,
        ["plugin:gh:create_issue", "plugin:jira:Create-Issue"]
    );
    assert_eq!(got[2], "plugin:tracker:file_bug");
    // The closer form first: the name ignoring case beats a spaced form.
    assert_eq!(ids(&index, "CREATE-ISSUE", 1), ["plugin:jira:Create-Issue"]);
    assert_eq!(ids(&index, "Create_Issue", 1), ["plugin:gh:create_issue"]);
    // An exact match is found even when the limit is 1 and many tools score higher.
    assert_eq!(ids(&index, "npm versions", 1), ["plugin:npm:npmVersions"]);
}

#[test]
fn a_denied_name_answers_like_a_name_that_does_not_exist() {
    let denied =
        Policy::from_json(&serde_json::json!({"session": {"deny": ["plugin:npm:npmVersions"]}}))
            .unwrap();
    let with_denied = index_of(overlapping(), denied);
    let without: Vec<Descriptor> = overlapping()
        .into_iter()
        .filter(|tool| tool.name != "npmVersions")
        .collect();
    let absent = index_of(without, Policy::allow_all());
    for query in [
        "npmVersions",
        "npm versions",
        "NPM_VERSIONS",
        "plugin:npm:npmVersions",
    ] {
        let got = with_denied.search(query, 8);
        assert!(got.iter().all(|hit| hit.name != "npmVersions"), "{query}");
        assert_eq!(got, absent.search(query, 8), "{query}");
        assert_eq!(
            with_denied.ranking(query, 8, &Default::default()).matched,
            absent.ranking(query, 8, &Default::default()).matched,
            "{query}"
        );
    }
}

#[test]
fn exact_names_hold_in_the_cli() {
    let catalog = crate::support::shared().join("catalogs/npm_mcp_servers.jsonl");
    let snapshot = load_catalog_file(Path::new(&catalog), Source::Mcp).unwrap();
    let camel = snapshot
        .descriptors
        .iter()
        .map(|tool| tool.name.clone())
        .find(|name| split_words(name) != *name && name.len() >= 8)
        .expect("a camelCase name");
    let out = crate::support::toolsearch(&[
        "search",
        &split_words(&camel).to_lowercase(),
        "--catalog",
        catalog.to_str().unwrap(),
        "--catalog-source",
        "mcp",
        "--limit",
        "2",
        "--json",
    ]);
    let stdout = crate::support::stdout(&out);
    assert!(out.status.success(), "{stdout}");
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["hits"][0]["name"], camel.as_str(), "{stdout}");
}
