//! The embedded demo catalog (placeholder; replaced by the full catalog).
#![allow(missing_docs)]
use serde_json::json;

use crate::catalog::{CatalogSnapshot, Descriptor, Source};

pub fn descriptors() -> Vec<Descriptor> {
    vec![
        Descriptor::new(Source::Plugin, "automations", "create_automation")
            .description("Schedule a recurring task that runs on a cron expression")
            .input_schema(json!({"type":"object","properties":{"cron":{"type":"string"},"task":{"type":"string"}},"required":["cron","task"]})),
        Descriptor::new(Source::Plugin, "web", "web_search")
            .description("Search the web and return result titles, links and snippets")
            .input_schema(json!({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})),
        Descriptor::new(Source::Plugin, "notes", "this")
            .description("Return the note currently in focus")
            .input_schema(json!({"type":"object","properties":{}})),
    ]
}

pub fn catalog() -> CatalogSnapshot {
    CatalogSnapshot::build(descriptors())
}
