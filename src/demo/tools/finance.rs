//! `finance`: market quotes from a fixed table (as of the demo clock), a watchlist, a small
//! brokerage portfolio and bank accounts with transfers. Nothing leaves the process.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DAY, DEMO_NOW, format_date, format_utc};
use super::super::kit::{Args, Reply, fail, next_id, not_found, ok, ok_text, round_to};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "get_stock_quote" => get_stock_quote,
        "get_crypto_quote" => get_crypto_quote,
        "historical_quotes" => historical_quotes,
        "get_exchange_rate" => get_exchange_rate,
        "convert_currency" => convert_currency,
        "get_company_profile" => get_company_profile,
        "get_market_movers" => get_market_movers,
        "list_watchlist" => list_watchlist,
        "add_to_watchlist" => add_to_watchlist,
        "remove_from_watchlist" => remove_from_watchlist,
        "get_portfolio" => get_portfolio,
        "place_order" => place_order,
        "list_accounts" => list_accounts,
        "get_account_balance" => get_account_balance,
        "list_transactions" => list_transactions,
        "transfer_funds" => transfer_funds,
        "calculate_loan_payment" => calculate_loan_payment,
        _ => return None,
    })
}

struct Stock {
    symbol: &'static str,
    name: &'static str,
    last: f64,
    previous_close: f64,
    low: f64,
    high: f64,
    volume: u64,
    sector: &'static str,
    employees: u64,
    hq: &'static str,
    market_cap_billion: f64,
}

const STOCKS: [Stock; 7] = [
    Stock {
        symbol: "AAPL",
        name: "Apple Inc.",
        last: 231.42,
        previous_close: 228.9,
        low: 227.8,
        high: 232.1,
        volume: 48_210_300,
        sector: "Technology",
        employees: 161_000,
        hq: "Cupertino, California",
        market_cap_billion: 3490.0,
    },
    Stock {
        symbol: "MSFT",
        name: "Microsoft Corporation",
        last: 412.35,
        previous_close: 415.1,
        low: 409.9,
        high: 416.0,
        volume: 19_870_500,
        sector: "Technology",
        employees: 228_000,
        hq: "Redmond, Washington",
        market_cap_billion: 3065.0,
    },
    Stock {
        symbol: "GOOGL",
        name: "Alphabet Inc.",
        last: 171.08,
        previous_close: 168.44,
        low: 167.9,
        high: 171.6,
        volume: 25_403_100,
        sector: "Communication Services",
        employees: 183_000,
        hq: "Mountain View, California",
        market_cap_billion: 2110.0,
    },
    Stock {
        symbol: "AMZN",
        name: "Amazon.com, Inc.",
        last: 198.77,
        previous_close: 201.2,
        low: 197.5,
        high: 201.9,
        volume: 37_118_900,
        sector: "Consumer Discretionary",
        employees: 1_550_000,
        hq: "Seattle, Washington",
        market_cap_billion: 2090.0,
    },
    Stock {
        symbol: "NVDA",
        name: "NVIDIA Corporation",
        last: 126.15,
        previous_close: 121.3,
        low: 120.8,
        high: 127.4,
        volume: 298_550_000,
        sector: "Technology",
        employees: 29_600,
        hq: "Santa Clara, California",
        market_cap_billion: 3095.0,
    },
    Stock {
        symbol: "TSLA",
        name: "Tesla, Inc.",
        last: 242.6,
        previous_close: 251.0,
        low: 240.1,
        high: 252.3,
        volume: 96_004_200,
        sector: "Consumer Discretionary",
        employees: 140_000,
        hq: "Austin, Texas",
        market_cap_billion: 775.0,
    },
    Stock {
        symbol: "ACME",
        name: "Acme Widgets Corp.",
        last: 42.1,
        previous_close: 41.75,
        low: 41.5,
        high: 42.4,
        volume: 1_203_000,
        sector: "Software",
        employees: 340,
        hq: "London, UK",
        market_cap_billion: 3.4,
    },
];

/// (symbol, USD value, 24h change %, market cap in USD billions).
const COINS: [(&str, f64, f64, f64); 4] = [
    ("BTC", 67_250.0, 2.4, 1325.0),
    ("ETH", 3_480.5, -1.1, 418.0),
    ("SOL", 152.3, 5.8, 70.5),
    ("DOGE", 0.128, 0.9, 18.6),
];

/// Units of each currency per US dollar.
const FX: [(&str, f64); 9] = [
    ("USD", 1.0),
    ("EUR", 0.9210),
    ("GBP", 0.7885),
    ("JPY", 149.62),
    ("CHF", 0.8830),
    ("CAD", 1.3540),
    ("AUD", 1.5260),
    ("INR", 83.05),
    ("CNY", 7.1930),
];

fn stock(symbol: &str) -> Result<&'static Stock, ToolError> {
    let s = symbol.trim().to_uppercase();
    STOCKS.iter().find(|x| x.symbol == s).ok_or_else(|| {
        not_found(
            "ticker",
            &s,
            &format!(
                "covered tickers: {}",
                STOCKS
                    .iter()
                    .map(|x| x.symbol)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

fn per_usd(code: &str) -> Result<(String, f64), ToolError> {
    let c = code.trim().to_uppercase();
    FX.iter()
        .find(|(k, _)| *k == c)
        .map(|(k, v)| (k.to_string(), *v))
        .ok_or_else(|| {
            not_found(
                "currency",
                &c,
                &format!(
                    "supported: {}",
                    FX.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
                ),
            )
        })
}

fn rate(from: &str, to: &str) -> Result<(String, String, f64), ToolError> {
    let ((f, fv), (t, tv)) = (per_usd(from)?, per_usd(to)?);
    Ok((f, t, tv / fv))
}

#[derive(Debug, Clone)]
struct Account {
    name: &'static str,
    kind: &'static str,
    balance: f64,
}

#[derive(Debug, Clone)]
struct Transaction {
    id: String,
    account: String,
    date: i64,
    description: String,
    amount: f64,
    category: String,
}

/// Watchlist, holdings (symbol → (quantity, cost basis)), cash and bank accounts.
#[derive(Debug)]
pub(crate) struct Finance {
    watchlist: Vec<String>,
    holdings: BTreeMap<String, (f64, f64)>,
    cash: f64,
    accounts: BTreeMap<String, Account>,
    transactions: Vec<Transaction>,
    next_transaction: u64,
}

impl Finance {
    pub(crate) fn seeded() -> Finance {
        let mut holdings = BTreeMap::new();
        holdings.insert("AAPL".to_string(), (10.0, 1_650.0));
        holdings.insert("MSFT".to_string(), (4.0, 1_420.0));
        holdings.insert("TSLA".to_string(), (3.0, 810.0));
        let mut accounts = BTreeMap::new();
        accounts.insert(
            "acc_checking".to_string(),
            Account {
                name: "Everyday checking",
                kind: "checking",
                balance: 4_215.37,
            },
        );
        accounts.insert(
            "acc_savings".to_string(),
            Account {
                name: "Rainy-day savings",
                kind: "savings",
                balance: 12_800.0,
            },
        );
        accounts.insert(
            "acc_card".to_string(),
            Account {
                name: "Travel credit card",
                kind: "credit",
                balance: -642.18,
            },
        );
        let today = DEMO_NOW.div_euclid(DAY);
        let transactions = [
            ("acc_checking", 1, "Coffee Roasters", -4.8, "dining"),
            ("acc_checking", 1, "Grocery Market", -86.42, "groceries"),
            ("acc_checking", 2, "Salary ACME WIDGETS", 4_850.0, "income"),
            ("acc_checking", 3, "City Power & Light", -72.15, "utilities"),
            ("acc_card", 2, "Airline TP Lisbon", -312.0, "travel"),
            ("acc_savings", 5, "Interest", 21.33, "income"),
        ]
        .into_iter()
        .enumerate()
        .map(
            |(i, (account, days_ago, description, amount, category))| Transaction {
                id: format!("txn_{}", 5001 + i),
                account: account.to_string(),
                date: (today - days_ago) * DAY + 12 * 3600,
                description: description.to_string(),
                amount,
                category: category.to_string(),
            },
        )
        .collect();
        Finance {
            watchlist: vec!["AAPL".to_string(), "NVDA".to_string(), "TSLA".to_string()],
            holdings,
            cash: 2_500.0,
            accounts,
            transactions,
            next_transaction: 5007,
        }
    }

    fn account(&self, id: &str) -> Result<&Account, ToolError> {
        self.accounts
            .get(id)
            .ok_or_else(|| not_found("account", id, "list them with list_accounts"))
    }
}

fn change_percent(s: &Stock) -> f64 {
    round_to((s.last - s.previous_close) / s.previous_close * 100.0, 2)
}

fn quote_json(s: &Stock) -> Value {
    json!({
        "symbol": s.symbol,
        "name": s.name,
        "price": s.last,
        "change": round_to(s.last - s.previous_close, 2),
        "change_percent": change_percent(s),
        "day_low": s.low,
        "day_high": s.high,
        "volume": s.volume,
        "currency": "USD",
    })
}

fn get_stock_quote(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let s = stock(args.str("symbol")?)?;
    ok_text(
        quote_json(s),
        format!("{} {} USD ({:+}%)", s.symbol, s.last, change_percent(s)),
    )
}

fn get_crypto_quote(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let symbol = args.str("symbol")?.trim().to_uppercase();
    let currency = args.str_or("currency", "USD")?;
    let (_, usd, change, cap) = COINS
        .iter()
        .copied()
        .find(|(s, ..)| *s == symbol)
        .ok_or_else(|| not_found("coin", &symbol, "covered coins: BTC, ETH, SOL, DOGE"))?;
    let (_, code, r) = rate("USD", currency)?;
    ok(
        json!({"symbol": symbol, "currency": code, "price": round_to(usd * r, 4), "change_24h_percent": change, "market_cap": round_to(cap * 1e9 * r, 0)}),
    )
}

fn historical_quotes(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let s = stock(args.str("symbol")?)?;
    let days = args.i64_or("days", 5)?.clamp(1, 30);
    let today = DEMO_NOW.div_euclid(DAY);
    // A deterministic walk back from the previous close.
    let mut value = s.previous_close;
    let mut closes = Vec::new();
    for d in 1..=days {
        closes.push(json!({"date": format_date(today - d), "close": round_to(value, 2)}));
        let wiggle = (((d * 37 + s.symbol.len() as i64 * 11) % 9) as f64 - 4.0) / 200.0;
        value /= 1.0 + wiggle;
    }
    ok(json!({"symbol": s.symbol, "closes": closes}))
}

fn get_exchange_rate(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (base, quote, r) = rate(args.str("from")?, args.str("to")?)?;
    ok(json!({"base": base, "quote": quote, "rate": round_to(r, 6), "as_of": format_utc(DEMO_NOW)}))
}

fn convert_currency(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let amount = args.f64("amount")?;
    if amount < 0.0 || !amount.is_finite() {
        return Err(fail("amount must be a non-negative number"));
    }
    let (from, to, r) = rate(args.str("from")?, args.str("to")?)?;
    let converted = round_to(amount * r, 2);
    ok_text(
        json!({"converted": converted, "currency": to, "rate": round_to(r, 6), "from_currency": from}),
        format!("{amount} {from} = {converted} {to}"),
    )
}

fn get_company_profile(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let s = stock(args.str("symbol")?)?;
    ok(
        json!({"symbol": s.symbol, "name": s.name, "sector": s.sector, "employees": s.employees, "headquarters": s.hq, "market_cap_usd": s.market_cap_billion * 1e9}),
    )
}

fn get_market_movers(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let direction = args.str_or("direction", "gainers")?;
    let limit = args.i64_or("limit", 3)?.clamp(1, 10) as usize;
    let mut list: Vec<&Stock> = STOCKS.iter().collect();
    list.sort_by(|a, b| change_percent(b).total_cmp(&change_percent(a)));
    if direction == "losers" {
        list.reverse();
    } else if direction != "gainers" {
        return Err(fail("direction must be gainers or losers"));
    }
    let movers: Vec<Value> = list
        .iter()
        .take(limit)
        .map(|s| json!({"symbol": s.symbol, "change_percent": change_percent(s)}))
        .collect();
    ok(json!({"direction": direction, "movers": movers}))
}

fn list_watchlist(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let f = lock(&world.finance);
    let rows: Vec<Value> = f
        .watchlist
        .iter()
        .filter_map(|s| stock(s).ok())
        .map(quote_json)
        .collect();
    ok(json!({"watchlist": rows, "symbols": f.watchlist.len()}))
}

fn add_to_watchlist(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let s = stock(args.str("symbol")?)?;
    let mut f = lock(&world.finance);
    if f.watchlist.iter().any(|x| x == s.symbol) {
        return Err(fail(format!("{} is already on the watchlist", s.symbol)));
    }
    f.watchlist.push(s.symbol.to_string());
    ok(json!({"added": s.symbol, "watchlist": f.watchlist}))
}

fn remove_from_watchlist(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let symbol = args.str("symbol")?.trim().to_uppercase();
    let mut f = lock(&world.finance);
    let before = f.watchlist.len();
    f.watchlist.retain(|x| *x != symbol);
    if f.watchlist.len() == before {
        return Err(not_found("watchlist symbol", &symbol, "see list_watchlist"));
    }
    ok(json!({"removed": symbol, "watchlist": f.watchlist}))
}

fn get_portfolio(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let f = lock(&world.finance);
    let mut total = f.cash;
    let mut rows = Vec::new();
    for (symbol, (qty, cost)) in &f.holdings {
        let s = stock(symbol)?;
        let value = round_to(qty * s.last, 2);
        total += value;
        rows.push(json!({"symbol": symbol, "quantity": qty, "cost_basis": cost, "market_value": value, "gain": round_to(value - cost, 2)}));
    }
    ok(json!({"holdings": rows, "total_value": round_to(total, 2), "cash": f.cash}))
}

fn place_order(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let s = stock(args.str("symbol")?)?;
    let side = args.str("side")?;
    let qty = args.f64("quantity")?;
    if qty <= 0.0 || !qty.is_finite() || qty > 100_000.0 {
        return Err(fail("quantity must be a positive number up to 100000"));
    }
    let cost = round_to(qty * s.last, 2);
    let mut f = lock(&world.finance);
    match side {
        "buy" => {
            if cost > f.cash {
                return Err(fail(format!(
                    "insufficient cash: the order costs {cost} USD but only {} USD is available",
                    f.cash
                )));
            }
            f.cash = round_to(f.cash - cost, 2);
            let entry = f.holdings.entry(s.symbol.to_string()).or_insert((0.0, 0.0));
            entry.0 += qty;
            entry.1 = round_to(entry.1 + cost, 2);
        }
        "sell" => {
            let (held, basis) = f.holdings.get(s.symbol).copied().unwrap_or((0.0, 0.0));
            if qty > held {
                return Err(fail(format!(
                    "you hold {held} {} shares; cannot sell {qty}",
                    s.symbol
                )));
            }
            let remaining = held - qty;
            if remaining == 0.0 {
                f.holdings.remove(s.symbol);
            } else {
                f.holdings.insert(
                    s.symbol.to_string(),
                    (remaining, round_to(basis * remaining / held, 2)),
                );
            }
            f.cash = round_to(f.cash + cost, 2);
        }
        other => return Err(fail(format!("side must be buy or sell, got {other:?}"))),
    }
    let order_id = next_id("ord_", &mut f.next_transaction);
    ok(
        json!({"order_id": order_id, "status": "filled", "fill_price": s.last, "total": cost, "cash_after": f.cash, "filled_at": format_utc(DEMO_NOW)}),
    )
}

fn list_accounts(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let f = lock(&world.finance);
    let rows: Vec<Value> = f.accounts.iter().map(|(id, a)| json!({"id": id, "name": a.name, "kind": a.kind, "balance": a.balance, "currency": "USD"})).collect();
    ok(json!({ "accounts": rows }))
}

fn get_account_balance(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("account_id")?;
    let f = lock(&world.finance);
    let a = f.account(id)?;
    ok(
        json!({"account_id": id, "name": a.name, "balance": a.balance, "currency": "USD", "as_of": format_utc(DEMO_NOW)}),
    )
}

fn list_transactions(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("account_id")?;
    let limit = args.i64_or("limit", 20)?.clamp(1, 200) as usize;
    let f = lock(&world.finance);
    f.account(id)?;
    let mut list: Vec<&Transaction> = f.transactions.iter().filter(|t| t.account == id).collect();
    list.sort_by(|a, b| b.date.cmp(&a.date).then(b.id.cmp(&a.id)));
    let rows: Vec<Value> = list
        .iter()
        .take(limit)
        .map(|t| json!({"id": t.id, "date": format_date(t.date.div_euclid(DAY)), "description": t.description, "amount": t.amount, "category": t.category}))
        .collect();
    ok(json!({ "transactions": rows }))
}

fn transfer_funds(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (from, to) = (args.str("from_account")?, args.str("to_account")?);
    let amount = round_to(args.f64("amount")?, 2);
    if amount <= 0.0 || !amount.is_finite() {
        return Err(fail("amount must be positive"));
    }
    if from == to {
        return Err(fail("source and destination must differ"));
    }
    let memo = args.str_or("memo", "Transfer")?.to_string();
    let mut f = lock(&world.finance);
    let source = f.account(from)?;
    if source.kind == "credit" {
        return Err(fail("transfers cannot be made from a credit card account"));
    }
    if source.balance < amount {
        return Err(fail(format!(
            "insufficient funds: {from} has {} USD",
            source.balance
        )));
    }
    f.account(to)?;
    for (id, delta) in [(from, -amount), (to, amount)] {
        if let Some(a) = f.accounts.get_mut(id) {
            a.balance = round_to(a.balance + delta, 2);
        }
        let txn = next_id("txn_", &mut f.next_transaction);
        f.transactions.push(Transaction {
            id: txn,
            account: id.to_string(),
            date: DEMO_NOW,
            description: memo.clone(),
            amount: delta,
            category: "transfer".to_string(),
        });
    }
    let balances: Vec<Value> = [from, to]
        .iter()
        .filter_map(|id| {
            f.accounts
                .get(*id)
                .map(|a| json!({"account_id": id, "balance": a.balance}))
        })
        .collect();
    ok(
        json!({"transfer_id": format!("trf_{}", f.next_transaction), "status": "completed", "amount": amount, "currency": "USD", "balances": balances}),
    )
}

fn calculate_loan_payment(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let principal = args.f64("principal")?;
    let annual = args.f64("annual_rate_percent")?;
    let years = args.i64("years")?;
    if principal <= 0.0 || !(0.0..=100.0).contains(&annual) || !(1..=50).contains(&years) {
        return Err(fail(
            "principal must be positive, the rate 0-100% and the term 1-50 years",
        ));
    }
    let n = (years * 12) as f64;
    let r = annual / 100.0 / 12.0;
    let payment = if r == 0.0 {
        principal / n
    } else {
        principal * r / (1.0 - (1.0 + r).powf(-n))
    };
    let total = payment * n;
    ok(
        json!({"monthly_payment": round_to(payment, 2), "total_paid": round_to(total, 2), "total_interest": round_to(total - principal, 2), "payments": years * 12}),
    )
}
