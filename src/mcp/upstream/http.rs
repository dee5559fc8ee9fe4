//! A streamable-HTTP upstream: the configured headers checked and sent with every request, and
//! the handshake.
//!
//! Never does: retry (the supervisor loop and the call path decide that).

use std::collections::HashMap;

use rmcp::ClientServiceExt;
use rmcp::service::{RoleClient, RunningService};

use super::{Events, Upstream, UpstreamError};

impl Upstream {
    /// Connects to the server at `url` and shakes hands.
    pub(super) async fn connect_http(
        &self,
        events: Events,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
    ) -> Result<RunningService<RoleClient, Events>, UpstreamError> {
        let mut custom = HashMap::new();
        for (name, value) in headers {
            let name = http::HeaderName::try_from(name.as_str()).map_err(|e| {
                UpstreamError::HeaderName {
                    name: name.clone(),
                    detail: e.to_string(),
                }
            })?;
            let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| {
                UpstreamError::HeaderValue {
                    name: name.to_string(),
                    detail: e.to_string(),
                }
            })?;
            custom.insert(name, value);
        }
        crate::mcp::install_tls_provider();
        let config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url,
            )
            .custom_headers(custom);
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        let service = events
            .serve_with_lifecycle(transport, super::lifecycle(self.config.protocol))
            .await
            .map_err(|e| UpstreamError::HttpHandshake {
                url: url.to_string(),
                detail: e.to_string(),
            })?;
        Ok(service)
    }
}
