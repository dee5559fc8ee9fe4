//! `web`: search, fetch and news over a small fixed corpus of pages. Nothing touches the
//! network: a URL outside the corpus is "unreachable" (or 404 on a known domain).

use serde_json::{Value, json};

use super::super::clock::{DAY, DEMO_NOW, days_from_civil, format_date, format_utc};
use super::super::kit::{Args, Reply, fail, match_count, next_id, not_found, ok, ok_text, tagged};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "web_search" => web_search,
        "fetch_page" => fetch_page,
        "search_news" => search_news,
        "get_headlines" => get_headlines,
        "extract_links" => extract_links,
        "summarize_page" => summarize_page,
        "get_page_metadata" => get_page_metadata,
        "check_url_status" => check_url_status,
        "get_domain_info" => get_domain_info,
        "search_site" => search_site,
        "bookmark_page" => bookmark_page,
        "list_bookmarks" => list_bookmarks,
        "capture_screenshot" => capture_screenshot,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Page {
    url: &'static str,
    title: &'static str,
    author: &'static str,
    /// Publication day (days since 1970-01-01).
    published: i64,
    /// News category, for pages that are news articles.
    category: Option<&'static str>,
    description: &'static str,
    body: &'static str,
    links: &'static [(&'static str, &'static str)],
}

impl Page {
    fn domain(&self) -> &'static str {
        domain_of(self.url)
    }

    fn words(&self) -> usize {
        self.body.split_whitespace().count()
    }

    fn snippet(&self, query: &str) -> String {
        let sentence = sentences(self.body)
            .into_iter()
            .find(|s| match_count(s, query) > 0)
            .unwrap_or_else(|| self.description.to_string());
        sentence.chars().take(160).collect()
    }
}

fn domain_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if matches!(c, '.' | '!' | '?') {
            let s = current.trim().to_string();
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

fn day(month: u32, d: u32) -> i64 {
    let year = if month > 3 { 2025 } else { 2026 };
    days_from_civil(year, month, d)
}

fn corpus() -> Vec<Page> {
    vec![
        Page {
            url: "https://docs.rust-lang.example/book/ownership",
            title: "Understanding Ownership - The Rust Programming Language",
            author: "The Rust Team",
            published: day(1, 10),
            category: None,
            description: "Ownership is Rust's most unique feature: memory safety without a garbage collector.",
            body: "Ownership is a set of rules that govern how a Rust program manages memory. Each value in Rust has an owner. There can only be one owner at a time. When the owner goes out of scope, the value is dropped. Moving a value transfers ownership, while borrowing lets code use a value without taking ownership.",
            links: &[
                (
                    "References and Borrowing",
                    "https://docs.rust-lang.example/book/borrowing",
                ),
                ("Rust home", "https://docs.rust-lang.example/"),
            ],
        },
        Page {
            url: "https://docs.rust-lang.example/book/borrowing",
            title: "References and Borrowing - The Rust Programming Language",
            author: "The Rust Team",
            published: day(1, 10),
            category: None,
            description: "References let you refer to a value without taking ownership of it.",
            body: "A reference is like a pointer that is guaranteed to point to a valid value. At any given time you can have either one mutable reference or any number of immutable references. References must always be valid. The borrow checker enforces these rules at compile time.",
            links: &[(
                "Understanding Ownership",
                "https://docs.rust-lang.example/book/ownership",
            )],
        },
        Page {
            url: "https://news.example/tech/ev-batteries",
            title: "Solid-state batteries promise faster charging for electric vehicles",
            author: "Mina Okafor",
            published: day(3, 1),
            category: Some("technology"),
            description: "Carmakers say solid-state cells could reach 80% charge in ten minutes by 2028.",
            body: "Several carmakers announced pilot lines for solid-state batteries this week. The cells could let electric vehicles reach 80% charge in about ten minutes. Analysts expect the first models in 2028, though costs remain high. Battery makers are racing to secure lithium supply.",
            links: &[
                ("Tech news", "https://news.example/tech"),
                ("Markets", "https://news.example/business/rates"),
            ],
        },
        Page {
            url: "https://news.example/business/rates",
            title: "Central bank holds interest rates steady",
            author: "Jonas Weber",
            published: day(2, 27),
            category: Some("business"),
            description: "Policy makers kept the benchmark rate at 3.25% and signalled patience.",
            body: "The central bank kept its benchmark interest rate at 3.25% on Thursday. Officials said inflation is easing but remains above target. Markets expect the first cut in June. Mortgage rates were little changed after the decision.",
            links: &[("Business news", "https://news.example/business")],
        },
        Page {
            url: "https://news.example/science/exoplanet",
            title: "Astronomers find water vapour on a nearby exoplanet",
            author: "Priya Natarajan",
            published: day(2, 20),
            category: Some("science"),
            description: "A space telescope detected water vapour in the atmosphere of a planet 40 light-years away.",
            body: "Astronomers using a space telescope detected water vapour in the atmosphere of an exoplanet about 40 light-years from Earth. The planet orbits in the habitable zone of a small red star. Follow-up observations are planned for next year.",
            links: &[("Science news", "https://news.example/science")],
        },
        Page {
            url: "https://news.example/sports/marathon",
            title: "Lisbon marathon sets a new course record",
            author: "Rui Costa",
            published: day(3, 1),
            category: Some("sports"),
            description: "Cool weather helped the winner finish in 2:05:11.",
            body: "The Lisbon marathon saw a new course record on Sunday as the winner crossed the line in 2:05:11. Cool and dry weather helped the field. More than 30,000 runners took part.",
            links: &[("Sports news", "https://news.example/sports")],
        },
        Page {
            url: "https://news.example/world/climate-summit",
            title: "Climate summit agrees on methane targets",
            author: "Ana Lima",
            published: day(2, 24),
            category: Some("world"),
            description: "Delegates agreed to cut methane emissions by 30% by 2030.",
            body: "Delegates at the climate summit agreed to cut methane emissions by 30% by 2030. The deal includes funding for leak detection. Environmental groups welcomed the agreement but called for faster action.",
            links: &[("World news", "https://news.example/world")],
        },
        Page {
            url: "https://acme.example/",
            title: "Acme Widgets - dashboards that fit",
            author: "Acme Inc.",
            published: day(2, 2),
            category: None,
            description: "Acme Widgets lays out dashboard widgets on a responsive grid.",
            body: "Acme Widgets lays out dashboard widgets on a responsive 12-column grid. Start free, then upgrade for teams. Read the docs to get started in five minutes.",
            links: &[
                ("Docs", "https://acme.example/docs"),
                ("Status", "https://acme.example/status"),
                ("Pricing", "https://acme.example/pricing"),
            ],
        },
        Page {
            url: "https://acme.example/status",
            title: "Acme status: all systems operational",
            author: "Acme Inc.",
            published: day(3, 2),
            category: None,
            description: "Current status of Acme services.",
            body: "All systems operational. API latency is normal. The last incident was resolved on February 12.",
            links: &[("Home", "https://acme.example/")],
        },
        Page {
            url: "https://travel.example/lisbon-guide",
            title: "48 hours in Lisbon: a food lover's guide",
            author: "Clara Mendes",
            published: day(11, 15),
            category: None,
            description: "Pastries, seafood and the best viewpoints of Lisbon in two days.",
            body: "Start your first morning in Lisbon with a pastel de nata in Belem. Ride tram 28 through Alfama to the castle. In the evening, eat grilled sardines in Bairro Alto. On day two, take the train to Sintra for palaces and forest walks.",
            links: &[("Lisbon marathon", "https://news.example/sports/marathon")],
        },
        Page {
            url: "https://recipes.example/flat-white",
            title: "How to make a flat white at home",
            author: "Sam Barista",
            published: day(1, 28),
            category: None,
            description: "A double ristretto and silky microfoam: the flat white explained.",
            body: "A flat white is a double ristretto topped with a thin layer of silky microfoam. Steam whole milk to about 60 degrees Celsius. Pour slowly so the foam stays thin. Serve in a small cup.",
            links: &[],
        },
    ]
}

#[derive(Debug, Clone)]
struct Bookmark {
    id: String,
    url: String,
    title: String,
    tags: Vec<String>,
    saved_at: i64,
}

/// The corpus and the user's bookmarks.
#[derive(Debug)]
pub(crate) struct Web {
    pages: Vec<Page>,
    bookmarks: Vec<Bookmark>,
    next_bookmark: u64,
}

impl Web {
    pub(crate) fn seeded() -> Web {
        Web {
            pages: corpus(),
            bookmarks: vec![Bookmark {
                id: "bm_1".to_string(),
                url: "https://docs.rust-lang.example/book/ownership".to_string(),
                title: "Understanding Ownership - The Rust Programming Language".to_string(),
                tags: vec!["rust".to_string(), "reading".to_string()],
                saved_at: DEMO_NOW - 10 * DAY,
            }],
            next_bookmark: 2,
        }
    }

    fn page(&self, url: &str) -> Result<&Page, ToolError> {
        let wanted = url.trim().trim_end_matches('/');
        self.pages
            .iter()
            .find(|p| p.url.trim_end_matches('/') == wanted)
            .ok_or_else(|| {
                if self.pages.iter().any(|p| p.domain() == domain_of(url)) {
                    fail(format!(
                        "HTTP 404 fetching {url}: the page does not exist on {}",
                        domain_of(url)
                    ))
                } else {
                    fail(format!(
                        "could not reach {url}: host {} not found",
                        domain_of(url)
                    ))
                }
            })
    }

    /// Pages ranked by how many query words they contain (title counts double).
    fn ranked(&self, query: &str, filter: impl Fn(&Page) -> bool) -> Vec<&Page> {
        let mut scored: Vec<(usize, &Page)> = self
            .pages
            .iter()
            .filter(|p| filter(p))
            .map(|p| {
                (
                    2 * match_count(p.title, query)
                        + match_count(&format!("{} {}", p.description, p.body), query),
                    p,
                )
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.published.cmp(&a.1.published))
                .then(a.1.url.cmp(b.1.url))
        });
        scored.into_iter().map(|(_, p)| p).collect()
    }
}

fn web_search(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    if query.trim().is_empty() {
        return Err(fail("query must not be empty"));
    }
    let n = args.i64_or("num_results", 5)?.clamp(1, 10) as usize;
    let window = match args.str_or("freshness", "any")? {
        "day" => Some(1),
        "week" => Some(7),
        "month" => Some(31),
        "any" => None,
        other => {
            return Err(fail(format!(
                "freshness must be any, day, week or month, got {other:?}"
            )));
        }
    };
    let web = lock(&world.web);
    let today = DEMO_NOW / DAY;
    let hits = web.ranked(query, |p| window.is_none_or(|w| today - p.published <= w));
    let results: Vec<Value> = hits
        .iter()
        .take(n)
        .map(|p| json!({"title": p.title, "url": p.url, "snippet": p.snippet(query), "published": format_date(p.published)}))
        .collect();
    let text = if results.is_empty() {
        format!("No results for {query:?}.")
    } else {
        hits.iter()
            .take(n)
            .enumerate()
            .map(|(i, p)| format!("{}. {} — {}\n", i + 1, p.title, p.url))
            .collect()
    };
    ok_text(
        json!({"query": query, "results": results, "total": hits.len()}),
        text,
    )
}

fn fetch_page(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let url = args.str("url")?;
    let max = args.i64_or("max_chars", 8000)?.clamp(100, 100_000) as usize;
    let web = lock(&world.web);
    let page = web.page(url)?;
    let full = format!("{}\n\n{}", page.title, page.body);
    let text: String = full.chars().take(max).collect();
    let truncated = text.len() < full.len();
    ok(json!({"url": page.url, "title": page.title, "text": text, "truncated": truncated}))
}

fn search_news(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let limit = args.i64_or("limit", 5)?.clamp(1, 20) as usize;
    let web = lock(&world.web);
    let articles: Vec<Value> = web
        .ranked(query, |p| p.category.is_some())
        .iter()
        .take(limit)
        .map(|p| json!({"title": p.title, "url": p.url, "source": p.domain(), "published": format_date(p.published)}))
        .collect();
    ok(json!({ "articles": articles }))
}

fn get_headlines(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let category = args.str_or("category", "technology")?;
    let web = lock(&world.web);
    let mut pages: Vec<&Page> = web
        .pages
        .iter()
        .filter(|p| p.category == Some(category))
        .collect();
    pages.sort_by_key(|p| std::cmp::Reverse(p.published));
    let headlines: Vec<Value> = pages
        .iter()
        .map(|p| json!({"title": p.title, "url": p.url, "summary": p.description, "published": format_date(p.published)}))
        .collect();
    ok(json!({"category": category, "headlines": headlines, "as_of": format_utc(DEMO_NOW)}))
}

fn extract_links(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let web = lock(&world.web);
    let page = web.page(args.str("url")?)?;
    let links: Vec<Value> = page
        .links
        .iter()
        .map(|(text, href)| json!({"text": text, "href": href}))
        .collect();
    ok(json!({"url": page.url, "links": links}))
}

fn summarize_page(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = args.i64_or("max_sentences", 3)?.clamp(1, 10) as usize;
    let web = lock(&world.web);
    let page = web.page(args.str("url")?)?;
    let all = sentences(page.body);
    let summary = all.iter().take(n).cloned().collect::<Vec<_>>().join(" ");
    ok_text(
        json!({"url": page.url, "title": page.title, "summary": summary, "sentences": all.len().min(n), "source_words": page.words()}),
        summary.clone(),
    )
}

fn get_page_metadata(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let web = lock(&world.web);
    let p = web.page(args.str("url")?)?;
    ok(json!({
        "url": p.url,
        "title": p.title,
        "description": p.description,
        "author": p.author,
        "published": format_date(p.published),
        "word_count": p.words(),
    }))
}

fn check_url_status(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let url = args.str("url")?;
    let web = lock(&world.web);
    let domain = domain_of(url);
    let (status, reachable, note) = match web.page(url) {
        Ok(_) => (Some(200), true, "OK"),
        Err(_) if web.pages.iter().any(|p| p.domain() == domain) => (Some(404), true, "Not Found"),
        Err(_) => (None, false, "host not found"),
    };
    ok(
        json!({"url": url, "reachable": reachable, "status": status, "reason": note, "response_ms": if reachable { 42 } else { 0 }}),
    )
}

fn get_domain_info(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let domain = args.str("domain")?.trim().to_lowercase();
    let info = match domain.as_str() {
        "acme.example" => ("Example Registrar LLC", "2009-04-17", "2027-04-17"),
        "news.example" => ("Registrar of Examples", "1998-11-02", "2028-11-02"),
        "docs.rust-lang.example" | "rust-lang.example" => {
            ("Example Registrar LLC", "2010-07-07", "2026-07-07")
        }
        "travel.example" => ("Globe Names", "2015-02-12", "2027-02-12"),
        "recipes.example" => ("Globe Names", "2018-09-30", "2026-09-30"),
        _ => {
            return Err(not_found(
                "registered domain",
                &domain,
                "known domains include acme.example and news.example",
            ));
        }
    };
    let web = lock(&world.web);
    let pages = web
        .pages
        .iter()
        .filter(|p| p.domain() == domain || p.domain().ends_with(&format!(".{domain}")))
        .count();
    ok(json!({
        "domain": domain,
        "registrar": info.0,
        "created": info.1,
        "expires": info.2,
        "name_servers": ["ns1.dns.example", "ns2.dns.example"],
        "indexed_pages": pages,
    }))
}

fn search_site(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let site = args.str("site")?.trim().to_lowercase();
    let query = args.str("query")?;
    let web = lock(&world.web);
    let results: Vec<Value> = web
        .ranked(query, |p| p.domain() == site)
        .iter()
        .map(|p| json!({"title": p.title, "url": p.url, "snippet": p.snippet(query)}))
        .collect();
    ok(json!({"site": site, "results": results}))
}

fn bookmark_page(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let url = args.str("url")?;
    let tags = args.opt_str_list("tags")?.unwrap_or_default();
    let mut web = lock(&world.web);
    let title = web
        .page(url)
        .map(|p| p.title.to_string())
        .unwrap_or_else(|_| domain_of(url).to_string());
    if web.bookmarks.iter().any(|b| b.url == url) {
        return Err(fail(format!("{url} is already bookmarked")));
    }
    let id = next_id("bm_", &mut web.next_bookmark);
    web.bookmarks.push(Bookmark {
        id: id.clone(),
        url: url.to_string(),
        title: title.clone(),
        tags: tags.clone(),
        saved_at: DEMO_NOW,
    });
    ok(
        json!({"bookmark": {"id": id, "url": url, "title": title, "tags": tags}, "bookmarks_total": web.bookmarks.len()}),
    )
}

fn list_bookmarks(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let tag = args.opt_str("tag")?;
    let web = lock(&world.web);
    let list: Vec<Value> = web
        .bookmarks
        .iter()
        .filter(|b| tagged(&b.tags, tag))
        .map(|b| json!({"id": b.id, "url": b.url, "title": b.title, "tags": b.tags, "saved_at": format_utc(b.saved_at)}))
        .collect();
    ok(json!({ "bookmarks": list }))
}

fn capture_screenshot(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let url = args.str("url")?;
    let full = args.bool_or("full_page", false)?;
    let (title, words) = {
        let web = lock(&world.web);
        let page = web.page(url)?;
        (page.title.to_string(), page.words())
    };
    let height = if full {
        900 + 40 * words as i64 / 10
    } else {
        900
    };
    let name = format!("screenshot-{}.png", domain_of(url).replace('.', "-"));
    let image = lock(&world.images).insert(
        &name,
        1440,
        height,
        "png",
        &["screenshot"],
        &format!("Screenshot of \"{title}\""),
    );
    ok(json!({"url": url, "image": image}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_ranks_matching_pages() {
        let web = Web::seeded();
        let hits = web.ranked("rust ownership", |_| true);
        assert_eq!(
            hits.first().map(|p| p.url),
            Some("https://docs.rust-lang.example/book/ownership")
        );
        assert!(web.ranked("zzzz", |_| true).is_empty());
    }
}
