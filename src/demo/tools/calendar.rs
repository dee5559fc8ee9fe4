//! `calendar`: events on three calendars (work, personal, team), seeded with the demo week.
//! Times are stored as unix seconds and shown in UTC; ranges are half-open `[start, end)`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{
    DAY, DEMO_NOW, days_from_civil, format_date, format_utc, parse_date, parse_timestamp, weekday,
};
use super::super::kit::{
    Args, Changed, Kind, Reply, fail, listed_first, matches_all, next_id, ok, ok_text, unique_name,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "create_event" => create_event,
        "list_events" => list_events,
        "get_event" => get_event,
        "update_event" => update_event,
        "delete_event" => delete_event,
        "search_events" => search_events,
        "find_free_slots" => find_free_slots,
        "respond_to_invite" => respond_to_invite,
        "add_attendee" => add_attendee,
        "remove_attendee" => remove_attendee,
        "list_calendars" => list_calendars,
        "create_calendar" => create_calendar,
        "share_calendar" => share_calendar,
        "move_event" => move_event,
        "set_event_reminder" => set_event_reminder,
        "list_upcoming_events" => list_upcoming_events,
        "get_agenda" => get_agenda,
        "duplicate_event" => duplicate_event,
        "export_ics" => export_ics,
        "check_conflicts" => check_conflicts,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
pub(crate) struct Event {
    id: String,
    calendar_id: String,
    pub(crate) title: String,
    pub(crate) start: i64,
    end: i64,
    location: Option<String>,
    attendees: Vec<String>,
    my_response: &'static str,
    reminder_minutes: Option<i64>,
}

impl Event {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "calendar_id": self.calendar_id,
            "title": self.title,
            "start": format_utc(self.start),
            "end": format_utc(self.end),
            "location": self.location,
            "attendees": self.attendees,
            "my_response": self.my_response,
            "reminder_minutes": self.reminder_minutes,
        })
    }
}

#[derive(Debug, Clone)]
struct CalendarInfo {
    name: String,
    color: String,
    shared_with: Vec<(String, String)>,
}

/// Calendars and their events.
#[derive(Debug)]
pub(crate) struct Calendar {
    pub(crate) events: BTreeMap<String, Event>,
    calendars: BTreeMap<String, CalendarInfo>,
    next_event: u64,
    next_calendar: u64,
}

fn at(month: u32, day: u32, hour: i64, minute: i64) -> i64 {
    days_from_civil(2026, month, day) * DAY + hour * 3600 + minute * 60
}

impl Calendar {
    pub(crate) fn seeded() -> Calendar {
        let mut calendars = BTreeMap::new();
        for (id, name, color) in [
            ("cal_work", "Work", "blue"),
            ("cal_personal", "Personal", "green"),
            ("cal_team", "Team events", "purple"),
        ] {
            calendars.insert(
                id.to_string(),
                CalendarInfo {
                    name: name.to_string(),
                    color: color.to_string(),
                    shared_with: Vec::new(),
                },
            );
        }
        if let Some(team) = calendars.get_mut("cal_team") {
            team.shared_with
                .push(("dana@acme.example".to_string(), "writer".to_string()));
        }
        let seed = [
            (
                "evt_1001",
                "cal_work",
                "Weekly team standup",
                at(3, 2, 9, 30),
                at(3, 2, 9, 45),
                Some("Room 4B"),
                &["dana@acme.example", "lee@acme.example"][..],
                "accepted",
                Some(10),
            ),
            (
                "evt_1002",
                "cal_work",
                "Design review: search ranking",
                at(3, 2, 14, 0),
                at(3, 2, 15, 0),
                Some("Video call"),
                &["dana@acme.example", "priya@northwind.example"][..],
                "accepted",
                None,
            ),
            (
                "evt_1003",
                "cal_personal",
                "Dentist appointment",
                at(3, 4, 16, 30),
                at(3, 4, 17, 15),
                Some("Smile Dental, 12 Oak Street"),
                &[][..],
                "accepted",
                Some(60),
            ),
            (
                "evt_1004",
                "cal_work",
                "Quarterly planning",
                at(3, 5, 10, 0),
                at(3, 5, 12, 0),
                Some("Board room"),
                &["dana@acme.example", "lee@acme.example", "mara@acme.example"][..],
                "needs_action",
                None,
            ),
            (
                "evt_1005",
                "cal_personal",
                "Dinner with Sam",
                at(3, 6, 19, 0),
                at(3, 6, 21, 0),
                Some("Casa Lisboa"),
                &["sam@friends.example"][..],
                "accepted",
                None,
            ),
            (
                "evt_1006",
                "cal_team",
                "Team offsite in Lisbon",
                at(3, 19, 9, 0),
                at(3, 19, 17, 0),
                Some("Lisbon"),
                &["dana@acme.example", "lee@acme.example", "mara@acme.example"][..],
                "tentative",
                Some(1440),
            ),
        ];
        let events = seed
            .into_iter()
            .map(
                |(id, cal, title, start, end, location, attendees, response, reminder)| {
                    (
                        id.to_string(),
                        Event {
                            id: id.to_string(),
                            calendar_id: cal.to_string(),
                            title: title.to_string(),
                            start,
                            end,
                            location: location.map(str::to_string),
                            attendees: attendees.iter().map(|a| a.to_string()).collect(),
                            my_response: response,
                            reminder_minutes: reminder,
                        },
                    )
                },
            )
            .collect();
        Calendar {
            events,
            calendars,
            next_event: 1007,
            next_calendar: 1,
        }
    }

    fn event(&self, id: &str) -> Result<&Event, ToolError> {
        EVENT.get(&self.events, id)
    }

    fn event_mut(&mut self, id: &str) -> Result<&mut Event, ToolError> {
        EVENT.get_mut(&mut self.events, id)
    }

    fn check_calendar(&self, id: &str) -> Result<(), ToolError> {
        CALENDAR.check(&self.calendars, id)
    }

    /// Events overlapping `[from, to)`, by start time.
    fn in_range(&self, from: i64, to: i64, calendar: Option<&str>) -> Vec<&Event> {
        let mut events: Vec<&Event> = self
            .events
            .values()
            .filter(|e| e.start < to && e.end > from)
            .filter(|e| calendar.is_none_or(|c| e.calendar_id == c))
            .collect();
        events.sort_by(|a, b| a.start.cmp(&b.start).then(a.id.cmp(&b.id)));
        events
    }
}

const EVENT: Kind = Kind::new("event", "find ids with list_events or search_events");
const CALENDAR: Kind = Kind::new("calendar", "list them with list_calendars");

fn listing(events: &[&Event], limit: usize) -> Value {
    listed_first("events", limit, events.iter().map(|e| e.to_json()))
}

fn create_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let title = args.trimmed("title")?;
    let start = parse_timestamp(args.str("start")?)?;
    let end = match args.opt_str("end")? {
        Some(end) => parse_timestamp(end)?,
        None => start + args.i64_or("duration_minutes", 30)?.clamp(5, 1440) * 60,
    };
    if end <= start {
        return Err(fail("end must be after start"));
    }
    let calendar_id = args.str_or("calendar_id", "cal_work")?;
    let mut cal = lock(&world.calendar);
    cal.check_calendar(calendar_id)?;
    let id = next_id("evt_", &mut cal.next_event);
    let event = Event {
        id: id.clone(),
        calendar_id: calendar_id.to_string(),
        title: title.to_string(),
        start,
        end,
        location: args.opt_str("location")?.map(str::to_string),
        attendees: args.opt_str_list("attendees")?.unwrap_or_default(),
        my_response: "accepted",
        reminder_minutes: Some(10),
    };
    let details = json!({"event": event.to_json()});
    cal.events.insert(id, event);
    ok(details)
}

fn list_events(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let from = match args.opt_str("from")? {
        Some(t) => parse_timestamp(t)?,
        None => DEMO_NOW,
    };
    let to = match args.opt_str("to")? {
        Some(t) => parse_timestamp(t)?,
        None => from + 7 * DAY,
    };
    if to <= from {
        return Err(fail("`to` must be after `from`"));
    }
    let limit = args.i64_or("limit", 20)?.clamp(1, 100) as usize;
    let cal = lock(&world.calendar);
    let calendar = args.opt_str("calendar_id")?;
    if let Some(c) = calendar {
        cal.check_calendar(c)?;
    }
    ok(listing(&cal.in_range(from, to, calendar), limit))
}

fn get_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let cal = lock(&world.calendar);
    ok(json!({"event": cal.event(args.str("event_id")?)?.to_json()}))
}

fn update_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut cal = lock(&world.calendar);
    let event = cal.event_mut(args.str("event_id")?)?;
    let mut updated = event.clone();
    let mut changed = Changed::default();
    changed.set("title", &mut updated.title, args.opt_str("title")?);
    if let Some(start) = args.opt_str("start")? {
        let duration = updated.end - updated.start;
        updated.start = parse_timestamp(start)?;
        updated.end = updated.start + duration;
        changed.note("start");
    }
    let end = args.opt_str("end")?.map(parse_timestamp).transpose()?;
    changed.set("end", &mut updated.end, end);
    let location = args.opt_str("location")?.map(str::to_string);
    changed.set("location", &mut updated.location, location);
    if updated.end <= updated.start {
        return Err(fail("end must be after start"));
    }
    *event = updated;
    let details = json!({"event": event.to_json(), "changed": changed});
    changed.reply(
        details,
        "Nothing changed: pass title, start, end or location to update the event.",
    )
}

fn delete_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("event_id")?;
    let notify = args.bool_or("notify_attendees", true)?;
    let mut cal = lock(&world.calendar);
    let event = EVENT.take(&mut cal.events, id)?;
    let notified = if notify {
        event.attendees.clone()
    } else {
        Vec::new()
    };
    ok_text(
        json!({
            "deleted": {"id": event.id, "title": event.title, "start": format_utc(event.start)},
            "notified": notified,
            "remaining_events": cal.events.len(),
        }),
        format!("Cancelled \"{}\"", event.title),
    )
}

fn search_events(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let limit = args.i64_or("limit", 10)?.clamp(1, 50) as usize;
    let cal = lock(&world.calendar);
    let mut hits: Vec<&Event> = cal
        .events
        .values()
        .filter(|e| {
            let text = format!(
                "{} {} {}",
                e.title,
                e.location.as_deref().unwrap_or(""),
                e.attendees.join(" ")
            );
            matches_all(&text, query)
        })
        .collect();
    hits.sort_by_key(|e| e.start);
    ok(listing(&hits, limit))
}

fn find_free_slots(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let day = parse_date(args.str("date")?)?;
    let duration = args.i64("duration_minutes")?.clamp(5, 480) * 60;
    let (open, close) = (
        args.i64_or("work_start_hour", 9)?.clamp(0, 23),
        args.i64_or("work_end_hour", 17)?.clamp(1, 24),
    );
    if close <= open {
        return Err(fail("work_end_hour must be after work_start_hour"));
    }
    let (day_start, day_end) = (day * DAY + open * 3600, day * DAY + close * 3600);
    let cal = lock(&world.calendar);
    let mut cursor = day_start;
    let mut slots = Vec::new();
    for event in cal.in_range(day_start, day_end, None) {
        if event.start - cursor >= duration {
            slots.push(json!({"start": format_utc(cursor), "end": format_utc(event.start)}));
        }
        cursor = cursor.max(event.end);
    }
    if day_end - cursor >= duration {
        slots.push(json!({"start": format_utc(cursor), "end": format_utc(day_end)}));
    }
    ok(json!({"date": format_date(day), "slots": slots}))
}

fn respond_to_invite(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let response = match args.str("response")? {
        "accepted" => "accepted",
        "declined" => "declined",
        "tentative" => "tentative",
        other => {
            return Err(fail(format!(
                "response must be accepted, declined or tentative, got {other:?}"
            )));
        }
    };
    let mut cal = lock(&world.calendar);
    let event = cal.event_mut(args.str("event_id")?)?;
    event.my_response = response;
    ok(json!({"event": event.to_json()}))
}

fn add_attendee(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let email = args.str("email")?.trim().to_lowercase();
    if !email.contains('@') {
        return Err(fail(format!("{email:?} is not an email address")));
    }
    let mut cal = lock(&world.calendar);
    let event = cal.event_mut(args.str("event_id")?)?;
    if event.attendees.contains(&email) {
        return Err(fail(format!("{email} is already invited to {}", event.id)));
    }
    event.attendees.push(email);
    ok(json!({"event": event.to_json()}))
}

fn remove_attendee(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let email = args.str("email")?.trim().to_lowercase();
    let mut cal = lock(&world.calendar);
    let event = cal.event_mut(args.str("event_id")?)?;
    let before = event.attendees.len();
    event.attendees.retain(|a| *a != email);
    if event.attendees.len() == before {
        return Err(fail(format!(
            "{email} is not an attendee of {}; attendees: {}",
            event.id,
            event.attendees.join(", ")
        )));
    }
    ok(json!({"event_id": event.id, "removed": email, "attendees": event.attendees}))
}

fn list_calendars(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let cal = lock(&world.calendar);
    let calendars: Vec<Value> = cal
        .calendars
        .iter()
        .map(|(id, info)| {
            json!({
                "id": id,
                "name": info.name,
                "color": info.color,
                "events": cal.events.values().filter(|e| e.calendar_id == *id).count(),
                "shared_with": info.shared_with.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    ok(json!({ "calendars": calendars }))
}

fn create_calendar(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.trimmed("name")?;
    let color = args.str_or("color", "blue")?;
    let mut cal = lock(&world.calendar);
    unique_name("calendar", name, cal.calendars.values().map(|c| &c.name))?;
    let id = next_id("cal_", &mut cal.next_calendar);
    cal.calendars.insert(
        id.clone(),
        CalendarInfo {
            name: name.to_string(),
            color: color.to_string(),
            shared_with: Vec::new(),
        },
    );
    ok(
        json!({"calendar": {"id": id, "name": name, "color": color}, "calendars_total": cal.calendars.len()}),
    )
}

fn share_calendar(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("calendar_id")?;
    let email = args.str("email")?.trim().to_lowercase();
    let role = args.str_or("role", "reader")?;
    let mut cal = lock(&world.calendar);
    let info = CALENDAR.get_mut(&mut cal.calendars, id)?;
    info.shared_with.retain(|(e, _)| *e != email);
    info.shared_with.push((email, role.to_string()));
    let shared: Vec<Value> = info
        .shared_with
        .iter()
        .map(|(e, r)| json!({"email": e, "role": r}))
        .collect();
    ok(json!({"calendar_id": id, "calendar": info.name, "shared_with": shared}))
}

fn move_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let target = args.str("calendar_id")?;
    let mut cal = lock(&world.calendar);
    cal.check_calendar(target)?;
    let event = cal.event_mut(args.str("event_id")?)?;
    if event.calendar_id == target {
        return Err(fail(format!("{} is already on {target}", event.id)));
    }
    let from = std::mem::replace(&mut event.calendar_id, target.to_string());
    ok(json!({"event": event.to_json(), "from_calendar": from}))
}

fn set_event_reminder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let minutes = args.i64("minutes_before")?.clamp(0, 10_080);
    let mut cal = lock(&world.calendar);
    let event = cal.event_mut(args.str("event_id")?)?;
    event.reminder_minutes = (minutes > 0).then_some(minutes);
    ok(json!({"event": event.to_json()}))
}

fn list_upcoming_events(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let days = args.i64_or("days", 7)?.clamp(1, 60);
    let cal = lock(&world.calendar);
    ok(listing(
        &cal.in_range(DEMO_NOW, DEMO_NOW + days * DAY, None),
        100,
    ))
}

fn get_agenda(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let day = parse_date(args.str("date")?)?;
    let cal = lock(&world.calendar);
    let events = cal.in_range(day * DAY, (day + 1) * DAY, None);
    let mut text = format!("{} {}\n", weekday(day), format_date(day));
    let items: Vec<Value> = events
        .iter()
        .map(|e| {
            let (s, t) = (format_utc(e.start), format_utc(e.end));
            let line = format!(
                "{}–{} {}{}",
                &s[11..16],
                &t[11..16],
                e.title,
                e.location.as_deref().map(|l| format!(" ({l})")).unwrap_or_default()
            );
            text.push_str(&line);
            text.push('\n');
            json!({"time": format!("{}–{}", &s[11..16], &t[11..16]), "title": e.title, "location": e.location, "event_id": e.id})
        })
        .collect();
    if items.is_empty() {
        text.push_str("No events.\n");
    }
    ok_text(
        json!({"date": format_date(day), "weekday": weekday(day), "items": items}),
        text,
    )
}

fn duplicate_event(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let start = parse_timestamp(args.str("start")?)?;
    let mut cal = lock(&world.calendar);
    let mut copy = cal.event(args.str("event_id")?)?.clone();
    let id = next_id("evt_", &mut cal.next_event);
    copy.end = start + (copy.end - copy.start);
    copy.start = start;
    copy.id = id.clone();
    copy.my_response = "accepted";
    let details = json!({"event": copy.to_json()});
    cal.events.insert(id, copy);
    ok(details)
}

fn ics_time(ts: i64) -> String {
    format_utc(ts).replace(['-', ':'], "")
}

fn export_ics(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let cal = lock(&world.calendar);
    let e = cal.event(args.str("event_id")?)?;
    let mut ics = String::from(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//toolsearch//demo//EN\r\nBEGIN:VEVENT\r\n",
    );
    ics.push_str(&format!("UID:{}@demo.example\r\n", e.id));
    ics.push_str(&format!("DTSTAMP:{}\r\n", ics_time(DEMO_NOW)));
    ics.push_str(&format!(
        "DTSTART:{}\r\nDTEND:{}\r\n",
        ics_time(e.start),
        ics_time(e.end)
    ));
    ics.push_str(&format!(
        "SUMMARY:{}\r\n",
        e.title.replace([',', ';'], "\\,")
    ));
    if let Some(location) = &e.location {
        ics.push_str(&format!(
            "LOCATION:{}\r\n",
            location.replace([',', ';'], "\\,")
        ));
    }
    for attendee in &e.attendees {
        ics.push_str(&format!("ATTENDEE:mailto:{attendee}\r\n"));
    }
    ics.push_str("END:VEVENT\r\nEND:VCALENDAR\r\n");
    ok_text(
        json!({"event_id": e.id, "filename": format!("{}.ics", e.id), "ics": ics}),
        ics.clone(),
    )
}

fn check_conflicts(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let start = parse_timestamp(args.str("start")?)?;
    let end = parse_timestamp(args.str("end")?)?;
    if end <= start {
        return Err(fail("end must be after start"));
    }
    let cal = lock(&world.calendar);
    let calendar = args.opt_str("calendar_id")?;
    let conflicts: Vec<Value> = cal
        .in_range(start, end, calendar)
        .iter()
        .map(|e| e.to_json())
        .collect();
    ok(json!({"conflict": !conflicts.is_empty(), "conflicts": conflicts}))
}
