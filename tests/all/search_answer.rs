//! Search answers through the public API: `select:` (order, duplicates, denied names, lenient
//! forms, 20 names, batches) and the partial-result signal in tools mode, batches and code mode.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{CatalogSnapshot, Config, Descriptor, Mode, Policy, Reply, Session, Source};

use crate::support::{BIN, rt};

fn tool(owner: &str, name: &str, description: &str) -> Descriptor {
    Descriptor::new(Source::Plugin, owner, name).description(description)
}

/// 30 tools that all match "email", plus a few others.
fn tools() -> Vec<Descriptor> {
    let mut tools = vec![
        tool("mail", "send_email", "Send an email message"),
        tool("mail", "draft_email", "Draft an email message"),
        tool("cal", "create_event", "Create a calendar event"),
        tool("cal", "list_events", "List calendar events"),
        tool("files", "readFile", "Read a file"),
        tool("secret", "vault_read", "Read a secret from the vault"),
    ];
    for i in 0..30 {
        tools.push(tool(
            "bulk",
            &format!("email_tool_{i:02}"),
            "Email message tool",
        ));
    }
    tools
}

fn session_with(tools: Vec<Descriptor>, policy: Policy, mode: Mode) -> Session {
    rt().block_on(
        Session::builder(Config::default())
            .mode(mode)
            .catalog(CatalogSnapshot::build(tools))
            .policy(policy)
            .worker_binary(BIN)
            .build(),
    )
    .unwrap()
}

fn session(policy: Policy) -> Session {
    session_with(tools(), policy, Mode::Tools)
}

/// What the model reads for a `tool_search` call in tools mode.
fn model_text(session: &Session, args: Value) -> String {
    let reply = rt().block_on(session.handle("tool_search", &args));
    assert!(!reply.is_error(), "{}", reply.text());
    reply.text()
}

/// The JSON of a search reply, and its note line.
fn split(text: &str) -> (Value, Option<String>) {
    match text.split_once('\n') {
        Some((json, note)) => (serde_json::from_str(json).unwrap(), Some(note.to_string())),
        None => (serde_json::from_str(text).unwrap(), None),
    }
}

fn ids(hits: &Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn select_keeps_the_order_given_and_collapses_duplicates() {
    let session = session(Policy::allow_all());
    let text = model_text(
        &session,
        json!({"query": "select:create_event, send_email,plugin:mail:send_email ,create_event"}),
    );
    let (hits, note) = split(&text);
    assert_eq!(
        ids(&hits),
        ["plugin:cal:create_event", "plugin:mail:send_email"]
    );
    assert_eq!(note.as_deref(), Some("All 2 selected tools shown."));
    // The select answer ignores the default limit of 8 but not the max of 20.
    let names: Vec<String> = (0..20).map(|i| format!("email_tool_{i:02}")).collect();
    let text = model_text(
        &session,
        json!({"query": format!("SELECT:{}", names.join(","))}),
    );
    let (hits, note) = split(&text);
    assert_eq!(
        ids(&hits),
        names
            .iter()
            .map(|n| format!("plugin:bulk:{n}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(note.as_deref(), Some("All 20 selected tools shown."));
    // 21 names: an error naming the bound.
    let names: Vec<String> = (0..21).map(|i| format!("email_tool_{i:02}")).collect();
    let reply = rt().block_on(session.handle(
        "tool_search",
        &json!({"query": format!("select:{}", names.join(","))}),
    ));
    assert!(reply.is_error());
    assert!(
        reply.text().contains("at most 20 names") && reply.text().contains("maxSearchLimit"),
        "{}",
        reply.text()
    );
}

#[test]
fn select_resolves_lenient_forms_and_suggests_for_misses() {
    let session = session(Policy::allow_all());
    let text = model_text(
        &session,
        json!({"query": "select:mail.send_email, cal__list_events, Read File, CREATE_EVENT, sendd_email"}),
    );
    let (hits, note) = split(&text);
    assert_eq!(
        ids(&hits),
        [
            "plugin:mail:send_email",
            "plugin:cal:list_events",
            "plugin:files:readFile",
            "plugin:cal:create_event"
        ]
    );
    let note = note.unwrap();
    assert!(
        note.contains("no tool is named \"sendd_email\" (did you mean \"plugin:mail:send_email\""),
        "{note}"
    );
}

#[test]
fn a_denied_name_in_select_answers_byte_for_byte_like_an_unknown_one() {
    let denied = Policy::from_json(&json!({"session": {"deny": ["plugin:secret:*"]}})).unwrap();
    let with_denied = session(denied);
    let without = session_with(
        tools()
            .into_iter()
            .filter(|t| t.owner != "secret")
            .collect(),
        Policy::allow_all(),
        Mode::Tools,
    );
    for query in [
        "select:zzz",
        "select:vault_read",
        "select:send_email,plugin:secret:vault_read,secret.vault_read",
        "vault_read",
        "read a secret from the vault",
    ] {
        let a = model_text(&with_denied, json!({"query": query}));
        let b = model_text(&without, json!({"query": query}));
        assert_eq!(a, b, "{query}");
        // Nothing of the denied tool shows but the name the query itself gave.
        let (hits, _) = split(&a);
        assert!(!hits.to_string().contains("secret"), "{a}");
        assert!(!a.contains("Read a secret"), "{a}");
        let batch = json!({"queries": [{"query": query}, {"query": "email"}]});
        assert_eq!(
            model_text(&with_denied, batch.clone()),
            model_text(&without, batch),
            "{query}"
        );
    }
}

#[test]
fn select_in_a_batch_carries_its_not_found_names() {
    let session = session(Policy::allow_all());
    let text = model_text(
        &session,
        json!({"queries": [{"query": "select:send_email,nope"}, {"query": "calendar"}]}),
    );
    let (batch, note) = split(&text);
    let group = &batch["results"][0];
    assert_eq!(ids(&group["candidates"]), ["plugin:mail:send_email"]);
    assert_eq!(group["matched"], 1);
    assert_eq!(group["not_found"][0]["name"], "nope");
    assert!(note.unwrap().contains("no tool is named \"nope\""));
}

#[test]
fn tools_mode_says_when_the_limit_cut_the_list_and_when_it_did_not() {
    let session = session(Policy::allow_all());
    // 32 tools mention email; the default limit shows 8.
    let (hits, note) = split(&model_text(&session, json!({"query": "email"})));
    assert_eq!(hits.as_array().unwrap().len(), 8);
    assert_eq!(
        note.as_deref(),
        Some("8 of 32 matching tools shown; refine the query or raise limit (at most 20).")
    );
    let (hits, note) = split(&model_text(
        &session,
        json!({"query": "email", "limit": 20}),
    ));
    assert_eq!(hits.as_array().unwrap().len(), 20);
    assert_eq!(
        note.as_deref(),
        Some("20 of 32 matching tools shown; refine the query (20 is the most one search shows).")
    );
    // Not cut.
    let (hits, note) = split(&model_text(&session, json!({"query": "calendar"})));
    assert_eq!(hits.as_array().unwrap().len(), 2);
    assert_eq!(note.as_deref(), Some("All 2 matching tools shown."));
    let (hits, note) = split(&model_text(&session, json!({"query": "zebra"})));
    assert_eq!(hits, json!([]));
    assert_eq!(note.as_deref(), Some("No tool matched; try other words."));
    // The embedder's reply carries the same as JSON.
    let Reply::Searched(searched) = session.search(&json!({"query": "email", "limit": 3})) else {
        panic!("a search reply")
    };
    assert_eq!(
        searched.signal,
        Some(json!({"matched": 32, "truncated": true}))
    );
}

#[test]
fn batch_groups_say_matched_and_truncated_by_the_limit() {
    let session = session(Policy::allow_all());
    let (batch, note) = split(&model_text(
        &session,
        json!({"queries": [{"query": "email", "limit": 3}, {"query": "calendar"}]}),
    ));
    assert_eq!(batch["results"][0]["matched"], 32);
    assert_eq!(batch["results"][0]["truncated"], true);
    assert_eq!(batch["results"][1]["matched"], 2);
    assert!(batch["results"][1].get("truncated").is_none());
    assert_eq!(batch["truncated"], true);
    assert_eq!(
        note.as_deref(),
        Some(
            "\"email\": 3 of 32 matching tools shown; refine the query or raise limit (at most 20)."
        )
    );
    let (batch, note) = split(&model_text(
        &session,
        json!({"queries": [{"query": "calendar"}, {"query": "vault"}]}),
    ));
    assert!(batch.get("truncated").is_none());
    assert_eq!(note, None);
}

#[test]
fn code_mode_tells_the_model_even_when_a_cell_returns_the_hits_unchanged() {
    rt().block_on(code_mode_signal());
}

async fn code_mode_signal() {
    let session = Session::builder(Config::default())
        .mode(Mode::Code)
        .catalog(CatalogSnapshot::build(tools()))
        .worker_binary(BIN)
        .warm_pool(1)
        .build()
        .await
        .unwrap();
    let run = async |code: &str| {
        let reply = session
            .handle("tool_search_code", &json!({ "code": code }))
            .await;
        assert!(!reply.is_error(), "{}", reply.text());
        reply.body()
    };
    let cut = run("return await openclaw.tools.search('email', {limit: 3})").await;
    assert_eq!(cut["value"].as_array().unwrap().len(), 3);
    assert_eq!(
        cut["logs"],
        json!([{"level": "log", "text": "[openclaw.tools.search] 3 of 32 matching tools shown."}])
    );
    // The array carries the counts as properties the cell can read.
    let counts = run(
        "const hits = await openclaw.tools.search('email', {limit: 3});\n\
         return {matched: hits.matched, truncated: hits.truncated, keys: Object.keys(hits).length}",
    )
    .await;
    assert_eq!(
        counts["value"],
        json!({"matched": 32, "truncated": true, "keys": 3})
    );
    // Not cut: no note, and truncated is false.
    let whole = run("const hits = await openclaw.tools.search('calendar');\n\
         return {n: hits.length, matched: hits.matched, truncated: hits.truncated}")
    .await;
    assert_eq!(
        whole["value"],
        json!({"n": 2, "matched": 2, "truncated": false})
    );
    // Nothing logged: the model's answer has no logs at all.
    assert!(whole.get("logs").is_none(), "{whole}");
    // select: names not found are logged and listed on the array.
    let select = run(
        "const hits = await openclaw.tools.search('select:send_email,nope');\n\
         return {ids: hits.map(h => h.id), missing: hits.not_found.map(m => m.name)}",
    )
    .await;
    assert_eq!(
        select["value"],
        json!({"ids": ["plugin:mail:send_email"], "missing": ["nope"]})
    );
    assert!(
        select["logs"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no tool is named \"nope\""),
        "{select}"
    );
    // A batch keeps its object; a cut group's note is logged.
    let batch = run("return await openclaw.tools.search(['email', 'calendar'])").await;
    assert_eq!(batch["value"]["results"][0]["truncated"], true);
    assert!(batch["value"].get("note").is_none());
    assert!(
        batch["logs"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[openclaw.tools.search] \"email\": 8 of 32"),
        "{batch}"
    );
    session.finish().await;
}
