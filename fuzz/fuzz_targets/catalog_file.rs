//! The catalog-file loader (JSON Lines, a JSON array, or a `tools/list` answer) on arbitrary
//! bytes. Invariants: issues are sorted and point at real lines; every loaded tool has a
//! non-blank name and the id its source, owner and name give; the loaded catalog re-serializes
//! as JSON Lines that load back to the same tools; a snapshot builds from it with unique ids.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolsearch::fuzzing::{CatalogSnapshot, Descriptor, Source, load_catalog_bytes};

fn entry(d: &Descriptor) -> Value {
    let mut entry = json!({
        "name": d.name,
        "server": d.owner,
        "description": d.description,
        "input_schema": d.input_schema,
    });
    if let Some(id) = &d.external_id {
        entry["id"] = json!(id);
    }
    if let Some(schema) = &d.output_schema {
        entry["output_schema"] = schema.clone();
    }
    if let Some(label) = &d.label {
        entry["label"] = json!(label);
    }
    entry
}

fn same(a: &Descriptor, b: &Descriptor) -> bool {
    a.id == b.id
        && a.name == b.name
        && a.owner == b.owner
        && a.description == b.description
        && a.input_schema == b.input_schema
        && a.output_schema == b.output_schema
        && a.label == b.label
        && a.external_id == b.external_id
        && a.source == b.source
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let source = match selector % 3 {
        0 => Source::Plugin,
        1 => Source::Mcp,
        _ => Source::Client,
    };
    let Some(loaded) = load_catalog_bytes(bytes, "fuzz", source) else {
        return;
    };
    let lines = bytes.split(|b| *b == b'\n').count().max(1);
    let mut last = 0;
    for issue in &loaded.issues {
        assert!(issue.line >= 1, "issue line 0: {issue}");
        assert!(issue.line >= last, "issues out of order");
        last = issue.line;
        // JSON Lines count lines; a document counts entries, which are fewer than its bytes.
        assert!(
            issue.line <= lines.max(bytes.len()),
            "issue beyond the input: {issue}"
        );
    }
    for d in &loaded.descriptors {
        assert!(!d.name.trim().is_empty(), "blank name loaded");
        assert_eq!(d.source, source);
        assert_eq!(
            d.id,
            toolsearch::tool_id(source, &d.owner, &d.name),
            "id not derived from source, owner and name"
        );
        assert!(d.input_schema.is_object(), "input schema is not an object");
        assert!(d.output_schema.as_ref().is_none_or(Value::is_object));
    }
    // Re-serialize as JSON Lines and load again: the same tools, no issues.
    let mut text = String::new();
    for d in &loaded.descriptors {
        text.push_str(&entry(d).to_string());
        text.push('\n');
    }
    let again = load_catalog_bytes(text.as_bytes(), "other-stem", source)
        .expect("re-serialized catalog is JSON Lines");
    assert!(
        again.issues.is_empty(),
        "re-serialized catalog has issues: {:?}",
        again.issues
    );
    assert_eq!(again.descriptors.len(), loaded.descriptors.len());
    for (a, b) in loaded.descriptors.iter().zip(&again.descriptors) {
        assert!(same(a, b), "round trip changed a tool:\n{a:?}\n{b:?}");
    }
    let snapshot = CatalogSnapshot::build(loaded.descriptors);
    let mut ids: Vec<&str> = snapshot.tools().iter().map(|d| d.id.as_str()).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "snapshot has duplicate ids");
});
