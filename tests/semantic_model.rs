//! The real pinned model (all-MiniLM-L6-v2, fetched by `scripts/fetch-model.sh`; its directory
//! in `TOOLSEARCH_SEMANTIC_MODEL`): it verifies against the manifest, loads, and its vectors
//! put a paraphrase next to the tool it means. `.ci/run` fetches the model and runs these.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use toolsearch::semantic::{Embedder, ModelDir, Pooling, Trust, cosine};

fn model_dir() -> PathBuf {
    match std::env::var_os("TOOLSEARCH_SEMANTIC_MODEL") {
        Some(dir) => PathBuf::from(dir),
        None => panic!(
            "these tests need the real model: run scripts/fetch-model.sh and set \
             TOOLSEARCH_SEMANTIC_MODEL=models/all-MiniLM-L6-v2 (an absolute path)"
        ),
    }
}

#[test]
fn the_pinned_model_verifies_and_loads() {
    let dir = ModelDir::open(&model_dir(), Trust::Verified).unwrap();
    assert_eq!(dir.known, Some("sentence-transformers/all-MiniLM-L6-v2"));
    assert_eq!(dir.pooling, Pooling::Mean);
    assert_eq!(dir.max_tokens, 256);
    let embedder = Embedder::load(dir).unwrap();
    assert_eq!(embedder.dimension(), 384);
    // The shipped tokenizer.json pads to 128; a query is not padded.
    assert_eq!(embedder.tokens("create calendar event").unwrap().len(), 5);
}

#[test]
fn hello_world_is_the_vector_other_implementations_print() {
    // The first five components of all-MiniLM-L6-v2's "Hello world", as several independent
    // projects (ONNX, C#, Go bindings, a vector database's docs) print them:
    // -0.034477282, 0.03102318, 0.006734989, 0.02610899, -0.03936202.
    let embedder = Embedder::open(&model_dir(), Trust::Verified).unwrap();
    let vector = embedder.embed_one("Hello world").unwrap();
    let published = [
        -0.034477282f32,
        0.03102318,
        0.006734989,
        0.02610899,
        -0.03936202,
    ];
    for (i, (got, want)) in vector.iter().zip(published).enumerate() {
        assert!((got - want).abs() < 2e-6, "component {i}: {got} vs {want}");
    }
    assert!((cosine(&vector, &vector) - 1.0).abs() < 1e-5);
}

#[test]
fn a_paraphrase_is_nearest_the_tool_it_means() {
    let embedder = Embedder::open(&model_dir(), Trust::Verified).unwrap();
    let tools = [
        "create_calendar_event: Create a new event in the user's calendar",
        "delete_file: Delete a file from the workspace",
        "send_email: Send an email message to a recipient",
        "get_weather: Current weather and forecast for a city",
        "convert_currency: Convert an amount between two currencies",
        "list_pull_requests: List the open pull requests of a repository",
    ];
    let vectors = embedder.embed(&tools).unwrap();
    let cases = [
        ("book a slot in my agenda", 0),
        ("remove that document", 1),
        ("write to my boss that I am late", 2),
        ("will it rain in Paris tomorrow", 3),
        ("how many yen is 40 euros", 4),
        ("which code changes are waiting for review", 5),
    ];
    for (query, expected) in cases {
        let q = embedder.embed_one(query).unwrap();
        let scores: Vec<f32> = vectors.iter().map(|v| cosine(&q, v)).collect();
        let best = (0..tools.len())
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap();
        assert_eq!(best, expected, "{query:?} → {:?} ({scores:?})", tools[best]);
        // One at a time and in a batch: the same vector.
        let alone = embedder.embed_one(tools[expected]).unwrap();
        assert!(cosine(&alone, &vectors[expected]) > 0.99999);
    }
}

#[test]
fn search_finds_by_meaning_what_no_word_of_the_query_names() {
    let scratch = tempfile::tempdir().unwrap();
    let catalog = scratch.path().join("tools.jsonl");
    let tools = [
        (
            "create_calendar_event",
            "Create a new event in the user's calendar",
        ),
        ("delete_file", "Delete a file from the workspace"),
        ("send_email", "Send an email message to a recipient"),
        ("get_weather", "Current weather and forecast for a city"),
    ];
    let lines: Vec<String> = tools
        .iter()
        .map(|(name, description)| {
            serde_json::json!({"id": name, "name": name, "description": description,
                               "input_schema": {"type": "object"}})
            .to_string()
        })
        .collect();
    std::fs::write(&catalog, lines.join("\n")).unwrap();
    let run = |ranker: &str, query: &str| -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["search", "--json", "--ranker", ranker, "--catalog"])
            .arg(&catalog)
            .arg("--semantic-model")
            .arg(model_dir())
            .arg("--cache-dir")
            .arg(scratch.path().join("cache"))
            .arg(query)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for (query, tool) in [
        ("will it rain in Paris tomorrow", "get_weather"),
        ("remove that document", "delete_file"),
    ] {
        let lexical = run("lexical", query);
        assert!(lexical["hits"].as_array().unwrap().is_empty(), "{lexical}");
        let hybrid = run("hybrid", query);
        assert_eq!(hybrid["ranker"], "hybrid");
        assert_eq!(
            hybrid["hits"][0]["id"],
            format!("plugin:tools:{tool}"),
            "{hybrid}"
        );
    }
}
