//! Prompts federated over the upstreams, as `serve` offers them.
//!
//! Owns: one listing of every allowed prompt in a stable order (servers in config order, each
//! server's prompts in its own order) under names given by the rule tool names follow
//! ([`ProviderNames`]: a valid name no other prompt has is kept as it is, so a lone server's
//! prompts keep their names; otherwise `<server>__<name>`, deterministic and mapped back);
//! `prompts/get` routed by that name to its server under the server's own name; and policy: a
//! prompt is visible iff the policy allows `mcp:<server>:<name>` and its name, so a denied
//! server's prompts are in no listing, get or error (an unknown and a denied name get the same
//! answer).
//!
//! Never does: change what a server sent beyond a prompt's name; put prompt text anywhere near
//! the model's instructions.

use std::sync::Arc;

use rmcp::model::{ErrorData, GetPromptResult, JsonObject, Prompt};

use super::{Upstream, Upstreams};
use crate::catalog::{Descriptor, Source};
use crate::policy::Policy;
use crate::surface::names::ProviderNames;

/// The prompts of a run's upstreams (see the module docs).
#[derive(Clone, Default)]
pub struct Prompts {
    servers: Vec<Arc<Upstream>>,
}

/// One visible prompt and where it comes from.
pub struct Named {
    /// As the client sees it (its name the one given here).
    pub prompt: Prompt,
    /// The server.
    pub server: Arc<Upstream>,
    /// The name as the server names it.
    pub own: String,
}

impl Prompts {
    /// The prompts of `upstreams`.
    pub fn of(upstreams: &Upstreams) -> Prompts {
        Prompts {
            servers: upstreams.servers().to_vec(),
        }
    }

    /// Whether some server offers prompts.
    pub fn offered(&self) -> bool {
        self.servers.iter().any(|server| server.offers_prompts())
    }

    /// Every allowed prompt, named, in the stable order of the module docs.
    pub fn list(&self, policy: &Policy) -> Vec<Named> {
        let mut found: Vec<(Arc<Upstream>, Prompt, Descriptor)> = Vec::new();
        for server in &self.servers {
            for prompt in server.prompts().iter() {
                let name = prompt.name.as_str();
                if !policy.allows_keys(&[&format!("mcp:{}:{name}", server.name()), name]) {
                    continue;
                }
                let key = Descriptor::new(Source::Mcp, server.name(), name);
                // One server listing a name twice: the first stands.
                if found.iter().any(|(_, _, seen)| seen.id == key.id) {
                    continue;
                }
                found.push((server.clone(), prompt.clone(), key));
            }
        }
        let names = ProviderNames::assign(found.iter().map(|(_, _, key)| key));
        found
            .into_iter()
            .filter_map(|(server, mut prompt, key)| {
                let own = std::mem::replace(&mut prompt.name, names.name_of(&key.id)?.to_string());
                Some(Named {
                    prompt,
                    server,
                    own,
                })
            })
            .collect()
    }

    /// Whether some server offers argument completion (of its prompts or templates).
    pub fn offers_completions(&self) -> bool {
        self.servers
            .iter()
            .any(|server| server.offers_completions())
    }

    /// The visible prompt a client knows as `name`.
    pub fn named(&self, name: &str, policy: &Policy) -> Option<Named> {
        self.list(policy)
            .into_iter()
            .find(|named| named.prompt.name == name)
    }

    /// `prompts/get` of the prompt a client knows as `name`; the server's answer as it sent
    /// it. An unknown or denied name is the same "unknown prompt" error.
    pub async fn get(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        policy: &Policy,
    ) -> Result<GetPromptResult, ErrorData> {
        let Some(named) = self.named(name, policy) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown prompt {:?}: list prompts for the names there are",
                    crate::config::input::echo(name)
                ),
                None,
            ));
        };
        named.server.get_prompt(&named.own, arguments).await
    }
}
