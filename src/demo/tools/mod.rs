//! The demo tool implementations, one module per owner, and the (owner, name) → handler map.
//!
//! Each module owns its state type (seeded in [`super::DemoWorld::seeded`]) and exposes
//! `handler(name)`. Client tools have no implementation here: the calling application runs
//! them. Two MCP servers (`weather-mcp`, `maps-mcp`) are implemented in memory too.

pub(crate) mod agent;
pub(crate) mod automations;
pub(crate) mod calendar;
pub(crate) mod chat;
pub(crate) mod coding;
pub(crate) mod contacts;
pub(crate) mod files;
pub(crate) mod finance;
pub(crate) mod github;
pub(crate) mod images;
pub(crate) mod mail;
mod maps;
mod math;
pub(crate) mod memory;
pub(crate) mod notes;
pub(crate) mod tasks;
mod text;
mod time;
pub(crate) mod translate;
mod units;
mod weather;
pub(crate) mod web;

use super::world::Handler;

/// The implementation of the tool `name` of `owner`, if the demo has one.
pub(crate) fn handler(owner: &str, name: &str) -> Option<Handler> {
    match owner {
        "agent" => agent::handler(name),
        "automations" => automations::handler(name),
        "calendar" => calendar::handler(name),
        "chat" => chat::handler(name),
        "contacts" => contacts::handler(name),
        "core" => coding::handler(name),
        "files" => files::handler(name),
        "finance" => finance::handler(name),
        "github" => github::handler(name),
        "images" => images::handler(name),
        "mail" => mail::handler(name),
        "maps-mcp" => maps::handler(name),
        "math" => math::handler(name),
        "memory" => memory::handler(name),
        "notes" => notes::handler(name),
        "tasks" => tasks::handler(name),
        "text" => text::handler(name),
        "time" => time::handler(name),
        "translate" => translate::handler(name),
        "units" => units::handler(name),
        "weather" => weather::handler(name),
        "weather-mcp" => weather::mcp_handler(name),
        "web" => web::handler(name),
        _ => None,
    }
}
