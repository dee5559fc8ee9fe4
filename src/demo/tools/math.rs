//! `math`: calculators with real arithmetic — the expression evaluator, algebra, statistics,
//! number theory, linear algebra and geometry. Stateless. Every result is checked finite so a
//! JSON `number` is always a number (serde would turn NaN or infinity into `null`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::expr;
use super::super::kit::{Args, Reply, fail, ok, ok_text, round_to};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "evaluate" => evaluate,
        "solve_quadratic" => solve_quadratic,
        "describe_statistics" => describe_statistics,
        "gcd_lcm" => gcd_lcm,
        "prime_factors" => prime_factors,
        "is_prime" => is_prime,
        "fibonacci" => fibonacci,
        "factorial" => factorial,
        "percentage_of" => percentage_of,
        "percent_change" => percent_change,
        "round_number" => round_number,
        "convert_base" => convert_base,
        "matrix_multiply" => matrix_multiply,
        "matrix_determinant" => matrix_determinant,
        "dot_product" => dot_product,
        "linear_regression" => linear_regression,
        "compound_interest" => compound_interest,
        "random_number" => random_number,
        "roman_numerals" => roman_numerals,
        "combinations" => combinations,
        "solve_linear_system" => solve_linear_system,
        "polynomial_derivative" => polynomial_derivative,
        "polynomial_integral" => polynomial_integral,
        "distance_between_points" => distance_between_points,
        "geometry_area" => geometry_area,
        _ => return None,
    })
}

fn finite(value: f64) -> Result<f64, ToolError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(fail(
            "the result is too large (or undefined) to represent as a number",
        ))
    }
}

fn all_finite(values: &[f64]) -> Result<(), ToolError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(fail("inputs must be finite numbers"))
    }
}

fn evaluate(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let expression = args.str("expression")?;
    let mut vars = BTreeMap::new();
    if let Some(value) = args.value("variables") {
        let map = value
            .as_object()
            .ok_or_else(|| fail("variables must be an object of numbers"))?;
        for (name, v) in map {
            let n = v
                .as_f64()
                .ok_or_else(|| fail(format!("variable {name:?} must be a number")))?;
            vars.insert(name.clone(), n);
        }
    }
    let value = expr::evaluate(expression, &vars)
        .map_err(|e| fail(format!("cannot evaluate {expression:?}: {e}")))?;
    let shown = if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    };
    ok_text(
        json!({"expression": expression, "value": value}),
        format!("{expression} = {shown}"),
    )
}

fn solve_quadratic(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (a, b, c) = (args.f64("a")?, args.f64("b")?, args.f64("c")?);
    all_finite(&[a, b, c])?;
    if a == 0.0 {
        if b == 0.0 {
            return ok(json!({"discriminant": 0.0, "kind": "none", "roots": []}));
        }
        return ok(
            json!({"discriminant": 0.0, "kind": "linear", "roots": [{"re": finite(-c / b)?, "im": 0.0}]}),
        );
    }
    let d = finite(b * b - 4.0 * a * c)?;
    let (kind, roots) = if d > 0.0 {
        let s = d.sqrt();
        let (r1, r2) = ((-b + s) / (2.0 * a), (-b - s) / (2.0 * a));
        let (hi, lo) = if r1 >= r2 { (r1, r2) } else { (r2, r1) };
        (
            "two_real",
            vec![
                json!({"re": finite(hi)?, "im": 0.0}),
                json!({"re": finite(lo)?, "im": 0.0}),
            ],
        )
    } else if d == 0.0 {
        (
            "one_real",
            vec![json!({"re": finite(-b / (2.0 * a))?, "im": 0.0})],
        )
    } else {
        let (re, im) = (-b / (2.0 * a), (-d).sqrt() / (2.0 * a).abs());
        (
            "complex",
            vec![
                json!({"re": finite(re)?, "im": finite(im)?}),
                json!({"re": finite(re)?, "im": finite(-im)?}),
            ],
        )
    };
    ok(json!({"discriminant": d, "kind": kind, "roots": roots}))
}

fn describe_statistics(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut values = args.num_list("values")?;
    if values.is_empty() {
        return Err(fail("values must contain at least one number"));
    }
    all_finite(&values)?;
    let sample = args.bool_or("sample", true)?;
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let sum: f64 = values.iter().sum();
    let mean = sum / n as f64;
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    let denominator = if sample && n > 1 { n - 1 } else { n } as f64;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / denominator;
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for v in &values {
        match counts.last_mut() {
            Some((last, count)) if *last == *v => *count += 1,
            _ => counts.push((*v, 1)),
        }
    }
    let top = counts.iter().map(|(_, c)| *c).max().unwrap_or(0);
    let mode: Vec<f64> = if top > 1 {
        counts
            .iter()
            .filter(|(_, c)| *c == top)
            .map(|(v, _)| *v)
            .collect()
    } else {
        Vec::new()
    };
    ok(json!({
        "count": n,
        "mean": finite(mean)?,
        "median": median,
        "mode": mode,
        "std_dev": finite(variance.sqrt())?,
        "min": values[0],
        "max": values[n - 1],
        "sum": finite(sum)?,
    }))
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn gcd_lcm(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let numbers = args.num_list("numbers")?;
    if numbers.len() < 2 {
        return Err(fail("give at least two integers"));
    }
    let mut ints = Vec::new();
    for n in numbers {
        if n.fract() != 0.0 || n.abs() > 1e15 {
            return Err(fail(format!("{n} is not an integer in range")));
        }
        ints.push(n.abs() as u128);
    }
    let g = ints.iter().copied().fold(0, gcd);
    let mut l: u128 = 1;
    for &n in &ints {
        if n == 0 {
            l = 0;
            break;
        }
        l = l / gcd(l, n) * n;
        if l > i64::MAX as u128 {
            return Err(fail("the least common multiple is too large"));
        }
    }
    ok(json!({"gcd": g as u64, "lcm": l as u64}))
}

fn factorize(mut n: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut p = 2u64;
    while p * p <= n {
        let mut power = 0;
        while n.is_multiple_of(p) {
            n /= p;
            power += 1;
        }
        if power > 0 {
            out.push((p, power));
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if n > 1 {
        out.push((n, 1));
    }
    out
}

fn prime(n: u64) -> bool {
    n >= 2 && factorize(n).first() == Some(&(n, 1))
}

fn bounded(args: &Args<'_>, key: &str, min: i64, max: i64) -> Result<i64, ToolError> {
    let n = args.i64(key)?;
    if n < min || n > max {
        return Err(fail(format!(
            "{key} must be between {min} and {max}, got {n}"
        )));
    }
    Ok(n)
}

fn prime_factors(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = bounded(args, "n", 2, 1_000_000_000_000)? as u64;
    let factors: Vec<Value> = factorize(n)
        .into_iter()
        .map(|(p, k)| json!({"prime": p, "power": k}))
        .collect();
    ok(json!({"n": n, "factors": factors}))
}

fn is_prime(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = bounded(args, "n", 0, 1_000_000_000_000)? as u64;
    let previous = (2..n).rev().find(|k| prime(*k));
    let next = (n + 1..).find(|k| prime(*k));
    let smallest = if n >= 2 {
        factorize(n).first().map(|(p, _)| *p)
    } else {
        None
    };
    ok(
        json!({"n": n, "is_prime": prime(n), "previous_prime": previous, "next_prime": next, "smallest_factor": smallest}),
    )
}

fn fibonacci(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = bounded(args, "n", 1, 90)? as usize;
    let mut seq: Vec<u64> = Vec::with_capacity(n);
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        seq.push(a);
        let next = a.saturating_add(b);
        a = b;
        b = next;
    }
    let last = seq.last().copied().unwrap_or(0);
    ok(json!({"count": n, "sequence": seq, "last": last}))
}

fn factorial(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = bounded(args, "n", 0, 20)? as u64;
    let value: u64 = (1..=n).product();
    ok_text(
        json!({"n": n, "factorial": value}),
        format!("{n}! = {value}"),
    )
}

fn percentage_of(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (p, v) = (args.f64("percent")?, args.f64("value")?);
    let result = finite(p / 100.0 * v)?;
    ok_text(
        json!({"result": result, "fraction": finite(p / 100.0)?}),
        format!("{p}% of {v} is {result}"),
    )
}

fn percent_change(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (from, to) = (args.f64("from")?, args.f64("to")?);
    if from == 0.0 {
        return Err(fail("percent change from 0 is undefined"));
    }
    let change = finite(to - from)?;
    let percent = finite(round_to(change / from.abs() * 100.0, 6))?;
    let direction = if change > 0.0 {
        "increase"
    } else if change < 0.0 {
        "decrease"
    } else {
        "unchanged"
    };
    ok(json!({"change": change, "percent": percent, "direction": direction}))
}

fn round_number(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    let decimals = args.i64_or("decimals", 2)?.clamp(0, 12) as i32;
    let mode = args.str_or("mode", "half_up")?;
    let factor = 10f64.powi(decimals);
    let scaled = value * factor;
    let rounded = match mode {
        "half_up" => scaled.round(),
        "floor" => scaled.floor(),
        "ceil" => scaled.ceil(),
        other => {
            return Err(fail(format!(
                "mode must be half_up, floor or ceil, got {other:?}"
            )));
        }
    } / factor;
    ok(
        json!({"rounded": finite(rounded)?, "decimals": decimals, "mode": mode, "difference": finite(rounded - value)?}),
    )
}

fn convert_base(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let input = args.str("number")?.trim().to_lowercase();
    let from = bounded(args, "from_base", 2, 36)? as u32;
    let to = bounded(args, "to_base", 2, 36)? as u32;
    let (negative, digits) = match input.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, input.as_str()),
    };
    if digits.is_empty() {
        return Err(fail("number must have at least one digit"));
    }
    let mut value: i64 = 0;
    for c in digits.chars() {
        let d = c
            .to_digit(from)
            .ok_or_else(|| fail(format!("{c:?} is not a digit in base {from}")))?;
        value = value
            .checked_mul(i64::from(from))
            .and_then(|v| v.checked_add(i64::from(d)))
            .ok_or_else(|| fail("number is too large (max 2^63 - 1)"))?;
    }
    let mut out = String::new();
    let mut rest = value;
    loop {
        let d = (rest % i64::from(to)) as u32;
        out.insert(0, std::char::from_digit(d, to).unwrap_or('?'));
        rest /= i64::from(to);
        if rest == 0 {
            break;
        }
    }
    if negative {
        out.insert(0, '-');
        value = -value;
    }
    ok(json!({"input": input, "decimal": value, "output": out}))
}

fn matrix_multiply(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (a, b) = (args.matrix("a")?, args.matrix("b")?);
    let (n, m) = (a.len(), a.first().map_or(0, Vec::len));
    let p = b.first().map_or(0, Vec::len);
    if n == 0
        || m == 0
        || a.iter().any(|r| r.len() != m)
        || b.iter().any(|r| r.len() != p)
        || p == 0
    {
        return Err(fail("matrices must be non-empty and rectangular"));
    }
    if n > 100 || m > 100 || p > 100 {
        return Err(fail("matrices are limited to 100x100"));
    }
    if b.len() != m {
        return Err(fail(format!(
            "cannot multiply a {n}x{m} matrix by a {}x{p} matrix: inner sizes differ",
            b.len()
        )));
    }
    let mut product = vec![vec![0.0; p]; n];
    for i in 0..n {
        for j in 0..p {
            product[i][j] = finite((0..m).map(|k| a[i][k] * b[k][j]).sum())?;
        }
    }
    ok(json!({"rows": n, "cols": p, "product": product}))
}

fn square(matrix: &[Vec<f64>]) -> Result<usize, ToolError> {
    let n = matrix.len();
    if n == 0 || n > 20 || matrix.iter().any(|r| r.len() != n) {
        return Err(fail("the matrix must be square, between 1x1 and 20x20"));
    }
    all_finite(&matrix.concat())?;
    Ok(n)
}

fn determinant(mut m: Vec<Vec<f64>>) -> f64 {
    let n = m.len();
    let mut det = 1.0;
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))
            .unwrap_or(col);
        if m[pivot][col].abs() < 1e-12 {
            return 0.0;
        }
        if pivot != col {
            m.swap(pivot, col);
            det = -det;
        }
        det *= m[col][col];
        let pivot_row = m[col].clone();
        for row in m.iter_mut().skip(col + 1) {
            let factor = row[col] / pivot_row[col];
            for (cell, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                *cell -= factor * p;
            }
        }
    }
    det
}

fn matrix_determinant(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let m = args.matrix("matrix")?;
    let n = square(&m)?;
    let det = finite(round_to(determinant(m), 10))?;
    ok(json!({"size": n, "determinant": det, "invertible": det != 0.0}))
}

fn dot_product(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (a, b) = (args.num_list("a")?, args.num_list("b")?);
    if a.len() != b.len() || a.is_empty() {
        return Err(fail(format!(
            "vectors must have the same non-zero length (got {} and {})",
            a.len(),
            b.len()
        )));
    }
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let (na, nb) = (
        a.iter().map(|x| x * x).sum::<f64>().sqrt(),
        b.iter().map(|x| x * x).sum::<f64>().sqrt(),
    );
    let angle = if na > 0.0 && nb > 0.0 {
        Some(round_to(
            (dot / (na * nb)).clamp(-1.0, 1.0).acos().to_degrees(),
            6,
        ))
    } else {
        None
    };
    ok(
        json!({"dot": finite(dot)?, "norm_a": finite(na)?, "norm_b": finite(nb)?, "angle_degrees": angle}),
    )
}

fn linear_regression(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (x, y) = (args.num_list("x")?, args.num_list("y")?);
    if x.len() != y.len() || x.len() < 2 {
        return Err(fail("x and y need the same length, at least 2 points"));
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
    if sxx == 0.0 {
        return Err(fail("all x values are equal; the slope is undefined"));
    }
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_tot: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    let ss_res: f64 = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (b - (slope * a + intercept)).powi(2))
        .sum();
    let r2 = if ss_tot == 0.0 {
        1.0
    } else {
        1.0 - ss_res / ss_tot
    };
    ok(
        json!({"slope": finite(round_to(slope, 10))?, "intercept": finite(round_to(intercept, 10))?, "r_squared": finite(round_to(r2, 10))?, "points": x.len()}),
    )
}

fn compound_interest(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let principal = args.f64("principal")?;
    let rate = args.f64("annual_rate_percent")? / 100.0;
    let years = args.f64("years")?;
    let periods = args.i64_or("compounds_per_year", 12)?.clamp(1, 365) as f64;
    if principal < 0.0 || rate <= -1.0 || years < 0.0 {
        return Err(fail(
            "principal and years must be non-negative and the rate above -100%",
        ));
    }
    let fv = finite(principal * (1.0 + rate / periods).powf(periods * years))?;
    let effective = finite(((1.0 + rate / periods).powf(periods) - 1.0) * 100.0)?;
    ok(
        json!({"future_value": round_to(fv, 2), "interest_earned": round_to(fv - principal, 2), "effective_annual_rate_percent": round_to(effective, 4)}),
    )
}

fn random_number(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (min, max) = (args.i64("min")?, args.i64("max")?);
    if min > max {
        return Err(fail(format!("min ({min}) must not exceed max ({max})")));
    }
    let count = args.i64_or("count", 1)?.clamp(1, 1000) as usize;
    let seed = args.i64_or("seed", 42)?;
    // SplitMix64: small, well distributed, reproducible.
    let mut state = seed as u64;
    let span = (i128::from(max) - i128::from(min) + 1) as u128;
    let values: Vec<i64> = (0..count)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (i128::from(min) + (u128::from(z) % span) as i128) as i64
        })
        .collect();
    ok(json!({"values": values, "seed": seed, "range": [min, max]}))
}

const ROMAN: [(u32, &str); 13] = [
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
];

fn to_roman(mut n: u32) -> String {
    let mut out = String::new();
    for (value, symbol) in ROMAN {
        while n >= value {
            out.push_str(symbol);
            n -= value;
        }
    }
    out
}

fn roman_numerals(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let input = args.str("value")?.trim();
    if let Ok(n) = input.parse::<i64>() {
        if !(1..=3999).contains(&n) {
            return Err(fail("Roman numerals cover 1 to 3999"));
        }
        let roman = to_roman(n as u32);
        return ok(json!({"input": input, "integer": n, "roman": roman, "direction": "to_roman"}));
    }
    let upper = input.to_uppercase();
    let mut total = 0u32;
    let mut rest = upper.as_str();
    for (value, symbol) in ROMAN {
        while let Some(r) = rest.strip_prefix(symbol) {
            total += value;
            rest = r;
        }
    }
    if !rest.is_empty() || total == 0 || to_roman(total) != upper {
        return Err(fail(format!(
            "{input:?} is neither an integer nor a valid Roman numeral"
        )));
    }
    ok(json!({"input": input, "integer": total, "roman": upper, "direction": "from_roman"}))
}

fn combinations(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = bounded(args, "n", 0, 1000)? as u64;
    let k = bounded(args, "k", 0, 1000)? as u64;
    let (c, p) = if k > n {
        (0.0, 0.0)
    } else {
        let mut c = 1.0f64;
        let mut p = 1.0f64;
        for i in 0..k {
            p *= (n - i) as f64;
        }
        for i in 1..=k.min(n - k) {
            c = c * (n - k.min(n - k) + i) as f64 / i as f64;
        }
        (c.round(), p)
    };
    ok(json!({"n": n, "k": k, "combinations": finite(c)?, "permutations": finite(p)?}))
}

fn solve_linear_system(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut a = args.matrix("coefficients")?;
    let b = args.num_list("constants")?;
    let n = square(&a)?;
    if b.len() != n {
        return Err(fail(format!(
            "constants must have {n} entries, one per equation"
        )));
    }
    for (row, value) in a.iter_mut().zip(&b) {
        row.push(*value);
    }
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .unwrap_or(col);
        if a[pivot][col].abs() < 1e-12 {
            return Err(fail("the system is singular: no unique solution"));
        }
        a.swap(pivot, col);
        let pivot_row = a[col].clone();
        for (index, row) in a.iter_mut().enumerate() {
            if index != col {
                let factor = row[col] / pivot_row[col];
                for (cell, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *cell -= factor * p;
                }
            }
        }
    }
    let solution: Vec<f64> = (0..n).map(|i| round_to(a[i][n] / a[i][i], 10)).collect();
    all_finite(&solution)?;
    ok(json!({"solution": solution, "equations": n}))
}

fn poly_text(coefficients: &[f64]) -> String {
    let degree = coefficients.len().saturating_sub(1);
    let terms: Vec<String> = coefficients
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0.0)
        .map(|(i, c)| match degree - i {
            0 => format!("{c}"),
            1 => format!("{c}x"),
            d => format!("{c}x^{d}"),
        })
        .collect();
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ").replace("+ -", "- ")
    }
}

fn polynomial_derivative(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = args.num_list("coefficients")?;
    all_finite(&c)?;
    if c.is_empty() {
        return Err(fail("give at least one coefficient"));
    }
    let degree = c.len() - 1;
    let derived: Vec<f64> = if degree == 0 {
        vec![0.0]
    } else {
        c[..degree]
            .iter()
            .enumerate()
            .map(|(i, v)| v * (degree - i) as f64)
            .collect()
    };
    ok(
        json!({"polynomial": poly_text(&c), "derivative": poly_text(&derived), "coefficients": derived}),
    )
}

fn polynomial_integral(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = args.num_list("coefficients")?;
    let (lo, hi) = (args.f64("lower")?, args.f64("upper")?);
    all_finite(&c)?;
    let degree = c.len().saturating_sub(1);
    let anti: Vec<f64> = c
        .iter()
        .enumerate()
        .map(|(i, v)| v / (degree - i + 1) as f64)
        .chain([0.0])
        .collect();
    let eval = |x: f64| anti.iter().fold(0.0, |acc, k| acc * x + k);
    let value = finite(round_to(eval(hi) - eval(lo), 10))?;
    ok(
        json!({"value": value, "antiderivative": format!("{} + C", poly_text(&anti)), "bounds": [lo, hi]}),
    )
}

fn distance_between_points(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (a, b) = (args.num_list("a")?, args.num_list("b")?);
    if a.len() != b.len() || a.is_empty() {
        return Err(fail("points must have the same number of coordinates"));
    }
    let d = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let manhattan: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum();
    ok(json!({"distance": finite(d)?, "manhattan": finite(manhattan)?, "dimensions": a.len()}))
}

fn geometry_area(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let shape = args.str("shape")?;
    let d = args.num_list("dimensions")?;
    if d.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return Err(fail("dimensions must be positive numbers"));
    }
    let need = |count: usize, what: &str| -> Result<(), ToolError> {
        if d.len() == count {
            Ok(())
        } else {
            Err(fail(format!("{shape} needs {what}")))
        }
    };
    let (area, perimeter) = match shape {
        "circle" => {
            need(1, "[radius]")?;
            (
                std::f64::consts::PI * d[0] * d[0],
                2.0 * std::f64::consts::PI * d[0],
            )
        }
        "rectangle" => {
            need(2, "[width, height]")?;
            (d[0] * d[1], 2.0 * (d[0] + d[1]))
        }
        "triangle" => {
            need(3, "[a, b, c] side lengths")?;
            let s = (d[0] + d[1] + d[2]) / 2.0;
            let q = s * (s - d[0]) * (s - d[1]) * (s - d[2]);
            if q <= 0.0 {
                return Err(fail("those side lengths do not form a triangle"));
            }
            (q.sqrt(), 2.0 * s)
        }
        "polygon" => {
            need(2, "[number of sides, side length]")?;
            if d[0] < 3.0 || d[0].fract() != 0.0 {
                return Err(fail(
                    "a regular polygon needs an integer number of sides >= 3",
                ));
            }
            let (n, s) = (d[0], d[1]);
            (n * s * s / (4.0 * (std::f64::consts::PI / n).tan()), n * s)
        }
        other => {
            return Err(fail(format!(
                "unknown shape {other:?}; use circle, rectangle, triangle or polygon"
            )));
        }
    };
    ok(
        json!({"shape": shape, "area": finite(round_to(area, 6))?, "perimeter": finite(round_to(perimeter, 6))?}),
    )
}
