//! One server's resources and resource templates (and the state of what it offers besides
//! tools, [`Offered`]): listed through every page (up to
//! [`MAX_RESOURCES_PER_SERVER`] each) when the server says it offers resources, again on its
//! `notifications/resources/list_changed`, and kept as it sent them; `resources/read`,
//! `resources/subscribe` and `resources/unsubscribe` forwarded to it.
//!
//! Never does: decide which client sees what (policy, URI clashes and routing are
//! `mcp::resources`'s), or change what the server sent.

use std::sync::Arc;

use rmcp::model::{
    ClientRequest, ErrorData, PaginatedRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, ReadResourceResult, RequestOptionalParam, Resource,
    ResourceTemplate, ServerResult, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient};

use super::listing::MAX_PAGES;
use super::{Upstream, lock};

/// Resources (and, apart, resource templates) kept per server at most; past it no further page
/// is asked for and a warning names the bound.
pub const MAX_RESOURCES_PER_SERVER: usize = 10_000;

/// What a server offers besides tools, as it listed it last.
#[derive(Debug, Default)]
pub(super) struct Offered {
    /// Whether its `initialize` answer declared `resources`, and `resources.subscribe`.
    pub(super) resources: bool,
    pub(super) subscribe: bool,
    pub(super) resource_list: Arc<[Resource]>,
    pub(super) templates: Arc<[ResourceTemplate]>,
    /// Whether its `initialize` answer declared `prompts`, and its prompts.
    pub(super) prompts: bool,
    pub(super) prompt_list: Arc<[rmcp::model::Prompt]>,
    /// Whether its `initialize` answer declared `completions`.
    pub(super) completions: bool,
}

impl Upstream {
    /// Lists resources and resource templates when the server offers them (see the module
    /// docs). A failure is logged and leaves the previous listing: tools never wait on it.
    pub(super) async fn list_resources(&self, peer: &Peer<RoleClient>) {
        let capability = peer
            .peer_info()
            .and_then(|info| info.capabilities.resources.clone());
        let Some(capability) = capability else {
            let mut offered = lock(&self.offered);
            offered.resources = false;
            offered.subscribe = false;
            offered.resource_list = Arc::from([]);
            offered.templates = Arc::from([]);
            return;
        };
        let resources = self
            .listed(
                peer,
                "resources/list",
                ClientRequest::ListResourcesRequest,
                |page| match page {
                    ServerResult::ListResourcesResult(page) => page.resources,
                    _ => Vec::new(),
                },
            )
            .await;
        let templates = self
            .listed(
                peer,
                "resources/templates/list",
                ClientRequest::ListResourceTemplatesRequest,
                |page| match page {
                    ServerResult::ListResourceTemplatesResult(page) => page.resource_templates,
                    _ => Vec::new(),
                },
            )
            .await;
        let mut offered = lock(&self.offered);
        offered.resources = true;
        offered.subscribe = capability.subscribe == Some(true);
        match resources {
            Ok(resources) => offered.resource_list = resources.into(),
            Err(reason) => {
                tracing::warn!(server = %self.config.name, %reason, "resources/list failed")
            }
        }
        match templates {
            Ok(templates) => offered.templates = templates.into(),
            // A server may offer resources without templates and answer "method not found".
            Err(reason) => {
                tracing::debug!(server = %self.config.name, %reason, "resources/templates/list failed")
            }
        }
    }

    /// The entries of one listing (each page's, by `items`), at most
    /// [`MAX_RESOURCES_PER_SERVER`]; a request of it is `wrap` of its paginated parameters.
    async fn listed<M: Default, T>(
        &self,
        peer: &Peer<RoleClient>,
        method: &str,
        wrap: impl Fn(RequestOptionalParam<M, PaginatedRequestParams>) -> ClientRequest,
        items: impl Fn(ServerResult) -> Vec<T>,
    ) -> Result<Vec<T>, String> {
        let pages = self
            .pages(peer, method, |cursor| {
                wrap(RequestOptionalParam::with_param(
                    PaginatedRequestParams::default().with_cursor(cursor),
                ))
            })
            .await?;
        Ok(pages
            .into_iter()
            .flat_map(items)
            .take(MAX_RESOURCES_PER_SERVER)
            .collect())
    }

    /// Every page of one listing, following `nextCursor` (at most [`MAX_PAGES`] pages, and no
    /// further page once [`MAX_RESOURCES_PER_SERVER`] entries arrived).
    async fn pages(
        &self,
        peer: &Peer<RoleClient>,
        method: &str,
        request: impl Fn(Option<String>) -> ClientRequest,
    ) -> Result<Vec<ServerResult>, String> {
        let mut pages = Vec::new();
        let mut cursor: Option<String> = None;
        let mut entries = 0;
        for _ in 0..MAX_PAGES {
            let page = peer
                .send_request(request(cursor.clone()))
                .await
                .map_err(|e| format!("{method}: {e}"))?;
            let (count, next) = match &page {
                ServerResult::ListResourcesResult(page) => {
                    (page.resources.len(), page.next_cursor.clone())
                }
                ServerResult::ListResourceTemplatesResult(page) => {
                    (page.resource_templates.len(), page.next_cursor.clone())
                }
                _ => return Err(format!("{method} was answered with something else")),
            };
            pages.push(page);
            entries += count;
            match next {
                Some(next) if !next.is_empty() && Some(&next) != cursor.as_ref() => {
                    if entries >= MAX_RESOURCES_PER_SERVER {
                        tracing::warn!(server = %self.config.name, "{method}: more than {MAX_RESOURCES_PER_SERVER} entries (MAX_RESOURCES_PER_SERVER); the rest were not asked for");
                        return Ok(pages);
                    }
                    cursor = Some(next);
                }
                _ => return Ok(pages),
            }
        }
        Err(format!("{method}: more than {MAX_PAGES} pages"))
    }

    /// Whether the server offers resources (and whether it lets clients subscribe to them).
    pub fn offers_resources(&self) -> (bool, bool) {
        let offered = lock(&self.offered);
        (offered.resources, offered.subscribe)
    }

    /// Its resources as it listed them last.
    pub fn resources(&self) -> Arc<[Resource]> {
        lock(&self.offered).resource_list.clone()
    }

    /// Its resource templates as it listed them last.
    pub fn resource_templates(&self) -> Arc<[ResourceTemplate]> {
        lock(&self.offered).templates.clone()
    }

    /// `resources/read` of `uri` (the server's own URI), answered as the server sent it; the
    /// server's own error as it sent it, any other failure one sentence naming the server.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        match self.request(request).await? {
            ServerResult::ReadResourceResult(result) => Ok(result),
            _ => Err(self.answered_otherwise("resources/read")),
        }
    }

    /// `resources/subscribe` (or, with `subscribe` false, `resources/unsubscribe`) of `uri`.
    #[expect(
        deprecated,
        reason = "the legacy subscription requests are the ones servers of the protocol \
                  generations before 2026-07-28 understand; subscriptions/listen is not relayed yet"
    )]
    pub async fn subscribe_resource(&self, uri: &str, subscribe: bool) -> Result<(), ErrorData> {
        let request = if subscribe {
            ClientRequest::SubscribeRequest(rmcp::model::SubscribeRequest::new(
                SubscribeRequestParams::new(uri),
            ))
        } else {
            ClientRequest::UnsubscribeRequest(rmcp::model::UnsubscribeRequest::new(
                UnsubscribeRequestParams::new(uri),
            ))
        };
        self.request(request).await.map(|_| ())
    }

    /// The error of a `method` request the server answered with another kind of result.
    pub(super) fn answered_otherwise(&self, method: &str) -> ErrorData {
        ErrorData::internal_error(
            format!(
                "the MCP server {:?} answered {method} with something else",
                self.config.name
            ),
            None,
        )
    }

    /// One request on the live connection (waiting for a starting server), bounded by
    /// `callTimeoutMs`: the server's own error as it sent it, any other failure one sentence
    /// naming the server.
    pub(super) async fn request(&self, request: ClientRequest) -> Result<ServerResult, ErrorData> {
        let failed = |message: String| ErrorData::internal_error(message, None);
        let (_, peer) = self
            .ready_peer(None)
            .await
            .map_err(|error| failed(error.message))?;
        let name = &self.config.name;
        match tokio::time::timeout(self.config.call_timeout, peer.send_request(request)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(rmcp::ServiceError::McpError(error))) => Err(error),
            Ok(Err(error)) => Err(failed(format!("the MCP server {name:?} failed: {error}"))),
            Err(_) => Err(failed(format!(
                "the MCP server {name:?} did not answer within {} ms",
                self.config.call_timeout.as_millis()
            ))),
        }
    }
}
