//! Resources through `serve`, driven by the official Python SDK
//! (`tests/fixtures/mcp/resources.py`): server-everything's resources (all pages) and template
//! expansions read through toolsearch as from the server itself, over stdio and HTTP; a denied
//! server's resources in no answer; a URI two servers both list reachable on each; a
//! subscription's updates relayed to the client that subscribed; nothing declared that no
//! upstream offers (the filesystem server).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{
    argv, config_file, everything, fixtures, module, policy_flags, sdk_script, through_serve,
};

/// Expansions of server-everything's two templates (text, and a blob).
const EXTRA: &str = "demo://resource/dynamic/text/1,demo://resource/dynamic/blob/2";

/// The Python SDK's view of resources: directly from `upstream` (when given) and through
/// `serve` over `servers` (over HTTP when `http`), with `extra` flags for serve.
fn resources(
    servers: Value,
    upstream: Option<&Value>,
    http: bool,
    serve_flags: &[&str],
    absent: &[&str],
) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), servers);
    let mut client = sdk_script("resources.py");
    client
        .args(["--extra", EXTRA])
        .args(["--absent", &absent.join(",")]);
    if let Some(upstream) = upstream {
        client.args(["--upstream", &argv(upstream)]);
    }
    let mut flags: Vec<String> = serve_flags.iter().map(|f| f.to_string()).collect();
    if let Some(at) = flags.iter().position(|f| f == "--policy") {
        let policy: Value = serde_json::from_str(&flags[at + 1]).unwrap();
        flags.splice(at..at + 2, policy_flags(dir.path(), &policy));
    }
    through_serve(client, &config, "tools", &flags, http)
}

fn uris(side: &Value, key: &str, field: &str) -> Vec<String> {
    side[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn every_resource_of_server_everything_reads_the_same_through_serve_over_stdio_and_http() {
    for http in [false, true] {
        let out = resources(
            json!({"everything": everything()}),
            Some(&everything()),
            http,
            &["--page-size", "3"],
            &[],
        );
        let (direct, through) = (&out["direct"], &out["through"]);
        let listed = direct["resources"].as_array().unwrap().len();
        assert!(
            listed >= 4,
            "server-everything lists its documents: {direct}"
        );
        assert_eq!(through["resources"], direct["resources"], "http: {http}");
        assert_eq!(through["templates"], direct["templates"], "http: {http}");
        assert_eq!(through["reads"], direct["reads"], "http: {http}");
        // Pages of 3: every page followed.
        assert_eq!(through["pages"], json!(listed.div_ceil(3)), "http: {http}");
        // Text and blob contents both went through.
        let reads = through["reads"].as_object().unwrap();
        assert!(reads.values().any(|r| r["contents"][0]["text"].is_string()));
        assert!(
            reads["demo://resource/dynamic/blob/2"]["contents"][0]["blob"]
                .as_str()
                .unwrap()
                .starts_with("decoded: Resource 2: This is a base64 blob"),
            "{reads:?}"
        );
        // Declared only because the upstream offers resources.
        assert!(
            through["capabilities"]["resources"].is_object(),
            "{through}"
        );
    }
}

fn conformance_server() -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("servers/conformance_server.py"), "--stdio"],
    })
}

#[test]
fn a_denied_servers_resources_appear_in_no_listing_read_or_error() {
    let servers = json!({"everything": everything(), "secret": conformance_server()});
    let absent = [
        "test://static-text",
        "test://template/7/data",
        "test://no-such-thing",
    ];
    // Allowed, its resources and template are there (so the denial below is what hides them).
    let open = resources(servers.clone(), None, false, &[], &absent);
    let through = &open["through"];
    assert!(uris(through, "resources", "uri").contains(&"test://static-text".to_string()));
    assert!(
        uris(through, "templates", "uriTemplate")
            .contains(&"test://template/{id}/data".to_string())
    );
    assert_eq!(through["errors"]["test://static-text"], Value::Null);
    let policy = json!({"session": {"deny": ["mcp:secret:*"]}}).to_string();
    for http in [false, true] {
        let out = resources(servers.clone(), None, http, &["--policy", &policy], &absent);
        let through = &out["through"];
        let shown =
            json!([through["resources"], through["templates"], through["reads"]]).to_string();
        assert!(
            !shown.contains("test://static") && !shown.contains("test://template/{"),
            "{shown}"
        );
        assert!(
            !uris(through, "resources", "uri").is_empty(),
            "everything's stay"
        );
        // A denied URI is answered exactly like one nobody has.
        let unknown = through["errors"]["test://no-such-thing"].as_str().unwrap();
        for uri in ["test://static-text", "test://template/7/data"] {
            let error = through["errors"][uri].as_str().unwrap();
            assert_eq!(error, unknown.replace("test://no-such-thing", uri), "{uri}");
            assert!(!error.contains("secret"), "{error}");
        }
    }
}

#[test]
fn a_uri_two_servers_both_list_stays_reachable_on_each() {
    let out = resources(
        json!({"everything": everything(), "twin": everything()}),
        Some(&everything()),
        false,
        &[],
        &[],
    );
    let (direct, through) = (&out["direct"], &out["through"]);
    let own = uris(direct, "resources", "uri");
    let shown = uris(through, "resources", "uri");
    let expected: Vec<String> = own
        .iter()
        .cloned()
        .chain(own.iter().map(|uri| format!("toolsearch://twin/{uri}")))
        .collect();
    assert_eq!(shown, expected);
    for uri in &own {
        let twin = format!("toolsearch://twin/{uri}");
        assert_eq!(through["reads"][&twin], direct["reads"][uri], "{twin}");
        assert_eq!(through["reads"][uri], direct["reads"][uri], "{uri}");
    }
}

#[test]
fn a_subscribed_client_gets_the_servers_resource_updates_until_it_unsubscribes() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({"everything": everything()}));
    let uri = "demo://resource/static/document/features.md";
    let mut client = sdk_script("subscribe.py");
    client.args(["--uri", uri]);
    let out = through_serve(client, &config, "tools", &[], false);
    assert_eq!(out["updated"][0], uri, "{out}");
    // Unsubscribed: no further update reaches it, although the server keeps sending for 6 s.
    assert_eq!(out["after"], json!([]), "{out}");
}

#[test]
fn serve_declares_resources_and_prompts_only_when_an_upstream_offers_them() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("notes.txt"), "kept").unwrap();
    let filesystem = json!({
        "command": "node",
        "args": [module("@modelcontextprotocol/server-filesystem/dist/index.js"), files.display().to_string()],
    });
    // The filesystem server offers tools only: serve in front of it offers no more than it does.
    let alone = resources(
        json!({"filesystem": filesystem}),
        Some(&filesystem),
        false,
        &[],
        &[],
    );
    for side in ["direct", "through"] {
        let capabilities = &alone[side]["capabilities"];
        assert_eq!(
            capabilities["resources"],
            Value::Null,
            "{side}: {capabilities}"
        );
        assert_eq!(
            capabilities["prompts"],
            Value::Null,
            "{side}: {capabilities}"
        );
        assert!(capabilities["tools"].is_object(), "{side}: {capabilities}");
    }
    // Beside server-everything, over HTTP: exactly everything's resources, read the same.
    let both = resources(
        json!({"filesystem": filesystem, "everything": everything()}),
        Some(&everything()),
        true,
        &[],
        &[],
    );
    let (direct, through) = (&both["direct"], &both["through"]);
    assert_eq!(through["resources"], direct["resources"]);
    assert_eq!(through["reads"], direct["reads"]);
    assert!(through["capabilities"]["prompts"].is_object(), "{through}");
}
