use std::path::PathBuf;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{
    CatalogIssue, CatalogMode, CatalogSnapshot, Descriptor, Source, load_catalog_file,
    parse_catalog,
};

use crate::support::shared;

fn real_catalog_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "eval/bfcl",
        "eval/livemcpbench",
        "eval/seal_tools",
        "eval/toolbench",
    ] {
        files.push(shared().join(dir).join("catalog.jsonl"));
    }
    for entry in std::fs::read_dir(shared().join("catalogs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_real_catalog_file_loads_without_losing_a_tool() {
    let files = real_catalog_files();
    assert_eq!(files.len(), 8, "{files:?}");
    for path in files {
        let lines = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        let loaded = load_catalog_file(&path, Source::Plugin).unwrap();
        assert!(
            loaded.issues.is_empty(),
            "{}: {:?}",
            path.display(),
            loaded.issues
        );
        assert_eq!(loaded.descriptors.len(), lines, "{}", path.display());
        let snapshot = CatalogSnapshot::build(loaded.descriptors);
        assert_eq!(snapshot.len(), lines, "{}", path.display());
        // Every line's own id stays resolvable as the external id.
        let externals: std::collections::HashSet<_> = snapshot
            .tools()
            .iter()
            .filter_map(|t| t.external_id.clone())
            .collect();
        assert_eq!(externals.len(), lines, "{}", path.display());
    }
}

#[test]
fn mcp_tools_list_answers_load_as_untrusted() {
    let path = shared().join("mcp/server-everything.tools.json");
    let loaded = load_catalog_file(&path, Source::Mcp).unwrap();
    assert!(loaded.issues.is_empty(), "{:?}", loaded.issues);
    assert_eq!(loaded.descriptors.len(), 13);
    let echo = loaded
        .descriptors
        .iter()
        .find(|d| d.name == "echo")
        .unwrap();
    assert_eq!(echo.source, Source::Mcp);
    assert!(!echo.is_trusted());
    assert_eq!(echo.id, "mcp:server-everything.tools:echo");
    assert!(echo.input_schema.get("properties").is_some());
}

#[test]
fn owner_comes_from_server_then_id_prefix_then_file_stem() {
    let text = [
        r#"{"id":"a__x","name":"x","description":"d","input_schema":{},"server":"My Server"}"#,
        r#"{"id":"srv__y","name":"y","description":"d","input_schema":{}}"#,
        r#"{"id":"z","name":"z","description":"d","input_schema":{}}"#,
    ]
    .join("\n");
    let loaded = parse_catalog(&text, "stemname", Source::Plugin).unwrap();
    let ids: Vec<_> = loaded.descriptors.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        ["plugin:My_Server:x", "plugin:srv:y", "plugin:stemname:z"]
    );
    assert_eq!(loaded.descriptors[1].external_id.as_deref(), Some("srv__y"));
}

#[test]
fn a_bad_line_is_reported_and_skipped_and_the_rest_loads() {
    let text = [
        r#"{"id":"ok1","name":"ok1","description":"fine"}"#,
        r#"{"id":"broken", "name": }"#,
        r#"{"id":"noname","description":"x"}"#,
        r#"{"id":"badschema","name":"b","input_schema":"nope"}"#,
        r#"[1,2]"#,
        r#"{"id":"ok2","name":"ok2","description":"fine","inputSchema":{"type":"object"}}"#,
    ]
    .join("\n");
    let loaded = parse_catalog(&text, "f", Source::Plugin).unwrap();
    assert_eq!(loaded.descriptors.len(), 2);
    let lines: Vec<usize> = loaded.issues.iter().map(|i| i.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
    assert!(loaded.issues[1].message.contains("missing \"name\""));
    assert!(loaded.issues[2].message.contains("input_schema"));
}

#[test]
fn fingerprint_ignores_insertion_order_and_sees_content() {
    let tools = || {
        vec![
            Descriptor::new(Source::Plugin, "a", "one").description("first"),
            Descriptor::new(Source::Mcp, "srv", "two").description("second"),
            Descriptor::new(Source::Core, "core", "read"),
        ]
    };
    let forward = CatalogSnapshot::build(tools());
    let mut reversed_tools = tools();
    reversed_tools.reverse();
    let reversed = CatalogSnapshot::build(reversed_tools);
    assert_eq!(forward.fingerprint(), reversed.fingerprint());
    let ids: Vec<_> = forward.tools().iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids, ["core:core:read", "mcp:srv:two", "plugin:a:one"]);

    let mut changed = tools();
    changed[0].description = "first, edited".into();
    assert_ne!(
        CatalogSnapshot::build(changed).fingerprint(),
        forward.fingerprint()
    );
}

#[test]
fn id_clashes_keep_every_tool_and_are_reported_deterministically() {
    let a = Descriptor::new(Source::Plugin, "p", "same").description("alpha");
    let b = Descriptor::new(Source::Plugin, "p", "same").description("beta");
    let one = CatalogSnapshot::build(vec![a.clone(), b.clone()]);
    let two = CatalogSnapshot::build(vec![b, a]);
    assert_eq!(one.len(), 2);
    assert_eq!(one.fingerprint(), two.fingerprint());
    let describe = |s: &CatalogSnapshot| {
        s.tools()
            .iter()
            .map(|t| (t.id.clone(), t.description.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(describe(&one), describe(&two));
    assert!(
        matches!(&one.issues()[0], CatalogIssue::IdClash { id, assigned }
        if id == "plugin:p:same" && assigned.len() == 2)
    );
}

#[test]
fn direct_only_tools_stay_out_of_the_catalog_and_core_primitives_stay_in() {
    let mut direct = Descriptor::new(Source::Core, "core", "ask_user");
    direct.catalog_mode = CatalogMode::DirectOnly;
    let read = Descriptor::new(Source::Core, "core", "read");
    let mcp_read = Descriptor::new(Source::Mcp, "fs", "read");
    let snapshot = CatalogSnapshot::build(vec![direct, read, mcp_read]);
    assert_eq!(snapshot.direct_only().len(), 1);
    assert!(snapshot.position("core:core:ask_user").is_none());
    let core_read = &snapshot.tools()[snapshot.position("core:core:read").unwrap() as usize];
    assert!(core_read.is_core_primitive());
    let other = &snapshot.tools()[snapshot.position("mcp:fs:read").unwrap() as usize];
    assert!(
        !other.is_core_primitive(),
        "an MCP tool named like a primitive stays deferred"
    );
}

#[test]
fn client_files_get_the_client_owner_and_executor() {
    let loaded = parse_catalog(
        r#"{"id":"x__open","name":"open","input_schema":{"type":"object"},"server":"x"}"#,
        "f",
        Source::Client,
    )
    .unwrap();
    let tool = &loaded.descriptors[0];
    assert_eq!(tool.id, "client:client:open");
    assert!(matches!(tool.executor, toolsearch::Executor::Client));
    let _ = json!({});
}
