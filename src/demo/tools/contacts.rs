//! `contacts`: an address book with groups, birthdays, merge and vCard export.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{
    DAY, DEMO_NOW, civil_from_days, days_from_civil, format_date, month_days, parse_date,
};
use super::super::kit::{
    Args, Changed, Kind, Reply, fail, listed, listed_first, matches_all, next_id, ok, ok_text,
    unique_name,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "list_contacts" => list_contacts,
        "get_contact" => get_contact,
        "create_contact" => create_contact,
        "update_contact" => update_contact,
        "delete_contact" => delete_contact,
        "search_contacts" => search_contacts,
        "add_contact_to_group" => add_contact_to_group,
        "list_contact_groups" => list_contact_groups,
        "create_contact_group" => create_contact_group,
        "merge_contacts" => merge_contacts,
        "upcoming_birthdays" => upcoming_birthdays,
        "export_vcard" => export_vcard,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Contact {
    id: String,
    name: String,
    email: String,
    phone: Option<String>,
    company: Option<String>,
    /// Birthday as a day number.
    birthday: Option<i64>,
}

/// Contacts and groups (group id → (name, member ids)).
#[derive(Debug)]
pub(crate) struct Contacts {
    contacts: BTreeMap<String, Contact>,
    groups: BTreeMap<String, (String, Vec<String>)>,
    next_contact: u64,
    next_group: u64,
}

impl Contacts {
    pub(crate) fn seeded() -> Contacts {
        let mut contacts = BTreeMap::new();
        for (id, name, email, phone, company, birthday) in [
            (
                "con_101",
                "Dana Whitfield",
                "dana@acme.example",
                Some("+1 415 555 0101"),
                Some("Acme"),
                Some((1988, 3, 9)),
            ),
            (
                "con_102",
                "Lee Park",
                "lee@acme.example",
                Some("+44 20 7946 0102"),
                Some("Acme"),
                Some((1991, 7, 22)),
            ),
            (
                "con_103",
                "Priya Raman",
                "priya@northwind.example",
                Some("+91 22 5555 0103"),
                Some("Northwind Consulting"),
                None,
            ),
            (
                "con_104",
                "Sam Ortega",
                "sam@friends.example",
                Some("+351 21 555 0104"),
                None,
                Some((1990, 3, 20)),
            ),
            (
                "con_105",
                "Mara Jensen",
                "mara@acme.example",
                None,
                Some("Acme"),
                Some((1994, 11, 2)),
            ),
            (
                "con_106",
                "Dana W.",
                "dana.whitfield@personal.example",
                Some("+1 415 555 0199"),
                None,
                None,
            ),
        ] {
            contacts.insert(
                id.to_string(),
                Contact {
                    id: id.to_string(),
                    name: name.to_string(),
                    email: email.to_string(),
                    phone: phone.map(str::to_string),
                    company: company.map(str::to_string),
                    birthday: birthday.map(|(y, m, d)| days_from_civil(y, m, d)),
                },
            );
        }
        let mut groups = BTreeMap::new();
        groups.insert(
            "grp_team".to_string(),
            (
                "Team".to_string(),
                vec![
                    "con_101".to_string(),
                    "con_102".to_string(),
                    "con_105".to_string(),
                ],
            ),
        );
        groups.insert(
            "grp_friends".to_string(),
            ("Friends".to_string(), vec!["con_104".to_string()]),
        );
        Contacts {
            contacts,
            groups,
            next_contact: 107,
            next_group: 1,
        }
    }

    fn contact(&self, id: &str) -> Result<&Contact, ToolError> {
        CONTACT.get(&self.contacts, id)
    }

    fn to_json(&self, c: &Contact) -> Value {
        let groups: Vec<&String> = self
            .groups
            .iter()
            .filter(|(_, (_, members))| members.contains(&c.id))
            .map(|(id, _)| id)
            .collect();
        json!({
            "id": c.id,
            "name": c.name,
            "email": c.email,
            "phone": c.phone,
            "company": c.company,
            "birthday": c.birthday.map(format_date),
            "groups": groups,
        })
    }

    fn sorted(&self, keep: impl Fn(&Contact) -> bool) -> Vec<&Contact> {
        let mut list: Vec<&Contact> = self.contacts.values().filter(|c| keep(c)).collect();
        list.sort_by_key(|a| a.name.to_lowercase());
        list
    }

    /// The contacts whose name, email, phone or company match every word of `query`, by name.
    fn search(&self, query: &str) -> Vec<&Contact> {
        self.sorted(|c| {
            matches_all(
                &format!(
                    "{} {} {} {}",
                    c.name,
                    c.email,
                    c.phone.as_deref().unwrap_or(""),
                    c.company.as_deref().unwrap_or("")
                ),
                query,
            )
        })
    }
}

const CONTACT: Kind = Kind::new("contact", "find ids with search_contacts or list_contacts");
const GROUP: Kind = Kind::new("group", "list groups with list_contact_groups");

fn email_arg(value: &str) -> Result<String, ToolError> {
    let email = value.trim().to_lowercase();
    match email.split_once('@') {
        Some((user, domain)) if !user.is_empty() && domain.contains('.') => Ok(email),
        _ => Err(fail(format!("{value:?} is not a valid email address"))),
    }
}

fn list_contacts(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let limit = args.i64_or("limit", 50)?.clamp(1, 500) as usize;
    let group = args.opt_str("group")?;
    let book = lock(&world.contacts);
    let members = match group {
        Some(g) => Some(GROUP.get(&book.groups, g)?.1.clone()),
        None => None,
    };
    let list = book.sorted(|c| members.as_ref().is_none_or(|m| m.contains(&c.id)));
    ok(listed_first(
        "contacts",
        limit,
        list.iter().map(|c| book.to_json(c)),
    ))
}

fn get_contact(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let book = lock(&world.contacts);
    let c = book.contact(args.str("contact_id")?)?;
    ok(json!({"contact": book.to_json(c)}))
}

fn create_contact(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.trimmed("name")?;
    let email = email_arg(args.str("email")?)?;
    let birthday = args.opt_str("birthday")?.map(parse_date).transpose()?;
    let mut book = lock(&world.contacts);
    if let Some(existing) = book.contacts.values().find(|c| c.email == email) {
        return Err(fail(format!(
            "{} already has the email {email} ({}); update or merge instead",
            existing.name, existing.id
        )));
    }
    let id = next_id("con_", &mut book.next_contact);
    let contact = Contact {
        id: id.clone(),
        name: name.to_string(),
        email,
        phone: args.opt_str("phone")?.map(str::to_string),
        company: args.opt_str("company")?.map(str::to_string),
        birthday,
    };
    let details = json!({"contact": book.to_json(&contact)});
    book.contacts.insert(id, contact);
    ok(details)
}

fn update_contact(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("contact_id")?;
    let email = args.opt_str("email")?.map(email_arg).transpose()?;
    let (phone, company) = (args.opt_str("phone")?, args.opt_str("company")?);
    let mut book = lock(&world.contacts);
    let mut contact = book.contact(id)?.clone();
    let mut changed = Changed::default();
    changed.set("email", &mut contact.email, email);
    changed.set("phone", &mut contact.phone, phone.map(str::to_string));
    changed.set("company", &mut contact.company, company.map(str::to_string));
    let details = json!({"contact": book.to_json(&contact), "changed": changed});
    book.contacts.insert(id.to_string(), contact);
    changed.reply(
        details,
        "Nothing changed: pass email, phone or company to update the contact.",
    )
}

fn delete_contact(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("contact_id")?;
    let mut book = lock(&world.contacts);
    let c = Kind::new("contact", "find ids with search_contacts").take(&mut book.contacts, id)?;
    for (_, members) in book.groups.values_mut() {
        members.retain(|m| m != id);
    }
    ok(json!({"deleted": {"id": c.id, "name": c.name}, "contacts_left": book.contacts.len()}))
}

fn search_contacts(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let book = lock(&world.contacts);
    let list = book.search(query);
    ok(listed("contacts", list.iter().map(|c| book.to_json(c))))
}

fn add_contact_to_group(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (id, group) = (args.str("contact_id")?, args.str("group_id")?);
    let mut book = lock(&world.contacts);
    let name = book.contact(id)?.name.clone();
    let (group_name, members) = GROUP.get_mut(&mut book.groups, group)?;
    if members.iter().any(|m| m == id) {
        return Err(fail(format!("{name} is already in {group_name}")));
    }
    members.push(id.to_string());
    ok(json!({"group": {"id": group, "name": group_name, "members": members.len()}, "added": name}))
}

fn list_contact_groups(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let book = lock(&world.contacts);
    let groups: Vec<Value> = book
        .groups
        .iter()
        .map(|(id, (name, members))| json!({"id": id, "name": name, "members": members.len()}))
        .collect();
    ok(json!({ "groups": groups }))
}

fn create_contact_group(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.trimmed("name")?;
    let mut book = lock(&world.contacts);
    unique_name("group", name, book.groups.values().map(|g| &g.0))?;
    let id = next_id("grp_", &mut book.next_group);
    book.groups
        .insert(id.clone(), (name.to_string(), Vec::new()));
    ok(json!({"group": {"id": id, "name": name, "members": 0}, "groups_total": book.groups.len()}))
}

fn merge_contacts(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (target, duplicate) = (args.str("target_id")?, args.str("duplicate_id")?);
    if target == duplicate {
        return Err(fail("target_id and duplicate_id must differ"));
    }
    let mut book = lock(&world.contacts);
    let dup = book.contact(duplicate)?.clone();
    let mut keep = book.contact(target)?.clone();
    let mut filled = Vec::new();
    if keep.phone.is_none() && dup.phone.is_some() {
        keep.phone = dup.phone.clone();
        filled.push("phone");
    }
    if keep.company.is_none() && dup.company.is_some() {
        keep.company = dup.company.clone();
        filled.push("company");
    }
    if keep.birthday.is_none() && dup.birthday.is_some() {
        keep.birthday = dup.birthday;
        filled.push("birthday");
    }
    book.contacts.remove(duplicate);
    for (_, members) in book.groups.values_mut() {
        if members.iter().any(|m| m == duplicate) && !members.iter().any(|m| m == target) {
            members.push(target.to_string());
        }
        members.retain(|m| m != duplicate);
    }
    let details = json!({"contact": book.to_json(&keep), "merged_from": dup.id, "filled_fields": filled, "other_email": dup.email});
    book.contacts.insert(target.to_string(), keep);
    ok(details)
}

fn upcoming_birthdays(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let days = args.i64_or("days", 30)?.clamp(1, 366);
    let today = DEMO_NOW.div_euclid(DAY);
    let (year, _, _) = civil_from_days(today);
    let book = lock(&world.contacts);
    let mut list: Vec<(i64, Value)> = Vec::new();
    for c in book.contacts.values() {
        let Some(born) = c.birthday else { continue };
        let (by, bm, bd) = civil_from_days(born);
        let next = |y: i64| days_from_civil(y, bm, bd.min(month_days(y, bm)));
        let (mut when, mut turning_year) = (next(year), year);
        if when < today {
            when = next(year + 1);
            turning_year = year + 1;
        }
        let until = when - today;
        if until <= days {
            list.push((until, json!({"contact_id": c.id, "name": c.name, "date": format_date(when), "days_until": until, "turning": turning_year - by})));
        }
    }
    list.sort_by_key(|(d, _)| *d);
    ok(json!({"birthdays": list.into_iter().map(|(_, v)| v).collect::<Vec<_>>()}))
}

fn export_vcard(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let book = lock(&world.contacts);
    let c = book.contact(args.str("contact_id")?)?;
    let (first, last) = c.name.rsplit_once(' ').unwrap_or((c.name.as_str(), ""));
    let mut card = format!(
        "BEGIN:VCARD\r\nVERSION:3.0\r\nN:{last};{first};;;\r\nFN:{}\r\nEMAIL;TYPE=INTERNET:{}\r\n",
        c.name, c.email
    );
    if let Some(phone) = &c.phone {
        card.push_str(&format!("TEL;TYPE=CELL:{phone}\r\n"));
    }
    if let Some(company) = &c.company {
        card.push_str(&format!("ORG:{company}\r\n"));
    }
    if let Some(b) = c.birthday {
        card.push_str(&format!("BDAY:{}\r\n", format_date(b)));
    }
    card.push_str("END:VCARD\r\n");
    ok_text(
        json!({"contact_id": c.id, "filename": format!("{}.vcf", c.name.to_lowercase().replace(' ', "-")), "vcard": card}),
        card.clone(),
    )
}
