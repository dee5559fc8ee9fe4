//! `agent`: the direct-only conversation tools: questions to the user, progress
//! updates and the final answer, recorded in the world so a host (or a test) can read what the
//! agent said. Nothing is shown anywhere; these are the in-memory stand-ins.

use serde_json::json;

use super::super::kit::{Args, Reply, fail, ok};
use super::super::world::{DemoWorld, Handler};
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "ask_user" => ask_user,
        "final_answer" => final_answer,
        "report_progress" => report_progress,
        _ => return None,
    })
}

/// What the agent said to the user.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    questions: Vec<(String, Vec<String>)>,
    progress: Vec<(String, Option<i64>)>,
    answers: Vec<String>,
}

fn ask_user(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let question = args.str("question")?.trim();
    if question.is_empty() {
        return Err(fail("question must not be empty"));
    }
    let choices = args.opt_str_list("choices")?.unwrap_or_default();
    if choices.len() > 10 {
        return Err(fail("offer at most 10 choices"));
    }
    let mut c = lock(&world.agent);
    c.questions.push((question.to_string(), choices.clone()));
    ok(
        json!({"question_id": format!("q_{}", c.questions.len()), "status": "awaiting_user", "choices_offered": choices.len(), "open_questions": c.questions.len()}),
    )
}

fn final_answer(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let answer = args.str("answer")?;
    if answer.trim().is_empty() {
        return Err(fail("answer must not be empty"));
    }
    let mut c = lock(&world.agent);
    c.answers.push(answer.to_string());
    ok(
        json!({"accepted": true, "answer_id": format!("ans_{}", c.answers.len()), "characters": answer.chars().count(), "turn_complete": true}),
    )
}

fn report_progress(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let message = args.str("message")?.trim();
    if message.is_empty() {
        return Err(fail("message must not be empty"));
    }
    let percent = args.opt_i64("percent")?;
    if percent.is_some_and(|p| !(0..=100).contains(&p)) {
        return Err(fail("percent must be between 0 and 100"));
    }
    let mut c = lock(&world.agent);
    c.progress.push((message.to_string(), percent));
    let last_percent = c.progress.iter().rev().find_map(|(_, p)| *p);
    ok(json!({"update": c.progress.len(), "shown": true, "latest_percent": last_percent}))
}
