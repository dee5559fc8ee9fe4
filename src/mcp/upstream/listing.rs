//! `tools/list` through every page, up to the per-server tool cap (the pages after it are not
//! asked for), read entry by entry into the catalog's descriptors.
//!
//! Never does: decide which tools the model sees (policy and the surfaces do).

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, CustomResult, PaginatedRequestParams, RequestOptionalParam, ServerResult,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::{Upstream, UpstreamError};
use crate::mcp::ingest::{self, Ingest};

/// Most `tools/list` pages followed per listing.
pub const MAX_PAGES: usize = 100;
impl Upstream {
    /// `tools/list` through every page, up to the per-server tool cap (the pages after it are
    /// not asked for); publishes the new tools. A stdio page arrives as its message's text and
    /// is read entry by entry (`transport.rs`, `ingest::read_page`); an HTTP page as rmcp
    /// decoded it (a typed list, or the plain JSON value when one of its tools did not decode).
    pub(super) async fn list(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Result<(), UpstreamError> {
        let mut ingest = Ingest::new(&self.config, &self.filters);
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let request = ClientRequest::ListToolsRequest(RequestOptionalParam::with_param(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ));
            let answer = peer
                .send_request(request)
                .await
                .map_err(|e| UpstreamError::List(e.to_string()))?;
            let next = match answer {
                ServerResult::CustomResult(CustomResult(Value::String(message))) => {
                    ingest::read_page(&message, &mut ingest).map_err(UpstreamError::Page)?
                }
                ServerResult::ListToolsResult(page) => {
                    for entry in page_entries(page.tools) {
                        ingest.value(&entry);
                    }
                    page.next_cursor
                }
                ServerResult::CustomResult(CustomResult(Value::Object(mut page))) => {
                    let Some(Value::Array(tools)) = page.remove("tools") else {
                        return Err(UpstreamError::NoToolsArray);
                    };
                    for entry in &tools {
                        ingest.value(entry);
                    }
                    page.remove("nextCursor")
                        .and_then(|c| c.as_str().map(str::to_string))
                }
                _ => return Err(UpstreamError::NotAToolList),
            };
            match next {
                Some(next) if !next.is_empty() && Some(&next) != cursor.as_ref() => {
                    if ingest.full() {
                        // The cap is reached: the pages after this one are not asked for.
                        ingest.pages_left_unread();
                        self.publish(ingest.finish());
                        return Ok(());
                    }
                    cursor = Some(next);
                }
                _ => {
                    self.publish(ingest.finish());
                    return Ok(());
                }
            }
        }
        Err(UpstreamError::TooManyPages(MAX_PAGES))
    }
}

/// One `tools/list` page's tools as the JSON entries [`ingest::ingest`] reads (a tool that does
/// not serialize is left out).
pub(crate) fn page_entries(tools: Vec<rmcp::model::Tool>) -> impl Iterator<Item = Value> {
    tools
        .into_iter()
        .filter_map(|tool| serde_json::to_value(&tool).ok())
}
