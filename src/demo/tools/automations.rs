//! `automations`: recurring jobs on five-field cron expressions and one-off reminders.
//!
//! Cron: `minute hour day-of-month month day-of-week` with `*`, `*/n`, `a-b`, `a-b/n`, lists,
//! month and weekday names and the `@hourly`/`@daily`/`@weekly`/`@monthly`/`@yearly` macros;
//! when both day fields are restricted a day matches either (classic cron). Next run times are
//! computed from the demo clock in the job's time zone, scanning at most five years ahead.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{
    DAY, DEMO_NOW, civil_from_days, format_offset, format_utc, parse_timestamp, weekday_index, zone,
};
use super::super::kit::{Args, Changed, Kind, Reply, fail, listed, next_id, ok, ok_text};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "create_automation" => create_automation,
        "list_automations" => list_automations,
        "get_automation" => get_automation,
        "update_automation" => update_automation,
        "pause_automation" => pause_automation,
        "resume_automation" => resume_automation,
        "delete_automation" => delete_automation,
        "run_automation_now" => run_automation_now,
        "list_automation_runs" => list_automation_runs,
        "preview_cron" => preview_cron,
        "create_reminder" => create_reminder,
        "list_reminders" => list_reminders,
        "cancel_reminder" => cancel_reminder,
        "snooze_reminder" => snooze_reminder,
        _ => return None,
    })
}

/// A parsed cron expression as bit sets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    days_any: bool,
    weekdays_any: bool,
}

const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn field(
    text: &str,
    min: u32,
    max: u32,
    names: &[&str],
    what: &str,
) -> Result<(u64, bool), ToolError> {
    let bad = |detail: &str| fail(format!("invalid cron {what} field {text:?}: {detail}"));
    let value = |token: &str| -> Result<u32, ToolError> {
        let lower = token.to_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + if names.len() == 12 { 1 } else { 0 });
        }
        token
            .parse::<u32>()
            .map_err(|_| bad(&format!("{token:?} is not a number")))
    };
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .map_err(|_| bad("step must be a positive number"))?,
            ),
            None => (part, 1),
        };
        if step == 0 {
            return Err(bad("step must be at least 1"));
        }
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            (v, if part.contains('/') { max } else { v })
        };
        if lo < min || hi > max || lo > hi {
            return Err(bad(&format!("values must be within {min}-{max}")));
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v = v.saturating_add(step);
        }
    }
    Ok((bits, text == "*"))
}

impl Cron {
    pub(crate) fn parse(expression: &str) -> Result<Cron, ToolError> {
        let expanded = match expression.trim() {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            other => other,
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        let [m, h, dom, mon, dow] = parts.as_slice() else {
            return Err(fail(format!(
                "cron expression {expression:?} must have five fields: minute hour day-of-month month day-of-week (e.g. \"0 9 * * 1\")"
            )));
        };
        let (minutes, _) = field(m, 0, 59, &[], "minute")?;
        let (hours, _) = field(h, 0, 23, &[], "hour")?;
        let (days, days_any) = field(dom, 1, 31, &[], "day-of-month")?;
        let (months, _) = field(mon, 1, 12, &MONTH_NAMES, "month")?;
        let (mut weekdays, weekdays_any) = field(dow, 0, 7, &DAY_NAMES, "day-of-week")?;
        // Day-of-week 7 is Sunday, like 0.
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & 0x7f) | 1;
        }
        Ok(Cron {
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: weekdays as u8,
            days_any,
            weekdays_any,
        })
    }

    fn day_matches(&self, day: i64) -> bool {
        let (_, m, d) = civil_from_days(day);
        if self.months & (1 << m) == 0 {
            return false;
        }
        // Sunday = 0 in cron; weekday_index has Monday = 0.
        let dow = (weekday_index(day) + 1) % 7;
        let dom_hit = self.days & (1 << d) != 0;
        let dow_hit = self.weekdays & (1 << dow) != 0;
        match (self.days_any, self.weekdays_any) {
            (true, true) => true,
            (true, false) => dow_hit,
            (false, true) => dom_hit,
            (false, false) => dom_hit || dow_hit,
        }
    }

    /// The next `count` run times strictly after `after`, in a zone at `offset` minutes.
    pub(crate) fn next_runs(&self, after: i64, offset: i32, count: usize) -> Vec<i64> {
        let shift = i64::from(offset) * 60;
        let local_after = after + shift;
        let first_day = local_after.div_euclid(DAY);
        let mut out = Vec::new();
        for day in first_day..first_day + 5 * 366 {
            if !self.day_matches(day) {
                continue;
            }
            for h in (0..24).filter(|h| self.hours & (1 << h) != 0) {
                for m in (0..60).filter(|m| self.minutes & (1u64 << m) != 0) {
                    let local = day * DAY + h * 3600 + m * 60;
                    if local > local_after {
                        out.push(local - shift);
                        if out.len() == count {
                            return out;
                        }
                    }
                }
            }
        }
        out
    }

    fn explain(&self, expression: &str) -> String {
        let list = |bits: u64, lo: u32, hi: u32, name: &dyn Fn(u32) -> String| -> Option<String> {
            let values: Vec<u32> = (lo..=hi).filter(|v| bits & (1 << v) != 0).collect();
            if values.len() as u32 == hi - lo + 1 {
                None
            } else {
                Some(
                    values
                        .iter()
                        .map(|v| name(*v))
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            }
        };
        let num = |v: u32| v.to_string();
        let month = |v: u32| MONTH_NAMES[(v - 1) as usize].to_string();
        // Cron counts weekdays from Sunday; the clock's names start on Monday.
        let weekday = |v: u32| crate::demo::clock::WEEKDAYS[(v as usize + 6) % 7].to_string();
        let minutes = list(self.minutes, 0, 59, &num);
        let hours = list(u64::from(self.hours), 0, 23, &num);
        let mut text = match (&minutes, &hours) {
            (None, None) => "Every minute".to_string(),
            (None, Some(h)) => format!("Every minute during hour(s) {h}"),
            (Some(m), None) => format!("At minute {m} of every hour"),
            (Some(m), Some(h)) => {
                let (ms, hs): (Vec<&str>, Vec<&str>) =
                    (m.split(", ").collect(), h.split(", ").collect());
                if ms.len() == 1 && hs.len() == 1 {
                    format!("At {:0>2}:{:0>2}", hs[0], ms[0])
                } else {
                    format!("At minute(s) {m} past hour(s) {h}")
                }
            }
        };
        if !self.days_any
            && let Some(d) = list(u64::from(self.days), 1, 31, &num)
        {
            text.push_str(&format!(" on day(s) {d} of the month"));
        }
        if !self.weekdays_any
            && let Some(d) = list(u64::from(self.weekdays), 0, 6, &weekday)
        {
            text.push_str(&format!(
                "{} {d}",
                if self.days_any { " on" } else { " or on" }
            ));
        }
        if let Some(m) = list(u64::from(self.months), 1, 12, &month) {
            text.push_str(&format!(" in {m}"));
        }
        format!("{text} ({expression})")
    }
}

#[derive(Debug, Clone)]
struct Run {
    id: String,
    started_at: i64,
    status: &'static str,
    output: String,
}

#[derive(Debug, Clone)]
struct Automation {
    id: String,
    name: String,
    cron_text: String,
    cron: Cron,
    timezone: String,
    offset: i32,
    action: String,
    active: bool,
    runs: Vec<Run>,
}

impl Automation {
    fn to_json(&self) -> Value {
        let next: Vec<String> = if self.active {
            self.cron
                .next_runs(DEMO_NOW, self.offset, 3)
                .into_iter()
                .map(|t| format_offset(t, self.offset))
                .collect()
        } else {
            Vec::new()
        };
        json!({
            "id": self.id,
            "name": self.name,
            "cron": self.cron_text,
            "timezone": self.timezone,
            "action": self.action,
            "status": if self.active { "active" } else { "paused" },
            "next_runs": next,
            "runs": self.runs.len(),
        })
    }
}

#[derive(Debug, Clone)]
struct Reminder {
    id: String,
    text: String,
    at: i64,
    status: &'static str,
}

impl Reminder {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "text": self.text, "at": format_utc(self.at), "status": self.status})
    }
}

/// Cron jobs and reminders.
#[derive(Debug)]
pub(crate) struct Automations {
    automations: BTreeMap<String, Automation>,
    reminders: BTreeMap<String, Reminder>,
    next_automation: u64,
    next_run: u64,
    next_reminder: u64,
}

impl Automations {
    pub(crate) fn seeded() -> Automations {
        let mut automations = BTreeMap::new();
        for (id, name, cron, action, active, runs) in [
            (
                "aut_701",
                "Daily standup digest",
                "0 8 * * 1-5",
                "Post a summary of yesterday's merged pull requests to #engineering",
                true,
                2,
            ),
            (
                "aut_702",
                "Weekly notes backup",
                "0 2 * * 0",
                "Export all notes to the drive folder /Backups",
                false,
                1,
            ),
        ] {
            let Ok(parsed) = Cron::parse(cron) else {
                continue;
            };
            let history = (0..runs)
                .map(|i| Run {
                    id: format!("run_{id}_{i}"),
                    started_at: DEMO_NOW - (i as i64 + 1) * DAY - 3600,
                    status: "succeeded",
                    output: format!("{name}: completed"),
                })
                .collect();
            automations.insert(
                id.to_string(),
                Automation {
                    id: id.to_string(),
                    name: name.to_string(),
                    cron_text: cron.to_string(),
                    cron: parsed,
                    timezone: "UTC".to_string(),
                    offset: 0,
                    action: action.to_string(),
                    active,
                    runs: history,
                },
            );
        }
        let mut reminders = BTreeMap::new();
        for (id, text, at, status) in [
            (
                "rem_801",
                "Call the plumber",
                DEMO_NOW + 6 * 3600,
                "pending",
            ),
            (
                "rem_802",
                "Submit the expense report",
                DEMO_NOW + 3 * DAY + 3600,
                "pending",
            ),
            ("rem_803", "Water the plants", DEMO_NOW - DAY, "done"),
        ] {
            reminders.insert(
                id.to_string(),
                Reminder {
                    id: id.to_string(),
                    text: text.to_string(),
                    at,
                    status,
                },
            );
        }
        Automations {
            automations,
            reminders,
            next_automation: 703,
            next_run: 1,
            next_reminder: 804,
        }
    }

    fn automation_mut(&mut self, id: &str) -> Result<&mut Automation, ToolError> {
        AUTOMATION.get_mut(&mut self.automations, id)
    }

    fn reminder_mut(&mut self, id: &str) -> Result<&mut Reminder, ToolError> {
        REMINDER.get_mut(&mut self.reminders, id)
    }
}

const AUTOMATION: Kind = Kind::new("automation", "list them with list_automations");
const REMINDER: Kind = Kind::new("reminder", "list them with list_reminders");

fn create_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.str("name")?.trim();
    let action = args.str("action")?.trim();
    if name.is_empty() || action.is_empty() {
        return Err(fail("name and action must not be empty"));
    }
    let cron_text = args.str("cron")?.trim();
    let cron = Cron::parse(cron_text)?;
    let z = zone(args.str_or("timezone", "UTC")?)?;
    if cron.next_runs(DEMO_NOW, z.offset, 1).is_empty() {
        return Err(fail(format!(
            "{cron_text:?} never fires (check the day and month fields)"
        )));
    }
    let mut state = lock(&world.automations);
    let id = next_id("aut_", &mut state.next_automation);
    let automation = Automation {
        id: id.clone(),
        name: name.to_string(),
        cron_text: cron_text.to_string(),
        cron,
        timezone: z.name.to_string(),
        offset: z.offset,
        action: action.to_string(),
        active: true,
        runs: Vec::new(),
    };
    let details = json!({"automation": automation.to_json()});
    let text = format!("Created {id}: {}", automation.cron.explain(cron_text));
    state.automations.insert(id, automation);
    ok_text(details, text)
}

fn list_automations(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let status = args.str_or("status", "all")?;
    let state = lock(&world.automations);
    let list = state
        .automations
        .values()
        .filter(|a| status == "all" || (status == "active") == a.active);
    ok(listed("automations", list.map(Automation::to_json)))
}

fn get_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut state = lock(&world.automations);
    let a = state.automation_mut(args.str("automation_id")?)?;
    ok(json!({"automation": a.to_json()}))
}

fn update_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let cron = args
        .opt_str("cron")?
        .map(|c| Cron::parse(c).map(|p| (c.trim().to_string(), p)))
        .transpose()?;
    let (action, name) = (args.opt_str("action")?, args.opt_str("name")?);
    let mut state = lock(&world.automations);
    let a = state.automation_mut(args.str("automation_id")?)?;
    let mut changed = Changed::default();
    if let Some((text, parsed)) = cron {
        a.cron_text = text;
        a.cron = parsed;
        changed.note("cron");
    }
    changed.set("action", &mut a.action, action);
    changed.set("name", &mut a.name, name);
    let details = json!({"automation": a.to_json(), "changed": changed});
    changed.reply(
        details,
        "Nothing changed: pass cron, action or name to update the automation.",
    )
}

fn set_active(world: &DemoWorld, args: &Args<'_>, active: bool) -> Reply {
    let mut state = lock(&world.automations);
    let a = state.automation_mut(args.str("automation_id")?)?;
    if a.active == active {
        return Err(fail(format!(
            "{} is already {}",
            a.id,
            if active { "active" } else { "paused" }
        )));
    }
    a.active = active;
    ok(json!({"automation": a.to_json()}))
}

fn pause_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    set_active(world, args, false)
}

fn resume_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    set_active(world, args, true)
}

fn delete_automation(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut state = lock(&world.automations);
    let a = AUTOMATION.take(&mut state.automations, args.str("automation_id")?)?;
    ok(
        json!({"deleted": {"id": a.id, "name": a.name}, "runs_removed": a.runs.len(), "automations_left": state.automations.len()}),
    )
}

fn run_automation_now(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut state = lock(&world.automations);
    let run_number = state.next_run;
    state.next_run += 1;
    let a = state.automation_mut(args.str("automation_id")?)?;
    let run = Run {
        id: format!("run_{}_{}", a.id, run_number + 100),
        started_at: DEMO_NOW,
        status: "succeeded",
        output: format!("Manual run of \"{}\": {}", a.name, a.action),
    };
    a.runs.push(run.clone());
    ok(
        json!({"run_id": run.id, "automation_id": a.id, "started_at": format_utc(run.started_at), "status": run.status, "output": run.output}),
    )
}

fn list_automation_runs(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let limit = args.i64_or("limit", 10)?.clamp(1, 100) as usize;
    let mut state = lock(&world.automations);
    let a = state.automation_mut(args.str("automation_id")?)?;
    let mut runs: Vec<&Run> = a.runs.iter().collect();
    runs.sort_by_key(|r| std::cmp::Reverse(r.started_at));
    let list: Vec<Value> = runs.iter().take(limit).map(|r| json!({"id": r.id, "started_at": format_utc(r.started_at), "status": r.status, "output": r.output})).collect();
    ok(json!({"automation_id": a.id, "runs": list, "total": a.runs.len()}))
}

fn preview_cron(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("cron")?.trim();
    let count = args.i64_or("count", 5)?.clamp(1, 20) as usize;
    let cron = Cron::parse(text)?;
    let next: Vec<String> = cron
        .next_runs(DEMO_NOW, 0, count)
        .into_iter()
        .map(format_utc)
        .collect();
    ok(json!({"cron": text, "explanation": cron.explain(text), "next_runs": next}))
}

fn create_reminder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.trimmed("text")?;
    let at = parse_timestamp(args.str("at")?)?;
    if at <= DEMO_NOW {
        return Err(fail(format!(
            "{} is in the past (now is {})",
            format_utc(at),
            format_utc(DEMO_NOW)
        )));
    }
    let mut state = lock(&world.automations);
    let id = next_id("rem_", &mut state.next_reminder);
    let reminder = Reminder {
        id: id.clone(),
        text: text.to_string(),
        at,
        status: "pending",
    };
    let details = json!({"reminder": reminder.to_json()});
    state.reminders.insert(id, reminder);
    ok(details)
}

fn list_reminders(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let include_done = args.bool_or("include_done", false)?;
    let state = lock(&world.automations);
    let mut list: Vec<&Reminder> = state
        .reminders
        .values()
        .filter(|r| include_done || r.status == "pending")
        .collect();
    list.sort_by_key(|r| r.at);
    ok(
        json!({"reminders": list.iter().map(|r| r.to_json()).collect::<Vec<_>>(), "pending": state.reminders.values().filter(|r| r.status == "pending").count()}),
    )
}

fn cancel_reminder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut state = lock(&world.automations);
    let r = state.reminder_mut(args.str("reminder_id")?)?;
    if r.status != "pending" {
        return Err(fail(format!("{} is already {}", r.id, r.status)));
    }
    r.status = "cancelled";
    ok(json!({"reminder": r.to_json()}))
}

fn snooze_reminder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let minutes = args.i64_or("minutes", 10)?.clamp(1, 10_080);
    let mut state = lock(&world.automations);
    let r = state.reminder_mut(args.str("reminder_id")?)?;
    if r.status != "pending" {
        return Err(fail(format!(
            "{} is {}; only pending reminders can be snoozed",
            r.id, r.status
        )));
    }
    let before = r.at;
    r.at = r.at.max(DEMO_NOW) + minutes * 60;
    ok(json!({"reminder": r.to_json(), "previous_time": format_utc(before)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(expr: &str, n: usize) -> Vec<String> {
        Cron::parse(expr)
            .map(|c| {
                c.next_runs(DEMO_NOW, 0, n)
                    .into_iter()
                    .map(format_utc)
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn cron_next_runs() {
        // DEMO_NOW is Monday 2026-03-02 09:00 UTC.
        assert_eq!(
            next("0 9 * * 1", 2),
            ["2026-03-09T09:00:00Z", "2026-03-16T09:00:00Z"]
        );
        assert_eq!(
            next("*/15 9-17 * * 1-5", 2),
            ["2026-03-02T09:15:00Z", "2026-03-02T09:30:00Z"]
        );
        assert_eq!(next("@monthly", 1), ["2026-04-01T00:00:00Z"]);
        assert_eq!(next("0 0 29 2 *", 1), ["2028-02-29T00:00:00Z"]);
        assert_eq!(next("30 6 * * sun", 1), ["2026-03-08T06:30:00Z"]);
        assert_eq!(next("0 12 * * 7", 1), ["2026-03-08T12:00:00Z"]);
        assert!(Cron::parse("61 * * * *").is_err());
        assert_eq!(next("5/4294967295 * * * *", 1), ["2026-03-02T09:05:00Z"]);
        assert!(Cron::parse("* * *").is_err());
        assert!(next("0 0 31 2 *", 1).is_empty());
    }
}
