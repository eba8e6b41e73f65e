//! The Python literals of `.npy` headers, parsed in one pass as `ast.literal_eval` reads them:
//! dicts, lists, tuples and sets, strings, integers, floats, `True`, `False` and `None`, with
//! unary signs on numbers. Time is linear in the header's length, and nesting deeper than Python's
//! own parser takes (200 brackets) is refused, so that a file from anyone cannot hang the tool.

use std::fmt;

/// Python's parser refuses more nested brackets than this ("too many nested parentheses").
pub const MAX_DEPTH: usize = 200;

/// A parsed literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Dict(Vec<(Value, Value)>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Set(Vec<Value>),
    String(String),
    /// An integer of any size, as its decimal digits with an optional leading `-`.
    Integer(String),
    /// A float or complex number, as written.
    Number(String),
    Boolean(bool),
    None,
}

impl Value {
    /// The integer, when it is one that fits in `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Integer(t) => t.parse().ok(),
            _ => None,
        }
    }
}

fn join(f: &mut fmt::Formatter<'_>, items: &[Value]) -> fmt::Result {
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{v}")?;
    }
    Ok(())
}

/// Python's `repr`, near enough for messages.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Dict(e) => {
                f.write_str("{")?;
                for (i, (k, v)) in e.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
            Value::List(v) => {
                f.write_str("[")?;
                join(f, v)?;
                f.write_str("]")
            }
            Value::Tuple(v) => {
                f.write_str("(")?;
                join(f, v)?;
                f.write_str(if v.len() == 1 { ",)" } else { ")" })
            }
            Value::Set(v) if v.is_empty() => f.write_str("set()"),
            Value::Set(v) => {
                f.write_str("{")?;
                join(f, v)?;
                f.write_str("}")
            }
            Value::String(s) => write!(f, "'{}'", s.escape_default()),
            Value::Integer(t) | Value::Number(t) => f.write_str(t),
            Value::Boolean(true) => f.write_str("True"),
            Value::Boolean(false) => f.write_str("False"),
            Value::None => f.write_str("None"),
        }
    }
}

/// Why a text is not a literal, and the character offset where that shows.
#[derive(Debug, PartialEq)]
pub struct ParseError {
    pub at: usize,
    pub what: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.what, self.at)
    }
}

/// Parses `text`, a whole Python literal with optional surrounding white space.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut p = Parser {
        s: text.chars().collect(),
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.space();
    if p.i < p.s.len() {
        return Err(p.fail("text after the literal"));
    }
    Ok(v)
}

struct Parser {
    s: Vec<char>,
    i: usize,
    depth: usize,
}

impl Parser {
    fn fail(&self, what: &str) -> ParseError {
        ParseError {
            at: self.i,
            what: what.to_owned(),
        }
    }

    fn space(&mut self) {
        while self
            .s
            .get(self.i)
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c' | '\\'))
        {
            // A backslash before a newline continues the line, as in Python.
            if self.s[self.i] == '\\' {
                if self.s.get(self.i + 1) != Some(&'\n') {
                    return;
                }
                self.i += 1;
            }
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.space();
        self.s.get(self.i).copied()
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.fail("the text ends where a value should be")),
            Some(c @ ('(' | '[' | '{')) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(self.fail(&format!(
                        "more than {MAX_DEPTH} nested brackets, more than Python parses"
                    )));
                }
                self.i += 1;
                let v = match c {
                    '(' => self.tuple(),
                    '[' => self.items(']').map(Value::List),
                    _ => self.dict_or_set(),
                };
                self.depth -= 1;
                v
            }
            Some('\'' | '"') => self.string(),
            Some(c) if c.is_ascii_digit() || matches!(c, '.' | '+' | '-') => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                {
                    self.i += 1;
                }
                let word: String = self.s[start..self.i].iter().collect();
                match word.as_str() {
                    "True" => Ok(Value::Boolean(true)),
                    "False" => Ok(Value::Boolean(false)),
                    "None" => Ok(Value::None),
                    "u" | "U" if matches!(self.s.get(self.i), Some('\'' | '"')) => self.string(),
                    _ => {
                        self.i = start;
                        Err(self.fail(&format!("'{word}' is not a literal")))
                    }
                }
            }
            Some(c) => Err(self.fail(&format!("unexpected '{c}'"))),
        }
    }

    /// Comma-separated values up to `close`, a trailing comma allowed; the opening bracket is
    /// consumed. Also returns whether a comma was seen.
    fn items_commas(&mut self, close: char) -> Result<(Vec<Value>, bool), ParseError> {
        let mut v = Vec::new();
        let mut comma = false;
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok((v, comma));
            }
            v.push(self.value()?);
            match self.peek() {
                Some(',') => {
                    self.i += 1;
                    comma = true;
                }
                Some(c) if c == close => {}
                _ => return Err(self.fail(&format!("expected ',' or '{close}'"))),
            }
        }
    }

    fn items(&mut self, close: char) -> Result<Vec<Value>, ParseError> {
        self.items_commas(close).map(|(v, _)| v)
    }

    fn tuple(&mut self) -> Result<Value, ParseError> {
        let (mut v, comma) = self.items_commas(')')?;
        // `(x)` is x; `()` and `(x,)` are tuples.
        Ok(if v.len() == 1 && !comma {
            v.pop().unwrap_or(Value::None)
        } else {
            Value::Tuple(v)
        })
    }

    fn dict_or_set(&mut self) -> Result<Value, ParseError> {
        if self.peek() == Some('}') {
            self.i += 1;
            return Ok(Value::Dict(Vec::new()));
        }
        let first = self.value()?;
        if self.peek() != Some(':') {
            let mut v = vec![first];
            match self.peek() {
                Some(',') => {
                    self.i += 1;
                    v.extend(self.items('}')?);
                }
                Some('}') => self.i += 1,
                _ => return Err(self.fail("expected ',', ':' or '}'")),
            }
            return Ok(Value::Set(v));
        }
        let mut entries = Vec::new();
        let mut key = first;
        loop {
            if self.peek() != Some(':') {
                return Err(self.fail("expected ':' after a key"));
            }
            self.i += 1;
            entries.push((key, self.value()?));
            match self.peek() {
                Some(',') => self.i += 1,
                Some('}') => {
                    self.i += 1;
                    return Ok(Value::Dict(entries));
                }
                _ => return Err(self.fail("expected ',' or '}'")),
            }
            if self.peek() == Some('}') {
                self.i += 1;
                return Ok(Value::Dict(entries));
            }
            key = self.value()?;
        }
    }

    fn string(&mut self) -> Result<Value, ParseError> {
        let mut out = String::new();
        // Adjacent strings concatenate, as in Python.
        while let Some(q @ ('\'' | '"')) = self.peek() {
            self.i += 1;
            loop {
                let Some(&c) = self.s.get(self.i) else {
                    return Err(self.fail("the text ends inside a string"));
                };
                self.i += 1;
                match c {
                    _ if c == q => break,
                    '\n' => return Err(self.fail("a line ends inside a string")),
                    '\\' => {
                        let Some(&e) = self.s.get(self.i) else {
                            return Err(self.fail("the text ends inside a string"));
                        };
                        self.i += 1;
                        match e {
                            'n' => out.push('\n'),
                            't' => out.push('\t'),
                            'r' => out.push('\r'),
                            '0' => out.push('\0'),
                            '\n' => {}
                            '\\' | '\'' | '"' => out.push(e),
                            'x' => {
                                let hex: String = self
                                    .s
                                    .get(self.i..self.i + 2)
                                    .unwrap_or(&[])
                                    .iter()
                                    .collect();
                                let v = u32::from_str_radix(&hex, 16)
                                    .ok()
                                    .filter(|_| hex.len() == 2)
                                    .and_then(char::from_u32)
                                    .ok_or_else(|| self.fail("a bad \\x escape"))?;
                                self.i += 2;
                                out.push(v);
                            }
                            _ => {
                                out.push('\\');
                                out.push(e);
                            }
                        }
                    }
                    _ => out.push(c),
                }
            }
        }
        Ok(Value::String(out))
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let mut negative = false;
        let mut signs = 0;
        while let Some(c @ ('+' | '-')) = self.peek() {
            negative ^= c == '-';
            self.i += 1;
            signs += 1;
            if signs > MAX_DEPTH {
                return Err(self.fail("too many signs"));
            }
        }
        self.space();
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_'))
            || (self.i > start
                && matches!(self.s.get(self.i), Some('+' | '-'))
                && matches!(self.s[self.i - 1], 'e' | 'E'))
        {
            self.i += 1;
        }
        let text: String = self.s[start..self.i].iter().collect();
        if text.is_empty() {
            return Err(self.fail("a sign without a number"));
        }
        let digits = text.replace('_', "");
        let sign = if negative { "-" } else { "" };
        let radix = match digits.get(..2) {
            Some("0x" | "0X") => Some(16),
            Some("0o" | "0O") => Some(8),
            Some("0b" | "0B") => Some(2),
            _ => None,
        };
        if let Some(r) = radix {
            let body = &digits[2..];
            if body.is_empty() || !body.chars().all(|c| c.is_digit(r)) {
                return Err(self.fail(&format!("'{text}' is not a number")));
            }
            // Past u128, the exact value does not matter: no shape size comes near it.
            return Ok(Value::Integer(match u128::from_str_radix(body, r) {
                Ok(v) => format!("{sign}{v}"),
                Err(_) => format!("{sign}{}", "9".repeat(40)),
            }));
        }
        if digits.chars().all(|c| c.is_ascii_digit()) {
            let trimmed = digits.trim_start_matches('0');
            if trimmed.len() < digits.len() && !trimmed.is_empty() {
                return Err(self.fail(&format!(
                    "'{text}': leading zeros in a decimal integer are not allowed"
                )));
            }
            let v = if trimmed.is_empty() { "0" } else { trimmed };
            let sign = if v == "0" { "" } else { sign };
            return Ok(Value::Integer(format!("{sign}{v}")));
        }
        let float = digits.strip_suffix(['j', 'J']).unwrap_or(&digits);
        if float.parse::<f64>().is_ok() && !float.contains(['i', 'I', 'n', 'N']) {
            return Ok(Value::Number(format!("{sign}{text}")));
        }
        Err(self.fail(&format!("'{text}' is not a number")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_headers_and_python_literals() {
        let h = parse("{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }  \n").unwrap();
        let Value::Dict(e) = &h else { panic!("{h}") };
        assert_eq!(e.len(), 3);
        assert_eq!(
            e[2].1,
            Value::Tuple(vec![Value::Integer("3".into()), Value::Integer("4".into())])
        );
        assert_eq!(parse("(7,)").unwrap().to_string(), "(7,)");
        assert_eq!(parse("(7)").unwrap(), Value::Integer("7".into()));
        assert_eq!(parse("()").unwrap(), Value::Tuple(vec![]));
        assert_eq!(parse("-0x10").unwrap(), Value::Integer("-16".into()));
        assert_eq!(parse("1_000").unwrap(), Value::Integer("1000".into()));
        assert_eq!(parse("- -5").unwrap(), Value::Integer("5".into()));
        assert_eq!(parse("'a' \"b\"").unwrap(), Value::String("ab".into()));
        assert_eq!(parse(r"'\x41\''").unwrap(), Value::String("A'".into()));
        assert_eq!(parse("{1, 2}").unwrap().to_string(), "{1, 2}");
        assert_eq!(
            parse("[1.5e3, None, True]").unwrap().to_string(),
            "[1.5e3, None, True]"
        );
        assert_eq!(parse("99999999999999999999999999").unwrap().as_i64(), None);
        for bad in [
            "",
            "{",
            "(1 2)",
            "{'a' 1}",
            "[1,,]",
            "'abc",
            "os.system",
            "01",
            "1e",
            "{'a': }",
            "[1] [2]",
            "__import__('os')",
            "1 + 2",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nesting_is_bounded_as_python_bounds_it() {
        for (open, close) in [('[', ']'), ('(', ')'), ('{', '}')] {
            let nested = |n: usize| {
                let body = if open == '{' {
                    "{1:".repeat(n) + "1"
                } else {
                    open.to_string().repeat(n)
                };
                let mut t = body;
                t.extend(std::iter::repeat_n(close, n));
                t
            };
            assert!(parse(&nested(MAX_DEPTH)).is_ok(), "{open}");
            let e = parse(&nested(MAX_DEPTH + 1)).unwrap_err();
            assert!(e.what.contains("nested"), "{e}");
        }
        // Deep and wide texts take linear time: 5,000 levels are refused at once, and a long
        // flat list parses in one pass.
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        assert!(parse(&deep).is_err());
        let wide = format!("[{}]", "1, ".repeat(100_000));
        assert!(parse(&wide).is_ok());
    }
}
