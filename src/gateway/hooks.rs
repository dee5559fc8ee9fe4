//! `before_tool_call` hooks and approval handlers (SPEC ).
//!
//! Hooks run after approval and before input validation (R-7.3: validation sees the rewritten
//! arguments). A hook may continue, rewrite the arguments, or block; a block is reported as a
//! block and the tool never runs. Approval handlers decide for tools that require approval;
//! without a handler such tools are denied (fail closed), never run unapproved.

use serde_json::Value;

use crate::catalog::{BoxFuture, Descriptor};

/// What a hook decides about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// Leave the call as it is.
    Continue,
    /// Replace the arguments (validated afterwards like any arguments).
    Rewrite(Value),
    /// Refuse the call with this reason (reported to the model as a block).
    Block(String),
}

/// A `before_tool_call` hook.
pub trait BeforeToolCall: Send + Sync {
    /// Looks at the call about to be made.
    fn before_call<'a>(
        &'a self,
        tool: &'a Descriptor,
        args: &'a Value,
    ) -> BoxFuture<'a, HookDecision>;
}

/// An approval decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approved,
    /// Do not run it, for this reason.
    Denied(String),
}

/// Decides whether a tool that requires approval may run.
pub trait ApprovalHandler: Send + Sync {
    /// Approves or denies one call.
    fn approve<'a>(&'a self, tool: &'a Descriptor, args: &'a Value) -> BoxFuture<'a, Approval>;
}

/// Approves tools whose id, external id or name matches one of the globs; denies the rest.
/// This is what `toolsearch call --approve GLOB` installs.
pub struct GlobApprovals {
    globs: globset::GlobSet,
    patterns: Vec<String>,
}

impl GlobApprovals {
    /// Builds the handler; an invalid glob is an error naming it.
    pub fn new(patterns: &[String]) -> Result<GlobApprovals, String> {
        let mut builder = globset::GlobSetBuilder::new();
        for pattern in patterns {
            builder.add(
                globset::GlobBuilder::new(pattern)
                    .literal_separator(false)
                    .build()
                    .map_err(|e| format!("invalid --approve glob {pattern:?}: {}", e.kind()))?,
            );
        }
        Ok(GlobApprovals {
            globs: builder
                .build()
                .map_err(|e| format!("invalid --approve globs: {e}"))?,
            patterns: patterns.to_vec(),
        })
    }
}

impl ApprovalHandler for GlobApprovals {
    fn approve<'a>(&'a self, tool: &'a Descriptor, _args: &'a Value) -> BoxFuture<'a, Approval> {
        let matched = tool.match_keys().any(|key| self.globs.is_match(key));
        Box::pin(async move {
            if matched {
                Approval::Approved
            } else if self.patterns.is_empty() {
                Approval::Denied("no approval was given for it".to_string())
            } else {
                Approval::Denied(format!(
                    "it matches none of the approved patterns ({})",
                    self.patterns.join(", ")
                ))
            }
        })
    }
}
