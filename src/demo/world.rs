//! [`DemoWorld`]: the in-memory state every demo tool works on, one mutex per owner.
//!
//! Seeded with small, realistic fixtures (a week of events, an inbox, a drive, three
//! repositories, notes, contacts, tasks, cron jobs, a brokerage account, an image library and
//! a workspace file tree). Owners without mutable state (math, units, time, weather, text)
//! answer from fixed tables and need no field here.
//!
//! Lock order: a tool that touches two owners locks them one after the other, never nested,
//! so there is no lock order to get wrong. Locks are poison-tolerant (`crate::sync`).
//!
//! Also owns what a tool is over this world: a [`Handler`], and [`DemoTool`], the adapter from a
//! handler to the async [`Tool`] trait.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::kit::Args;
use super::tools;
use crate::catalog::{BoxFuture, CallContext, Tool, ToolError, ToolOutput};

/// Per-owner state shared by all tools of one demo catalog.
pub struct DemoWorld {
    pub(crate) workspace: Mutex<tools::coding::Workspace>,
    pub(crate) calendar: Mutex<tools::calendar::Calendar>,
    pub(crate) mail: Mutex<tools::mail::Mailbox>,
    pub(crate) drive: Mutex<tools::files::Drive>,
    pub(crate) web: Mutex<tools::web::Web>,
    pub(crate) github: Mutex<tools::github::CodeHost>,
    pub(crate) chat: Mutex<tools::chat::Chat>,
    pub(crate) notes: Mutex<tools::notes::Notes>,
    pub(crate) contacts: Mutex<tools::contacts::Contacts>,
    pub(crate) tasks: Mutex<tools::tasks::Tasks>,
    pub(crate) automations: Mutex<tools::automations::Automations>,
    pub(crate) finance: Mutex<tools::finance::Finance>,
    pub(crate) memory: Mutex<tools::memory::Memory>,
    pub(crate) images: Mutex<tools::images::Images>,
    pub(crate) translate: Mutex<tools::translate::Glossary>,
    pub(crate) agent: Mutex<tools::agent::Conversation>,
}

impl DemoWorld {
    /// A fresh world with the demo fixtures.
    pub fn seeded() -> DemoWorld {
        DemoWorld {
            workspace: Mutex::new(tools::coding::Workspace::seeded()),
            calendar: Mutex::new(tools::calendar::Calendar::seeded()),
            mail: Mutex::new(tools::mail::Mailbox::seeded()),
            drive: Mutex::new(tools::files::Drive::seeded()),
            web: Mutex::new(tools::web::Web::seeded()),
            github: Mutex::new(tools::github::CodeHost::seeded()),
            chat: Mutex::new(tools::chat::Chat::seeded()),
            notes: Mutex::new(tools::notes::Notes::seeded()),
            contacts: Mutex::new(tools::contacts::Contacts::seeded()),
            tasks: Mutex::new(tools::tasks::Tasks::seeded()),
            automations: Mutex::new(tools::automations::Automations::seeded()),
            finance: Mutex::new(tools::finance::Finance::seeded()),
            memory: Mutex::new(tools::memory::Memory::seeded()),
            images: Mutex::new(tools::images::Images::seeded()),
            translate: Mutex::new(tools::translate::Glossary::seeded()),
            agent: Mutex::new(tools::agent::Conversation::default()),
        }
    }

    /// The process-wide world used by [`super::catalog`]: created seeded on first use.
    pub fn shared() -> Arc<DemoWorld> {
        static SHARED: OnceLock<Arc<DemoWorld>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(DemoWorld::seeded())).clone()
    }
}

impl Default for DemoWorld {
    fn default() -> Self {
        DemoWorld::seeded()
    }
}

impl fmt::Debug for DemoWorld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DemoWorld").finish_non_exhaustive()
    }
}

/// A tool body: validated arguments in, JSON details out.
pub(crate) type Handler = fn(&DemoWorld, &Args<'_>) -> Result<ToolOutput, ToolError>;

/// Adapts a [`Handler`] over a shared [`DemoWorld`] into a [`Tool`].
pub(crate) struct DemoTool {
    pub(crate) world: Arc<DemoWorld>,
    pub(crate) handler: Handler,
}

impl Tool for DemoTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a CallContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = Args::new(&args)?;
            (self.handler)(&self.world, &args)
        })
    }
}
