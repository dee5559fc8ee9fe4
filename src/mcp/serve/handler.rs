//! The MCP server handler over one [`Session`]: `tools/list` (paginated), `tools/call`
//! answered by [`Session::handle`] on the call's own task (for a 2026-07-28 client possibly in
//! rounds, `super::rounds`) and its result's MCP shape, the upstreams' resources
//! ([`Resources`]: listed, read, subscribed to, their updates relayed to the clients that
//! subscribed) and prompts ([`Prompts`]: listed, got), list-changed and progress notifications, and draining (refusing new calls,
//! waiting for those in flight, parked ones too, and for the answers being written).
//!
//! Never does: listen, or read a transport (`stdio.rs`, `http.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, ErrorData as McpError, GetPromptRequestParams, GetPromptResponse, Implementation,
    JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    PromptReference, PromptsCapability, ReadResourceRequestParams, ReadResourceResponse, Reference,
    ResourceUpdatedNotificationParam, ResourcesCapability, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool as McpTool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use serde_json::{Value, json};

use super::ServeOptions;
use super::http::ClientKey;
use super::rounds::{Rounds, Running, Turn};
use crate::catalog::SentResult;
use crate::config::Mode;
use crate::config::input;
use crate::mcp::asking::{CALLER, Caller, ClientLevel, MAX_ASKS_PER_CALL};
use crate::mcp::prompts::Prompts;
use crate::mcp::resources::Resources;
use crate::mcp::{Federated, Offer, PROGRESS, ProgressSink};
use crate::session::{Reply, Session};
use crate::surface::Format;
use crate::sync::lock;

/// The MCP server handler over a session.
#[derive(Clone)]
pub struct Handler {
    session: Session,
    resources: Resources,
    prompts: Prompts,
    subscriptions: Arc<Subscriptions>,
    page_size: usize,
    pub(super) drain: Arc<Drain>,
    /// The level this handler's client set with `logging/setLevel` (one handler per client:
    /// [`Handler::for_client`]).
    level: Arc<ClientLevel>,
    /// Calls of clients of the 2026-07-28 revision waiting on their answers.
    rounds: Arc<Rounds>,
}

/// Who subscribed to which resource: per (server, the server's own URI), each subscribed
/// client (its key) and its peer. The server is subscribed to while one client is.
#[derive(Default)]
struct Subscriptions(Mutex<HashMap<(String, String), Subscribers>>);

/// The clients subscribed to one resource, by client key.
type Subscribers = HashMap<Arc<str>, Peer<RoleServer>>;

impl Handler {
    /// A handler answering with `session`, offering what the upstreams offer besides tools.
    pub fn new(session: Session, federated: Federated, options: &ServeOptions) -> Handler {
        let Federated { resources, prompts } = federated;
        let subscriptions = Arc::new(Subscriptions::default());
        if let (Some(offers), Ok(runtime)) =
            (resources.offers(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(relay_updates(
                offers,
                resources.clone(),
                session.clone(),
                subscriptions.clone(),
            ));
        }
        Handler {
            session,
            resources,
            prompts,
            subscriptions,
            page_size: options.page_size.clamp(1, 10_000),
            drain: Arc::new(Drain::default()),
            level: Arc::default(),
            rounds: Arc::default(),
        }
    }

    /// This handler for a new client (an HTTP session): everything shared but the client's
    /// own logging level.
    pub fn for_client(&self) -> Handler {
        Handler {
            level: Arc::default(),
            ..self.clone()
        }
    }

    /// Starts the call of `name` with `arguments` for the client of `context` on its own task:
    /// an upstream's requests during it are relayed to that client (or, for a client of the
    /// 2026-07-28 revision, asked in rounds), its progress reported to it if it asked.
    fn start_call(
        &self,
        name: String,
        arguments: Value,
        context: &RequestContext<RoleServer>,
        inflight: InFlight,
    ) -> Running {
        // Code cells are scheduled fairly between clients.
        let client = client_key(context);
        let in_rounds = context
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let (rounds, asks) = mpsc::channel(MAX_ASKS_PER_CALL as usize);
        let caller = Caller::new(
            client.clone(),
            context,
            self.level.clone(),
            in_rounds.then_some(rounds),
        );
        let session = self.session.clone();
        let call = CALLER.scope(
            caller,
            crate::sandbox::fair::CLIENT.scope(client, async move {
                session.handle(&name, &arguments).await
            }),
        );
        let grace_over = self.drain.grace_over.clone();
        let progress = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            let sink: ProgressSink = Arc::new(move |progress, total, message| {
                let mut params = ProgressNotificationParam::new(token.clone(), progress);
                if let Some(total) = total {
                    params = params.with_total(total);
                }
                if let Some(message) = message {
                    params = params.with_message(message);
                }
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_progress(params).await;
                });
            });
            sink
        });
        Running::start(
            async move {
                let _inflight = inflight;
                let call = async move {
                    match progress {
                        Some(sink) => PROGRESS.scope(sink, call).await,
                        None => call.await,
                    }
                };
                tokio::select! {
                    reply = call => Ok(reply),
                    _ = grace_over.cancelled() => Err(()),
                }
            },
            asks,
        )
    }

    /// One page of `all` from `cursor` (an offset this server handed out).
    fn page<T: Clone>(
        &self,
        all: &[T],
        cursor: Option<String>,
    ) -> Result<(Vec<T>, Option<String>), McpError> {
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start < all.len())
                .ok_or_else(|| {
                    McpError::invalid_params(
                        format!("unknown cursor {:?}", input::echo(&cursor)),
                        None,
                    )
                })?,
        };
        let end = (start + self.page_size).min(all.len());
        let next = (end < all.len()).then(|| end.to_string());
        Ok((all[start..end].to_vec(), next))
    }

    /// Subscribes the calling client to `uri` (or, with `on` false, unsubscribes it); the
    /// server is asked when its first client subscribes and its last one leaves.
    async fn subscribe_client(
        &self,
        uri: &str,
        on: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (server, own) = self.resources.route(uri, &self.session.policy())?;
        let key = (server.name().to_string(), own.clone());
        let client = client_key(context);
        let ask = {
            let mut subscribed = lock(&self.subscriptions.0);
            let clients = subscribed.entry(key.clone()).or_default();
            let before = clients.len();
            if on {
                clients.insert(client, context.peer.clone());
            } else {
                clients.remove(&client);
            }
            let after = clients.len();
            if after == 0 {
                subscribed.remove(&key);
            }
            (before == 0) != (after == 0)
        };
        if ask {
            server.subscribe_resource(&own, on).await?;
        }
        Ok(())
    }

    /// Refuses new `tools/call` requests from now on and waits, up to `grace`, until the calls in
    /// flight finished. Returns how many were still running at the end of the grace period.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.drain.closing.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        let left = settle(&self.drain.inflight, &self.drain.idle, deadline).await;
        if left > 0 {
            // The calls still running answer their callers with a JSON-RPC error saying why.
            self.drain.grace_over.cancel();
            self.drain
                .grace_secs
                .store(grace.as_secs(), Ordering::SeqCst);
        }
        left
    }

    /// Waits, until `deadline`, for the HTTP answers to POSTed messages still being written
    /// (a call's result travels on its POST's event stream after the call returned: ending
    /// the MCP sessions before that stream is flushed would lose the answer). Returns how many
    /// were still open at the deadline.
    pub(super) async fn finish_answers(&self, deadline: tokio::time::Instant) -> usize {
        settle(&self.drain.answering, &self.drain.answered, deadline).await
    }
}

/// Waits until `counter` is 0 (woken by `zero`) or `deadline`; returns the count at the end.
async fn settle(
    counter: &AtomicUsize,
    zero: &tokio::sync::Notify,
    deadline: tokio::time::Instant,
) -> usize {
    loop {
        let woken = zero.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if counter.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        if tokio::time::timeout_at(deadline, woken).await.is_err() {
            return counter.load(Ordering::SeqCst);
        }
    }
}

/// Calls in flight, and whether new ones are refused (the server is shutting down).
#[derive(Default)]
pub(super) struct Drain {
    closing: AtomicBool,
    /// Cancelled when the grace period ended with calls still running (they answer at once).
    grace_over: tokio_util::sync::CancellationToken,
    grace_secs: std::sync::atomic::AtomicU64,
    inflight: AtomicUsize,
    idle: tokio::sync::Notify,
    /// HTTP answers to POSTed messages whose body is still being written.
    answering: AtomicUsize,
    answered: tokio::sync::Notify,
}

/// One HTTP answer being written; counted out (waking a shutdown) when its body is dropped.
pub(super) struct Answering(Arc<Drain>);

impl Answering {
    pub(super) fn start(drain: &Arc<Drain>) -> Answering {
        drain.answering.fetch_add(1, Ordering::SeqCst);
        Answering(drain.clone())
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if self.0.answering.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.answered.notify_waiters();
        }
    }
}

/// One call in flight (parked ones too: its task holds this); counted out (waking a drain)
/// when dropped.
struct InFlight(Arc<Drain>);

impl Drain {
    fn enter(self: &Arc<Self>) -> Option<InFlight> {
        let call = self.hold();
        // Checked after counting in, so a drain that saw 0 in flight never misses this call.
        (!self.closing.load(Ordering::SeqCst)).then_some(call)
    }

    /// Counts one more in flight, closing or not.
    fn hold(self: &Arc<Self>) -> InFlight {
        self.inflight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.inflight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// A reply as an MCP tool result. An MCP tool's result (or error) is passed on as its server
/// sent it; what the gateway adds goes in `_meta` (the tool it resolved) or in a block of its
/// own (a recovered call's hint), never into the server's blocks.
fn tool_result(reply: Reply) -> CallToolResult {
    match reply {
        Reply::Done(envelope) => match &envelope.result.sent {
            Some(sent) => {
                let mut result = sent_result(sent);
                let tool = json!({
                    "id": envelope.tool.id,
                    "name": envelope.tool.name,
                    "source": envelope.tool.source,
                });
                result
                    .meta
                    .get_or_insert_with(MetaObject::default)
                    .insert(TOOL_META.into(), tool);
                result
            }
            None => tool_result(Reply::Ok(envelope.to_json())),
        },
        Reply::Failed {
            sent: Some(sent), ..
        } => sent_result(&sent),
        Reply::Ok(value) => {
            let text = value.to_string();
            let structured = match value {
                Value::Object(_) => value,
                other => json!({"result": other}),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            result
        }
        Reply::Searched(searched) => {
            // The hits as shapes them, then the note as a block of its own; structured:
            // the single form's `{result: [...], matched, truncated, not_found?}`.
            let mut content = vec![ContentBlock::text(searched.body.to_string())];
            if let Some(note) = searched.note {
                content.push(ContentBlock::text(note));
            }
            let structured = match (searched.body, searched.signal) {
                (body @ Value::Object(_), _) => body,
                (body, Some(Value::Object(mut signal))) => {
                    signal.insert("result".into(), body);
                    Value::Object(signal)
                }
                (body, _) => json!({"result": body}),
            };
            let mut result = CallToolResult::success(content);
            result.structured_content = Some(structured);
            result
        }
        Reply::Failed { body, .. } => {
            let text = body["error"]["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| body.to_string());
            let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
            result.structured_content = Some(body);
            result
        }
        Reply::Recovered { reply, recovered } => {
            let mut result = tool_result(*reply);
            result.content.push(ContentBlock::text(recovered.hint));
            result
        }
        Reply::ClientCall(call) => CallToolResult::error(vec![ContentBlock::text(format!(
            "{} is a client tool: the application runs it, and no application is connected to this server",
            call.tool.id
        ))]),
    }
}

/// The `_meta` key under which a passed-on result names the tool the gateway resolved
/// (`{id, name, source}`).
pub const TOOL_META: &str = "toolsearch/tool";

/// A result as the tool's MCP server sent it. A block that no longer parses as MCP content
/// (it did when it arrived) is passed on as its JSON text rather than dropped.
fn sent_result(sent: &SentResult) -> CallToolResult {
    let content = sent
        .content
        .iter()
        .map(|block| {
            serde_json::from_value::<ContentBlock>(block.clone())
                .unwrap_or_else(|_| ContentBlock::text(block.to_string()))
        })
        .collect();
    let mut result = CallToolResult::success(content);
    result.structured_content = sent.structured.clone();
    result.is_error = sent.is_error;
    result.meta = match &sent.meta {
        Some(Value::Object(meta)) => Some(MetaObject(meta.clone())),
        _ => None,
    };
    result
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let (resources, subscribe) = self.resources.offered();
        if resources {
            let mut offered = ResourcesCapability::default();
            offered.list_changed = Some(true);
            offered.subscribe = subscribe.then_some(true);
            capabilities.resources = Some(offered);
        }
        if self.prompts.offered() {
            let mut offered = PromptsCapability::default();
            offered.list_changed = Some(true);
            capabilities.prompts = Some(offered);
        }
        if self.prompts.offers_completions() {
            capabilities.completions = Some(JsonObject::new());
        }
        // Upstreams' log messages are relayed to the client whose call they come during.
        capabilities.logging = Some(JsonObject::new());
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolsearch", env!("CARGO_PKG_VERSION")));
        let prompt = self.session.system_prompt();
        if !prompt.is_empty() {
            info = info.with_instructions(prompt);
        }
        info
    }

    #[allow(deprecated)] // logging: see `crate::mcp::asking`
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // From the first level on, toolsearch's own log messages are relayed too.
        if self.level.set(request.level) {
            tokio::spawn(relay_own_messages(context.peer.clone(), self.level.clone()));
        }
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let policy = self.session.policy();
        let (server, reference) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let Some(named) = self.prompts.named(&prompt.name, &policy) else {
                    return Err(McpError::invalid_params(
                        format!(
                            "unknown prompt {:?}: list prompts for the names there are",
                            input::echo(&prompt.name)
                        ),
                        None,
                    ));
                };
                let mut own = PromptReference::new(named.own);
                own.title = prompt.title.clone();
                (named.server, Reference::Prompt(own))
            }
            Reference::Resource(template) => {
                let Some(server) = self.resources.template_owner(&template.uri, &policy) else {
                    return Err(McpError::invalid_params(
                        format!(
                            "unknown resource template {:?}: list resource templates for the \
                             ones there are",
                            input::echo(&template.uri)
                        ),
                        None,
                    ));
                };
                (server, Reference::Resource(template.clone()))
            }
            _ => {
                return Err(McpError::invalid_params(
                    "completion/complete: a ref is ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        if !server.offers_completions() {
            // Nothing to suggest: the owner does not complete arguments.
            return Ok(CompleteResult::default());
        }
        let mut request = request;
        request.r#ref = reference;
        server.complete(request).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let all = self.session.tools(Format::Anthropic);
        let all = all.as_array().cloned().unwrap_or_default();
        let (page, next) = self.page(&all, request.and_then(|r| r.cursor))?;
        let tools = page
            .iter()
            .map(|definition| {
                McpTool::new(
                    definition["name"].as_str().unwrap_or_default().to_string(),
                    definition["description"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    object(definition["input_schema"].clone()),
                )
            })
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let all: Vec<_> = self
            .resources
            .list(&self.session.policy())
            .into_iter()
            .map(|listed| listed.resource)
            .collect();
        let (page, next) = self.page(&all, request.and_then(|r| r.cursor))?;
        let mut result = ListResourcesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let all = self.resources.templates(&self.session.policy());
        let (page, next) = self.page(&all, request.and_then(|r| r.cursor))?;
        let mut result = ListResourceTemplatesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.resources
            .read(&request.uri, &self.session.policy())
            .await
            .map(ReadResourceResponse::Complete)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let all: Vec<_> = self
            .prompts
            .list(&self.session.policy())
            .into_iter()
            .map(|named| named.prompt)
            .collect();
        let (page, next) = self.page(&all, request.and_then(|r| r.cursor))?;
        let mut result = ListPromptsResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.prompts
            .get(&request.name, request.arguments, &self.session.policy())
            .await
            .map(GetPromptResponse::Complete)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_client(&request.uri, true, &context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_client(&request.uri, false, &context).await
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let surface = self.session.surface();
        if surface.target_of(&name).is_none() && surface.mode != Mode::Directory {
            return Err(McpError::invalid_params(
                format!("Unknown tool: {:?}", input::echo(&name)),
                None,
            ));
        }
        let arguments = request
            .arguments
            .take()
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        // A retry of a call in rounds: its answers go to what it asked, and it goes on (also
        // while shutting down: it is a call already running).
        let running = match request.request_state.as_deref() {
            Some(state) => {
                let mut running = self.rounds.resume(state, &name)?;
                running.answer(request.input_responses.take().unwrap_or_default());
                running
            }
            None => {
                let Some(inflight) = self.drain.enter() else {
                    return Err(McpError::internal_error(
                        "the server is shutting down (SIGTERM or Ctrl-C): no new calls are \
                         accepted; calls already running finish within the grace period",
                        None,
                    ));
                };
                self.start_call(name.clone(), arguments, &context, inflight)
            }
        };
        let client = client_key(&context);
        // The call's task counts it in flight while it runs (and while it is parked); this
        // request counts it too until its answer is handed to the transport, so a drain that
        // ends with the last call never cancels the connection before that answer is written.
        let _answering = self.drain.hold();
        let turn = tokio::select! {
            turn = running.turn(&self.rounds, &name, &client) => turn?,
            _ = context.ct.cancelled() => return Err(cancelled()),
        };
        match turn {
            Turn::Ended(Ok(reply)) => Ok(CallToolResponse::Complete(tool_result(reply))),
            Turn::Asking(asking) => Ok(CallToolResponse::InputRequired(asking)),
            Turn::Panicked => Err(McpError::internal_error(
                "the call failed inside toolsearch (a bug: its task panicked); see the server's log",
                None,
            )),
            Turn::Ended(Err(())) => Err(McpError::internal_error(
                format!(
                    "the server is shutting down (SIGTERM or Ctrl-C) and this call was still \
                     running at the end of the {} s grace period: it was cancelled",
                    self.drain.grace_secs.load(Ordering::SeqCst)
                ),
                None,
            )),
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut changes = self.session.changes();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
        let resources = self.resources.offered().0;
        let prompts = self.prompts.offered();
        if let (Some(mut offers), true) = (self.resources.offers(), resources || prompts) {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                use tokio::sync::broadcast::error::RecvError;
                loop {
                    let sent = match offers.recv().await {
                        Ok(Offer::ResourcesListed) if resources => {
                            peer.notify_resource_list_changed().await
                        }
                        Ok(Offer::PromptsListed) if prompts => {
                            peer.notify_prompt_list_changed().await
                        }
                        Err(RecvError::Lagged(_)) => {
                            if resources {
                                let _ = peer.notify_resource_list_changed().await;
                            }
                            if prompts {
                                peer.notify_prompt_list_changed().await
                            } else {
                                Ok(())
                            }
                        }
                        Ok(_) => Ok(()),
                        Err(RecvError::Closed) => break,
                    };
                    if sent.is_err() {
                        break;
                    }
                }
            });
        }
    }
}

/// The client a request came from: the HTTP session (or, without one, the connection); over
/// stdio there is one client.
fn client_key(context: &RequestContext<RoleServer>) -> Arc<str> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<ClientKey>())
        .map_or_else(|| Arc::from("stdio"), |key| key.0.clone())
}

/// Relays toolsearch's own log messages to one client at the level it set, as logger
/// `toolsearch`, until the client is gone.
#[allow(deprecated)] // logging: see `crate::mcp::asking`
async fn relay_own_messages(peer: Peer<RoleServer>, level: Arc<ClientLevel>) {
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
    use tokio::sync::broadcast::error::RecvError;
    let mut own = crate::telemetry::own_messages();
    loop {
        let message = match own.recv().await {
            Ok(message) => message,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => break,
        };
        if peer.is_transport_closed() {
            break;
        }
        let at = match message.level {
            tracing::Level::ERROR => LoggingLevel::Error,
            tracing::Level::WARN => LoggingLevel::Warning,
            tracing::Level::INFO => LoggingLevel::Info,
            _ => LoggingLevel::Debug,
        };
        if !level.admits(at) {
            continue;
        }
        let params = LoggingMessageNotificationParam::new(at, Value::String(message.text))
            .with_logger("toolsearch");
        if peer.notify_logging_message(params).await.is_err() {
            break;
        }
    }
}

/// Relays each `notifications/resources/updated` to the clients subscribed to that resource,
/// under the URI they know it by; a client that is gone is dropped from the subscriptions.
async fn relay_updates(
    mut offers: tokio::sync::broadcast::Receiver<Offer>,
    resources: Resources,
    session: Session,
    subscriptions: Arc<Subscriptions>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let (server, uri) = match offers.recv().await {
            Ok(Offer::ResourceUpdated { server, uri }) => (server, uri),
            Ok(Offer::ResourcesListed | Offer::PromptsListed) | Err(RecvError::Lagged(_)) => {
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let key = (server, uri);
        let peers: Vec<(Arc<str>, Peer<RoleServer>)> = lock(&subscriptions.0)
            .get(&key)
            .map(|clients| {
                clients
                    .iter()
                    .map(|(k, p)| (k.clone(), p.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let Some(shown) = resources.client_uri(&key.0, &key.1, &session.policy()) else {
            continue;
        };
        for (client, peer) in peers {
            let sent = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(shown.clone()))
                .await;
            if sent.is_err()
                && let Some(clients) = lock(&subscriptions.0).get_mut(&key)
            {
                clients.remove(&client);
            }
        }
    }
}

fn cancelled() -> McpError {
    McpError::internal_error("the request was cancelled", None)
}
