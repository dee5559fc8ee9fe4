//! One server's prompts: listed through every page (up to [`MAX_PROMPTS_PER_SERVER`]) when the
//! server says it offers prompts, again on its `notifications/prompts/list_changed`, and kept as
//! it sent them; `prompts/get` forwarded.
//!
//! Never does: name prompts for clients or apply policy (`mcp::prompts` does), or change what
//! the server sent.

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, ErrorData, GetPromptRequest, GetPromptRequestParams, GetPromptResult,
    JsonObject, PaginatedRequestParams, Prompt, RequestOptionalParam, ServerResult,
};
use rmcp::service::{Peer, RoleClient};

use super::listing::MAX_PAGES;
use super::{Upstream, lock};

/// Prompts kept per server at most; past it no further page is asked for and a warning names
/// the bound.
pub const MAX_PROMPTS_PER_SERVER: usize = 10_000;

impl Upstream {
    /// Lists the prompts when the server offers them. A failure is logged and leaves the
    /// previous listing: tools never wait on it.
    pub(super) async fn list_prompts(&self, peer: &Peer<RoleClient>) {
        let offered = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !offered {
            let mut state = lock(&self.offered);
            state.prompts = false;
            state.prompt_list = Arc::from([]);
            return;
        }
        let mut prompts: Vec<Prompt> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let request = ClientRequest::ListPromptsRequest(RequestOptionalParam::with_param(
                PaginatedRequestParams::default().with_cursor(cursor.clone()),
            ));
            let page = match peer.send_request(request).await {
                Ok(ServerResult::ListPromptsResult(page)) => page,
                Ok(_) => {
                    tracing::warn!(server = %self.config.name, "prompts/list was answered with something else");
                    return;
                }
                Err(error) => {
                    tracing::warn!(server = %self.config.name, %error, "prompts/list failed");
                    return;
                }
            };
            prompts.extend(page.prompts);
            match page.next_cursor {
                Some(next) if !next.is_empty() && Some(&next) != cursor.as_ref() => {
                    if prompts.len() >= MAX_PROMPTS_PER_SERVER {
                        tracing::warn!(server = %self.config.name, "prompts/list: more than {MAX_PROMPTS_PER_SERVER} prompts (MAX_PROMPTS_PER_SERVER); the rest were not asked for");
                        break;
                    }
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        prompts.truncate(MAX_PROMPTS_PER_SERVER);
        let mut state = lock(&self.offered);
        state.prompts = true;
        state.prompt_list = prompts.into();
    }

    /// Whether the server offers prompts.
    pub fn offers_prompts(&self) -> bool {
        lock(&self.offered).prompts
    }

    /// Its prompts as it listed them last.
    pub fn prompts(&self) -> Arc<[Prompt]> {
        lock(&self.offered).prompt_list.clone()
    }

    /// `prompts/get` of its prompt `name` (its own name), answered as the server sent it; the
    /// server's own error as it sent it, any other failure one sentence naming the server.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ErrorData> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        match self
            .request(ClientRequest::GetPromptRequest(GetPromptRequest::new(
                params,
            )))
            .await?
        {
            ServerResult::GetPromptResult(result) => Ok(result),
            _ => Err(self.answered_otherwise("prompts/get")),
        }
    }
}
