//! A small, safe arithmetic evaluator for `math:evaluate`: a recursive-descent parser over
//! `+ - * / % ^`, unary signs, parentheses, a fixed set of functions and constants, and
//! caller-supplied variables. No `eval`, no host access, no allocation beyond the token list.
//!
//! Grammar (`^` is right-associative and binds tighter than unary minus, so `-2^2 = -4`):
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/' | '%') unary)*
//! unary   := ('+' | '-') unary | power
//! power   := primary ('^' unary)?
//! primary := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//! ```
//!
//! Bounds: input up to [`MAX_LEN`] chars; nesting (parentheses, signs, powers, calls) up to
//! [`MAX_DEPTH`] levels — deeper input is rejected with an error, never a stack overflow; a
//! result that is not finite (division by zero, overflow, `sqrt(-1)`) is an error.

use std::collections::BTreeMap;

/// Longest accepted expression, in chars.
pub(crate) const MAX_LEN: usize = 1000;
/// Deepest accepted nesting.
pub(crate) const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(f64),
    Name(String),
    Op(char),
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // Scientific notation: 1e3, 2.5E-4.
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let literal: String = chars[start..i].iter().collect();
            let value = literal
                .parse::<f64>()
                .map_err(|_| format!("invalid number {literal:?}"))?;
            tokens.push(Token::Num(value));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Name(chars[start..i].iter().collect()));
        } else if "+-*/%^(),".contains(c) {
            tokens.push(Token::Op(c));
            i += 1;
        } else if c == '×' || c == '·' {
            tokens.push(Token::Op('*'));
            i += 1;
        } else if c == '÷' {
            tokens.push(Token::Op('/'));
            i += 1;
        } else {
            return Err(format!("unexpected character {c:?} at position {}", i + 1));
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    vars: &'a BTreeMap<String, f64>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, op: char) -> bool {
        if self.peek() == Some(&Token::Op(op)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(format!(
                "expression is nested too deeply (more than {MAX_DEPTH} levels)"
            ))
        } else {
            Ok(())
        }
    }

    fn expr(&mut self) -> Result<f64, String> {
        let mut value = self.term()?;
        loop {
            if self.eat('+') {
                value += self.term()?;
            } else if self.eat('-') {
                value -= self.term()?;
            } else {
                break;
            }
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut value = self.unary()?;
        loop {
            if self.eat('*') {
                value *= self.unary()?;
            } else if self.eat('/') {
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err("division by zero".to_string());
                }
                value /= divisor;
            } else if self.eat('%') {
                let divisor = self.unary()?;
                if divisor == 0.0 {
                    return Err("modulo by zero".to_string());
                }
                value %= divisor;
            } else {
                break;
            }
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<f64, String> {
        let negate = if self.eat('-') {
            true
        } else if self.eat('+') {
            false
        } else {
            return self.power();
        };
        self.enter()?;
        let value = self.unary()?;
        self.depth -= 1;
        Ok(if negate { -value } else { value })
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.primary()?;
        if self.eat('^') {
            self.enter()?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<f64, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Token::Op('(')) => {
                self.pos += 1;
                self.enter()?;
                let value = self.expr()?;
                if !self.eat(')') {
                    return Err("missing closing parenthesis".to_string());
                }
                self.depth -= 1;
                Ok(value)
            }
            Some(Token::Name(name)) => {
                self.pos += 1;
                if self.eat('(') {
                    self.enter()?;
                    let mut args = vec![self.expr()?];
                    while self.eat(',') {
                        args.push(self.expr()?);
                    }
                    if !self.eat(')') {
                        return Err(format!(
                            "missing closing parenthesis after arguments of {name}"
                        ));
                    }
                    self.depth -= 1;
                    call(&name, &args)
                } else {
                    constant(&name, self.vars)
                }
            }
            Some(Token::Op(op)) => Err(format!("unexpected {op:?}")),
            None => Err("unexpected end of expression".to_string()),
        }
    }
}

fn constant(name: &str, vars: &BTreeMap<String, f64>) -> Result<f64, String> {
    if let Some(value) = vars.get(name) {
        return Ok(*value);
    }
    match name {
        "pi" | "PI" | "π" => Ok(std::f64::consts::PI),
        "e" | "E" => Ok(std::f64::consts::E),
        "tau" => Ok(std::f64::consts::TAU),
        _ => Err(format!(
            "unknown name {name:?}; pass it in `variables` or use pi, e, tau"
        )),
    }
}

fn call(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = || match args {
        [x] => Ok(*x),
        _ => Err(format!("{name} takes exactly one argument")),
    };
    let two = || match args {
        [x, y] => Ok((*x, *y)),
        _ => Err(format!("{name} takes exactly two arguments")),
    };
    Ok(match name {
        "sqrt" => one()?.sqrt(),
        "cbrt" => one()?.cbrt(),
        "abs" => one()?.abs(),
        "sin" => one()?.sin(),
        "cos" => one()?.cos(),
        "tan" => one()?.tan(),
        "asin" => one()?.asin(),
        "acos" => one()?.acos(),
        "atan" => one()?.atan(),
        "ln" => one()?.ln(),
        "log" if args.len() == 2 => {
            let (x, base) = two()?;
            x.log(base)
        }
        "log" | "log10" => one()?.log10(),
        "log2" => one()?.log2(),
        "exp" => one()?.exp(),
        "floor" => one()?.floor(),
        "ceil" => one()?.ceil(),
        "round" => one()?.round(),
        "pow" => {
            let (x, y) = two()?;
            x.powf(y)
        }
        "min" => args.iter().copied().fold(f64::INFINITY, f64::min),
        "max" => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        _ => {
            return Err(format!(
                "unknown function {name:?}; available: sqrt, cbrt, abs, sin, cos, tan, asin, acos, atan, ln, log, log2, exp, floor, ceil, round, pow, min, max"
            ));
        }
    })
}

/// Evaluates `text` with `vars`; errors say what is wrong and where.
pub(crate) fn evaluate(text: &str, vars: &BTreeMap<String, f64>) -> Result<f64, String> {
    if text.chars().count() > MAX_LEN {
        return Err(format!("expression is longer than {MAX_LEN} characters"));
    }
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err("empty expression".to_string());
    }
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
        vars,
    };
    let value = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(format!("unexpected {token:?} after a complete expression"));
    }
    if !value.is_finite() {
        return Err(
            "the result is not a finite number (overflow or an undefined operation)".to_string(),
        );
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> Result<f64, String> {
        evaluate(text, &BTreeMap::new())
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(eval("2*(3+4)"), Ok(14.0));
        assert_eq!(eval("2+3*4"), Ok(14.0));
        assert_eq!(eval("2^3^2"), Ok(512.0));
        assert_eq!(eval("-2^2"), Ok(-4.0));
        assert_eq!(eval("10 % 4 - 1"), Ok(1.0));
        assert_eq!(eval("max(1, 5, 3) + min(2, 0)"), Ok(5.0));
        assert_eq!(eval("1.5e2"), Ok(150.0));
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        assert!(eval("1/0").is_err());
        assert!(eval("(1+2").is_err());
        assert!(eval("1 2").is_err());
        assert!(eval("foo(1)").is_err());
        assert!(eval("sqrt(-1)").is_err());
        assert!(eval(&format!("{}1{}", "(".repeat(500), ")".repeat(500))).is_err());
        assert!(eval(&"-".repeat(900)).is_err());
    }
}
