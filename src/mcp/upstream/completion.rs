//! One server's argument completion: whether its `initialize` answer declared `completions`,
//! and `completion/complete` forwarded to it.
//!
//! Never does: resolve which server owns a prompt or template (`mcp::prompts` and
//! `mcp::resources` do), or change what the server sent.

use rmcp::model::{
    ClientRequest, CompleteRequest, CompleteRequestParams, CompleteResult, ErrorData, ServerResult,
};
use rmcp::service::{Peer, RoleClient};

use super::{Upstream, lock};

impl Upstream {
    /// Notes whether the server just connected through `peer` offers completions.
    pub(super) fn note_completions(&self, peer: &Peer<RoleClient>) {
        lock(&self.offered).completions = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.completions.is_some());
    }

    /// Whether the server offers `completion/complete`.
    pub fn offers_completions(&self) -> bool {
        lock(&self.offered).completions
    }

    /// `completion/complete` with `params` naming the server's own prompt or template,
    /// answered as the server sent it.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        match self
            .request(ClientRequest::CompleteRequest(CompleteRequest::new(params)))
            .await?
        {
            ServerResult::CompleteResult(result) => Ok(result),
            _ => Err(self.answered_otherwise("completion/complete")),
        }
    }
}
