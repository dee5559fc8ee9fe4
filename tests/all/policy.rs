use proptest::prelude::*;
use serde_json::json;
use toolsearch::{Authorized, Policy, PolicyError};
use toolsearch::{CatalogSnapshot, Descriptor, Source};
use toolsearch::{Gateway, SearchIndex};

const NAMES: [&str; 10] = [
    "send_message",
    "search_web",
    "create_event",
    "list_files",
    "read",
    "convert",
    "get_status",
    "delete_note",
    "fetch_page",
    "remind",
];
const WORDS: [&str; 16] = [
    "message", "calendar", "event", "file", "search", "web", "note", "price", "weather", "remind",
    "schedule", "list", "create", "delete", "status", "page",
];
const OWNERS: [&str; 3] = ["alpha", "beta", "gamma"];

fn tool_strategy() -> impl Strategy<Value = Descriptor> {
    (
        0..OWNERS.len(),
        0..NAMES.len(),
        prop_oneof![Just(Source::Plugin), Just(Source::Mcp), Just(Source::Core)],
        prop::collection::vec(0..WORDS.len(), 0..8),
    )
        .prop_map(|(owner, name, source, words)| {
            let description: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
            Descriptor::new(source, OWNERS[owner], NAMES[name])
                .description(description.join(" "))
                .input_schema(json!({"type":"object","properties":{WORDS[name % WORDS.len()]: {"type":"string","description": WORDS[(name + 3) % WORDS.len()]}}}))
        })
}

fn glob_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..NAMES.len()).prop_map(|n| NAMES[n].to_string()),
        (0..OWNERS.len()).prop_map(|o| format!("*:{}:*", OWNERS[o])),
        Just("mcp:*".to_string()),
        Just("core:*".to_string()),
        (0..WORDS.len()).prop_map(|w| format!("*{}*", WORDS[w])),
    ]
}

fn policy_strategy() -> impl Strategy<Value = serde_json::Value> {
    (
        prop::collection::vec(glob_strategy(), 0..4),
        prop::option::of(prop::collection::vec(glob_strategy(), 0..3)),
    )
        .prop_map(|(deny, allow)| {
            let mut session = json!({ "deny": deny });
            if let Some(allow) = allow {
                session["allow"] = json!(allow);
            }
            json!({ "session": session })
        })
}

fn query_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(0..WORDS.len(), 1..4).prop_map(|w| w
            .iter()
            .map(|&i| WORDS[i])
            .collect::<Vec<_>>()
            .join(" ")),
        (0..NAMES.len()).prop_map(|n| NAMES[n].to_string()),
        Just("look up the latest news".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// results under policy P over S equal results over a snapshot holding only the
    /// tools of S that P allows — ranking, scores, suggestions and errors included.
    #[test]
    fn a_policy_ranks_exactly_like_a_catalog_of_the_allowed_tools(
        tools in prop::collection::vec(tool_strategy(), 1..30),
        policy in policy_strategy(),
        queries in prop::collection::vec(query_strategy(), 1..5),
    ) {
        let policy = Policy::from_json(&policy).unwrap();
        let snapshot = CatalogSnapshot::build(tools);
        let allowed: Vec<Descriptor> = snapshot.tools().iter().filter(|t| policy.allows(t)).cloned().collect();
        let denied: Vec<String> = snapshot.tools().iter().filter(|t| !policy.allows(t)).map(|t| t.id.clone()).collect();
        let allowed_count = allowed.len();

        let narrowed = SearchIndex::build(&Authorized::new(snapshot.clone(), policy.clone())).unwrap();
        let narrowed_gateway = Gateway::builder(snapshot.clone()).policy(policy).build().unwrap();
        let only_allowed = SearchIndex::build(&Authorized::new(CatalogSnapshot::build(allowed.clone()), Policy::allow_all())).unwrap();
        let only_allowed_gateway = Gateway::builder(CatalogSnapshot::build(allowed)).build().unwrap();
        let describe = |gateway: &Gateway, selector: &str| {
            gateway
                .describe(&serde_json::Value::from(selector))
                .map(|d| d["id"].as_str().unwrap_or_default().to_string())
                .map_err(|e| e.message)
        };
        prop_assert_eq!(narrowed.view().len(), allowed_count);

        for query in &queries {
            let a: Vec<(String, f32, bool)> = narrowed.rank(query, 20).iter()
                .map(|r| (narrowed.tool(r.position).unwrap().id.clone(), r.score, r.literal)).collect();
            let b: Vec<(String, f32, bool)> = only_allowed.rank(query, 20).iter()
                .map(|r| (only_allowed.tool(r.position).unwrap().id.clone(), r.score, r.literal)).collect();
            prop_assert_eq!(&a, &b, "query {:?}", query);
            for (id, _, _) in &a {
                prop_assert!(!denied.contains(id));
            }
            // Every search answer, what it says it covers included, is the same: single and
            // batch forms, cut by the limit or not, and `select:` naming denied tools.
            let mut requests = vec![
                json!({"query": query, "limit": 2}),
                json!({"query": query, "limit": 20}),
                json!({"queries": [{"query": query, "limit": 1}, {"query": "event"}]}),
            ];
            let mut named: Vec<&str> = denied.iter().map(String::as_str).take(4).collect();
            named.push(query);
            named.push("send_message");
            requests.push(json!({"query": format!("select:{}", named.join(","))}));
            for request in &requests {
                let a = narrowed_gateway.search(request).map(|r| r.render(20)).map_err(|e| e.message);
                let b = only_allowed_gateway.search(request).map(|r| r.render(20)).map_err(|e| e.message);
                prop_assert_eq!(&a, &b, "request {}", request);
            }
            // Suggestions and lookups see allowed tools only, and answer the same way.
            let la = describe(&narrowed_gateway, query);
            let lb = describe(&only_allowed_gateway, query);
            prop_assert_eq!(&la, &lb);
        }
        // Describing a denied tool answers exactly like describing an unknown one.
        for id in &denied {
            let a = describe(&narrowed_gateway, id);
            let b = describe(&only_allowed_gateway, id);
            prop_assert_eq!(&a, &b);
            if let Err(message) = &a {
                for other in &denied {
                    prop_assert!(!message.contains(&format!("{other:?}")) || other == id,
                        "a denied id leaked into {}", message);
                }
            }
        }
    }
}

#[test]
fn policy_file_shape_follows_r_2_4() {
    let tool = |source, owner: &str, name: &str| Descriptor::new(source, owner, name);
    let mail = tool(Source::Plugin, "mail", "send_email");
    let cal = tool(Source::Plugin, "calendar", "create_event");
    let mcp = tool(Source::Mcp, "gh", "create_issue");

    let policy = Policy::from_json(&json!({
        "agent": {"allow": ["plugin:*", "mcp:*"]},
        "profile": {"deny": ["send_*"]},
        "session": {"allow": ["*event*", "mcp:gh:*"]}
    }))
    .unwrap();
    assert!(!policy.allows(&mail), "deny wins (matched by name)");
    assert!(policy.allows(&cal));
    assert!(policy.allows(&mcp));

    let nothing = Policy::from_json(&json!({"sandbox": {"allow": []}})).unwrap();
    assert!(!nothing.allows(&cal), "an empty allow-list allows nothing");

    let mut external = tool(Source::Plugin, "x", "y");
    external.external_id = Some("vendor__thing".into());
    let by_external = Policy::from_json(&json!({"agent": {"deny": ["vendor__*"]}})).unwrap();
    assert!(
        !by_external.allows(&external),
        "globs match the external id"
    );

    assert!(Policy::allow_all().allows(&mail));
}

#[test]
fn bad_policies_fail_closed_with_the_key() {
    let cases = [
        (json!([]), "must be a JSON object"),
        (json!({"user": {}}), "unknown policy layer \"user\""),
        (
            json!({"agent": {"allow": "x"}}),
            "\"allow\" must be an array",
        ),
        (json!({"agent": {"permit": []}}), "unknown key \"permit\""),
        (json!({"agent": {"deny": ["a[b"]}}), "invalid glob \"a[b\""),
        (json!({"agent": {"deny": [3]}}), "entries must be strings"),
    ];
    for (value, expected) in cases {
        let error: PolicyError = Policy::from_json(&value).unwrap_err();
        assert!(error.to_string().contains(expected), "{value}: {error}");
    }
}

#[test]
fn a_bad_glob_is_named_itself_wherever_it_is_in_the_list() {
    for layer in ["agent", "profile", "sandbox", "session"] {
        for key in ["allow", "deny"] {
            let policy = json!({layer: {key: ["plugin:*", "*:send", "mail[", "mcp:?:x", "*"]}});
            let error = Policy::from_json(&policy).unwrap_err().to_string();
            assert!(error.contains("\"mail[\""), "{error}");
            assert!(error.contains(layer), "{error}");
            for good in ["\"plugin:*\"", "\"*:send\"", "\"mcp:?:x\""] {
                assert!(!error.contains(good), "{error}");
            }
        }
    }
    let approvals = toolsearch::GlobApprovals::new(&[
        "plugin:*".to_string(),
        "{a,b".to_string(),
        "*:send".to_string(),
    ]);
    let error = approvals.err().unwrap_or_default();
    assert!(error.contains("\"{a,b\""), "{error}");
    assert!(!error.contains("plugin:*"), "{error}");
}
