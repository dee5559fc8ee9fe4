//! Resources federated over the upstreams, as `serve` offers them.
//!
//! Owns: one listing of every allowed resource (and resource template) in a stable order —
//! servers in config order, each server's entries in its own order — with URIs as the servers
//! name them, except where two servers list the same URI: the first (in config order) keeps it,
//! each later one is reachable under [`gateway_uri`] (`toolsearch://<server>/<uri>`, which
//! [`parse_gateway_uri`] maps back) and the clash is logged once; routing a `resources/read`,
//! `resources/subscribe` or `resources/unsubscribe` to its server — a gateway URI to the server
//! it names, a listed URI to the server that lists it, any other URI to the first server (in
//! config order) with a template that matches it ([`template_matches`], RFC 6570 level 1–3);
//! and policy: a resource is visible iff the policy allows `mcp:<server>:<uri>` and its URI, a
//! template iff it allows `mcp:<server>:<uriTemplate>` and the template, so a denied server's
//! resources are in no listing, read or error (an unknown and a denied URI get the same answer).
//!
//! Never does: read or change what a server sent beyond a clashing URI; put resource text
//! anywhere near the model's instructions.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ErrorData, ReadResourceResult, Resource, ResourceTemplate};

use super::{Offer, Upstream, Upstreams, lock};
use crate::policy::Policy;

/// The scheme of a URI that names the server a clashing resource comes from.
pub const GATEWAY_SCHEME: &str = "toolsearch://";

/// URIs longer than this never match a template (the matcher backtracks).
const MAX_MATCHED_URI_BYTES: usize = 8 * 1024;

/// The resources of a run's upstreams (see the module docs).
#[derive(Clone, Default)]
pub struct Resources {
    servers: Vec<Arc<Upstream>>,
    offers: Option<tokio::sync::broadcast::Sender<Offer>>,
    /// Clashes already logged: (server, uri).
    logged: Arc<Mutex<HashSet<(String, String)>>>,
}

/// One visible resource and where it comes from.
pub struct Listed {
    /// As the client sees it (its URI a gateway URI when it clashed).
    pub resource: Resource,
    /// The server.
    pub server: Arc<Upstream>,
    /// The URI as the server names it.
    pub uri: String,
}

impl Resources {
    /// The resources of `upstreams`.
    pub fn of(upstreams: &Upstreams) -> Resources {
        Resources {
            servers: upstreams.servers().to_vec(),
            offers: Some(upstreams.offers.clone()),
            logged: Arc::default(),
        }
    }

    /// Whether some server offers resources, and whether some lets clients subscribe.
    pub fn offered(&self) -> (bool, bool) {
        self.servers
            .iter()
            .map(|server| server.offers_resources())
            .fold((false, false), |(a, b), (c, d)| (a || c, b || d))
    }

    /// What the servers say changed from now on (nothing when there are no upstreams).
    pub fn offers(&self) -> Option<tokio::sync::broadcast::Receiver<Offer>> {
        self.offers.as_ref().map(|offers| offers.subscribe())
    }

    /// Every allowed resource, in the stable order of the module docs.
    pub fn list(&self, policy: &Policy) -> Vec<Listed> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut listed = Vec::new();
        for server in &self.servers {
            for resource in server.resources().iter() {
                if !allows(policy, server.name(), &resource.uri) {
                    continue;
                }
                let mut shown = resource.clone();
                if !seen.insert(resource.uri.clone()) {
                    shown.uri = gateway_uri(server.name(), &resource.uri);
                    self.log_clash(server.name(), &resource.uri, &shown.uri);
                }
                listed.push(Listed {
                    resource: shown,
                    server: server.clone(),
                    uri: resource.uri.clone(),
                });
            }
        }
        listed
    }

    /// Every allowed resource template, servers in config order.
    pub fn templates(&self, policy: &Policy) -> Vec<ResourceTemplate> {
        self.servers
            .iter()
            .flat_map(|server| {
                server
                    .resource_templates()
                    .iter()
                    .filter(|t| allows(policy, server.name(), &t.uri_template))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The first server, in config order, with the visible template `uri_template`.
    pub fn template_owner(&self, uri_template: &str, policy: &Policy) -> Option<Arc<Upstream>> {
        self.servers
            .iter()
            .find(|server| {
                allows(policy, server.name(), uri_template)
                    && server
                        .resource_templates()
                        .iter()
                        .any(|t| t.uri_template == uri_template)
            })
            .cloned()
    }

    /// The server `uri` (as a client names it) belongs to, and the URI as that server names
    /// it; an unknown or denied URI is the same "not found" error.
    pub fn route(&self, uri: &str, policy: &Policy) -> Result<(Arc<Upstream>, String), ErrorData> {
        let not_found = || {
            ErrorData::resource_not_found(
                format!(
                    "no MCP server behind toolsearch lists the resource {:?} or has a template \
                     that matches it: list resources and templates for the URIs there are",
                    crate::config::input::echo(uri)
                ),
                None,
            )
        };
        if let Some((name, own)) = parse_gateway_uri(uri) {
            return self
                .servers
                .iter()
                .find(|server| server.name() == name && allows(policy, name, own))
                .map(|server| (server.clone(), own.to_string()))
                .ok_or_else(not_found);
        }
        if let Some(listed) = self
            .list(policy)
            .into_iter()
            .find(|listed| listed.resource.uri == uri)
        {
            return Ok((listed.server, listed.uri));
        }
        self.servers
            .iter()
            .find(|server| {
                allows(policy, server.name(), uri)
                    && server.resource_templates().iter().any(|t| {
                        allows(policy, server.name(), &t.uri_template)
                            && template_matches(&t.uri_template, uri)
                    })
            })
            .map(|server| (server.clone(), uri.to_string()))
            .ok_or_else(not_found)
    }

    /// `resources/read` of `uri`, routed; the server's answer as it sent it.
    pub async fn read(&self, uri: &str, policy: &Policy) -> Result<ReadResourceResult, ErrorData> {
        let (server, own) = self.route(uri, policy)?;
        server.read_resource(&own).await
    }

    /// The URI a client knows `server`'s own `uri` by, if it is visible.
    pub fn client_uri(&self, server: &str, uri: &str, policy: &Policy) -> Option<String> {
        self.list(policy)
            .into_iter()
            .find(|listed| listed.server.name() == server && listed.uri == uri)
            .map(|listed| listed.resource.uri)
            .or_else(|| allows(policy, server, uri).then(|| uri.to_string()))
    }

    fn log_clash(&self, server: &str, uri: &str, shown: &str) {
        if lock(&self.logged).insert((server.to_string(), uri.to_string())) {
            tracing::warn!(
                server,
                uri = %crate::telemetry::terminal_safe(uri),
                shown = %crate::telemetry::terminal_safe(shown),
                "an earlier MCP server lists the same resource URI: this one is offered under a gateway URI"
            );
        }
    }
}

/// Whether the policy lets clients see `server`'s resource (or template) `uri`.
fn allows(policy: &Policy, server: &str, uri: &str) -> bool {
    policy.allows_keys(&[&format!("mcp:{server}:{uri}"), uri])
}

/// The URI under which `server`'s own `uri` is offered when an earlier server lists it too.
pub fn gateway_uri(server: &str, uri: &str) -> String {
    format!("{GATEWAY_SCHEME}{server}/{uri}")
}

/// The server and its own URI named by a [`gateway_uri`].
pub fn parse_gateway_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(GATEWAY_SCHEME)?;
    let (server, own) = rest.split_once('/')?;
    (!server.is_empty() && !own.is_empty()).then_some((server, own))
}

/// One part of a URI template.
enum Part<'a> {
    Literal(&'a str),
    /// An expression `{…}` by its operator (`None` for a simple one).
    Expression(Option<u8>),
}

/// Whether `uri` is an expansion of the RFC 6570 template `template` (levels 1–3, with
/// level 4's explode and prefix modifiers accepted): literals match themselves; a simple
/// expression one or more characters other than `/ ? #`; `{+…}` and `{#…}` anything (after a
/// `#` for the latter); `{/…}`, `{.…}` and `{;…}` their prefix and what follows up to the next
/// `/ ? #`; `{?…}` and `{&…}` an optional query part. An unterminated `{` never matches.
pub fn template_matches(template: &str, uri: &str) -> bool {
    if uri.len() > MAX_MATCHED_URI_BYTES {
        return false;
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        let body = &rest[open + 1..open + close];
        let operator = body.bytes().next().filter(|b| b"+#./;?&".contains(b));
        parts.push(Part::Expression(operator));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    if parts
        .iter()
        .filter(|p| matches!(p, Part::Expression(_)))
        .count()
        > 16
    {
        return false;
    }
    matches_from(&parts, uri.as_bytes())
}

fn matches_from(parts: &[Part<'_>], uri: &[u8]) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(literal) => uri
            .strip_prefix(literal.as_bytes())
            .is_some_and(|uri| matches_from(rest, uri)),
        Part::Expression(operator) => {
            let (prefix, optional, allowed): (&[u8], bool, fn(u8) -> bool) = match operator {
                None => (b"", false, |b| !b"/?#".contains(&b)),
                Some(b'+') => (b"", false, |_| true),
                Some(b'#') => (b"#", true, |_| true),
                Some(b'/') => (b"/", true, |b| !b"?#".contains(&b)),
                Some(b'.') => (b".", true, |b| !b"/?#".contains(&b)),
                Some(b';') => (b";", true, |b| !b"/?#".contains(&b)),
                Some(b'?') => (b"?", true, |b| b != b'#'),
                Some(_) => (b"&", true, |b| b != b'#'),
            };
            if optional && matches_from(rest, uri) {
                return true;
            }
            let Some(after) = uri.strip_prefix(prefix) else {
                return false;
            };
            let longest = after.iter().take_while(|b| allowed(**b)).count();
            let shortest = usize::from(prefix.is_empty() || !optional);
            (shortest..=longest)
                .rev()
                .any(|taken| matches_from(rest, &after[taken..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_their_expansions_and_nothing_else() {
        let cases = [
            (
                "test://template/{id}/data",
                "test://template/123/data",
                true,
            ),
            (
                "test://template/{id}/data",
                "test://template/1/2/data",
                false,
            ),
            ("test://template/{id}/data", "test://other/123/data", false),
            ("file:///{+path}", "file:///a/b/c.txt", true),
            ("file:///{path}", "file:///a/b/c.txt", false),
            (
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/text/7",
                true,
            ),
            (
                "http://x/search{?q,lang}",
                "http://x/search?q=a&lang=en",
                true,
            ),
            ("http://x/search{?q,lang}", "http://x/search", true),
            ("http://x{/segments*}/end", "http://x/a/b/end", true),
            ("http://x/{a}{.ext}", "http://x/report.pdf", true),
            ("http://x/{unterminated", "http://x/a", false),
            ("literal://only", "literal://only", true),
            ("literal://only", "literal://only/more", false),
        ];
        for (template, uri, expected) in cases {
            assert_eq!(
                template_matches(template, uri),
                expected,
                "{template} ~ {uri}"
            );
        }
    }

    #[test]
    fn gateway_uris_map_back_to_their_server_and_uri() {
        let uri = gateway_uri("fs2", "file:///tmp/a.txt");
        assert_eq!(uri, "toolsearch://fs2/file:///tmp/a.txt");
        assert_eq!(parse_gateway_uri(&uri), Some(("fs2", "file:///tmp/a.txt")));
        assert_eq!(parse_gateway_uri("toolsearch://fs2"), None);
        assert_eq!(parse_gateway_uri("file:///x"), None);
    }
}
