//! Recovery guidance worded for the controls the model actually has (SPEC,
//!
//!
//! Owns: turning a gateway [`CallError`] — a neutral message plus a structured [`Recovery`] —
//! into the text the model reads: `openclaw.tools.search/describe/call` inside a code cell,
//! `tool_search` / `tool_describe` / `tool_call` in tools and directory mode, the declared tool
//! names in direct mode. Also the surface's own messages (unknown provider names, names that are
//! not declared, a malformed `tool_search_code` call).
//! Never does: decide *what* went wrong (the gateway does) or name a control the model does not
//! have: a code-mode text never names `tool_search`, a tools-mode text never names
//! `openclaw.tools`.

use std::sync::Arc;

use super::names::ProviderNames;
use crate::config::Mode;
use crate::gateway::{CallError, ErrorKind, Operation, Recovery};

/// Which controls the model has, i.e. the vocabulary its guidance is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// A code cell: `openclaw.tools.search / describe / call`.
    Code,
    /// Structured controls: `tool_search`, `tool_describe`, `tool_call` (tools, directory).
    Structured,
    /// Every tool is declared by name (direct mode, or `auto` that chose it).
    Direct,
}

impl Vocabulary {
    /// The vocabulary of a surface in `mode` (the mode in force, after `auto` and fallback).
    pub fn of(mode: Mode) -> Vocabulary {
        match mode {
            Mode::Code => Vocabulary::Code,
            Mode::Tools | Mode::Directory => Vocabulary::Structured,
            Mode::Direct | Mode::Auto => Vocabulary::Direct,
        }
    }
}

/// Words errors for one surface. Cheap to clone (the provider names are shared).
#[derive(Debug, Clone)]
pub struct Guidance {
    vocabulary: Vocabulary,
    names: Arc<ProviderNames>,
}

impl Guidance {
    pub(crate) fn new(vocabulary: Vocabulary, names: Arc<ProviderNames>) -> Guidance {
        Guidance { vocabulary, names }
    }

    /// The vocabulary in force.
    pub fn vocabulary(&self) -> Vocabulary {
        self.vocabulary
    }

    /// The same guidance in another vocabulary (a code cell's bridge inside a surface whose
    /// fallback or `auto` choice is not code never happens, but the sandbox needs its own).
    pub(crate) fn with_vocabulary(&self, vocabulary: Vocabulary) -> Guidance {
        Guidance {
            vocabulary,
            names: self.names.clone(),
        }
    }

    /// The name a tool is declared under (its provider name), for "call it directly" advice.
    fn declared_name<'a>(&'a self, id: &str, fallback: &'a str) -> &'a str {
        self.names.name_of(id).unwrap_or(fallback)
    }

    /// The full text the model reads for `error`: its neutral message, then what to do next in
    /// this surface's words.
    pub fn word(&self, error: &CallError) -> String {
        let advice = self.advice(&error.recovery);
        if advice.is_empty() {
            return error.message.clone();
        }
        let message = error.message.trim_end();
        let stop = if message.ends_with(['.', '?', '!']) {
            ""
        } else {
            "."
        };
        format!("{message}{stop} {advice}")
    }

    /// `error` with its message worded for this surface (kind, tool and recovery unchanged).
    pub fn reword(&self, mut error: CallError) -> CallError {
        error.message = self.word(&error);
        error
    }

    fn advice(&self, recovery: &Recovery) -> String {
        use Vocabulary::{Code, Direct, Structured};
        match (recovery, self.vocabulary) {
            (Recovery::None, _) => String::new(),
            (Recovery::Search { .. }, Code) => "Find the tool with openclaw.tools.search(query), read its schema with openclaw.tools.describe(id), then call openclaw.tools.call(id, args) with its exact id.".into(),
            (Recovery::Search { .. }, Structured) => "Find the tool with tool_search, read its schema with tool_describe, then run it with tool_call {\"id\": <its exact id>, \"args\": {…}}.".into(),
            (Recovery::Search { .. }, Direct) => "Call one of the tools declared to you.".into(),
            (Recovery::PickId { .. }, Code) => "Pass one exact id from the list to openclaw.tools.call(id, args).".into(),
            (Recovery::PickId { .. }, Structured) => "Call tool_call again with one exact id from the list.".into(),
            (Recovery::PickId { .. }, Direct) => "Call the declared tool you mean by its exact name.".into(),
            (Recovery::FixArguments { id, .. }, Code) => format!("openclaw.tools.describe({id:?}) returns the full input schema."),
            (Recovery::FixArguments { id, .. }, Structured) => format!("tool_describe {{\"id\": {id:?}}} returns the full input schema."),
            (Recovery::FixArguments { .. }, Direct) => String::new(),
            (Recovery::CallDirectly { id, name }, Code) => format!(
                "It cannot be called from a code cell: call it directly as the tool {:?} with its own arguments, outside the cell.",
                self.declared_name(id, name)
            ),
            (Recovery::CallDirectly { id, name }, Structured | Direct) => format!(
                "Call it directly as the tool {:?} with its own arguments, not through tool_call.",
                self.declared_name(id, name)
            ),
            (Recovery::DoNotRetry { .. }, Code) => "Do not search for its tools again with openclaw.tools.search; tell the user the server is down or use a different capability.".into(),
            (Recovery::DoNotRetry { .. }, Structured) => "Do not search for its tools again with tool_search; tell the user the server is down or use a different capability.".into(),
            (Recovery::DoNotRetry { .. }, Direct) => "Tell the user the server is down or use a different tool.".into(),
            (Recovery::Usage { operation }, Code) => match operation {
                Operation::Search => "Use openclaw.tools.search(query, {limit}) with a few English words, or openclaw.tools.search([query, …]) for several searches.".into(),
                Operation::Describe => "Use openclaw.tools.describe(id) with a tool id from openclaw.tools.search.".into(),
                Operation::Call => "Use openclaw.tools.call(id, args) with a tool id from openclaw.tools.search and an object of arguments.".into(),
            },
            (Recovery::Usage { operation }, Structured | Direct) => match operation {
                Operation::Search => "tool_search takes {\"query\": \"a few English words\", \"limit\"?: n} or {\"queries\": [{\"query\": \"…\"}, …]}.".into(),
                Operation::Describe => "tool_describe takes {\"id\": \"<tool id from tool_search>\"}.".into(),
                Operation::Call => "tool_call takes {\"id\": \"<tool id from tool_search>\", \"args\": {…}}.".into(),
            },
        }
    }

    /// A provider name the model called that is neither declared nor resolvable.
    pub(crate) fn unknown_name(&self, name: &str) -> CallError {
        let hint = match self.vocabulary {
            Vocabulary::Code => {
                "only the declared tools exist as tools here; find, inspect and call catalog tools from tool_search_code with openclaw.tools.search / describe / call"
            }
            Vocabulary::Direct => "call one of the declared tools",
            Vocabulary::Structured => {
                "catalog tools are not callable by name here: find them with tool_search and run them with tool_call {\"id\", \"args\"}"
            }
        };
        CallError::new(
            ErrorKind::UnknownTool,
            None,
            format!(
                "Unknown tool {:?}: {hint}.",
                crate::config::input::echo(name)
            ),
        )
    }

    /// A catalog tool called by a name that is not declared (outside directory mode).
    pub(crate) fn not_declared(&self, name: &str, id: &str) -> CallError {
        let how = match self.vocabulary {
            Vocabulary::Code => {
                format!("call it from tool_search_code with openclaw.tools.call({id:?}, args)")
            }
            Vocabulary::Structured | Vocabulary::Direct => {
                format!("run it with tool_call {{\"id\": {id:?}, \"args\": {{…}}}}")
            }
        };
        CallError::new(
            ErrorKind::UnknownTool,
            Some(id),
            format!(
                "{:?} is not declared to you: {how}.",
                crate::config::input::echo(name)
            ),
        )
    }

    /// `tool_search_code` called without a string `code`.
    pub(crate) fn missing_code(got: Option<&serde_json::Value>) -> CallError {
        let got = match got {
            None => "no \"code\"".to_string(),
            Some(value) => format!("\"code\" as {}", crate::catalog::json_kind(value)),
        };
        CallError::new(
            ErrorKind::BadRequest,
            None,
            format!(
                "tool_search_code takes {{\"code\": \"<the JavaScript body of an async function>\"}}, got {got}; nothing ran."
            ),
        )
    }
}
