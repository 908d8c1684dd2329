//! A tiny reader and writer for the flat JSON objects the peers print (`{"key": number, ...}`):
//! strings, numbers, booleans and null as values; no nesting, which the peers never send.

use std::fmt::Write as _;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Str(String),
    Bool(bool),
    Null,
}

/// One flat object, its keys in the order they came.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object(pub Vec<(String, Value)>);

impl Object {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn num(&self, key: &str) -> Option<f64> {
        match self.get(key) {
            Some(Value::Num(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    pub fn push(&mut self, key: &str, value: Value) {
        self.0.push((key.to_string(), value));
    }

    /// One line of JSON (non-finite numbers become null).
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(&mut out, k);
            out.push(':');
            match v {
                Value::Num(n) if n.is_finite() => {
                    let _ = write!(out, "{n}");
                }
                Value::Num(_) | Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Str(s) => write_str(&mut out, s),
            }
        }
        out.push('}');
        out
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.at))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = self.peek().ok_or("unterminated string")?;
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or("unterminated escape")?;
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let hex = self.s.get(self.at..self.at + 4).ok_or("short \\u escape")?;
                            self.at += 4;
                            let hex = std::str::from_utf8(hex).map_err(|e| e.to_string())?;
                            let code = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                            let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                            let mut buf = [0; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(format!("bad escape at byte {}", self.at)),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        match self.peek().ok_or("missing value")? {
            b'"' => Ok(Value::Str(self.string()?)),
            b't' | b'f' | b'n' => {
                for (word, v) in [
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                    ("null", Value::Null),
                ] {
                    if self.s[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(v);
                    }
                }
                Err(format!("bad literal at byte {}", self.at))
            }
            _ => {
                let start = self.at;
                while self.at < self.s.len()
                    && matches!(self.s[self.at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.at]).map_err(|e| e.to_string())?;
                text.parse::<f64>()
                    .map(Value::Num)
                    .map_err(|_| format!("bad number {text:?} at byte {start}"))
            }
        }
    }
}

/// Parses one flat object; trailing whitespace is allowed, anything else after it is not.
pub fn parse(text: &str) -> Result<Object, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let mut obj = Object::default();
    p.expect(b'{')?;
    p.ws();
    if p.peek() == Some(b'}') {
        p.at += 1;
    } else {
        loop {
            p.ws();
            let key = p.string()?;
            p.expect(b':')?;
            let value = p.value()?;
            obj.0.push((key, value));
            p.ws();
            match p.peek() {
                Some(b',') => p.at += 1,
                Some(b'}') => {
                    p.at += 1;
                    break;
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", p.at)),
            }
        }
    }
    p.ws();
    if p.at != p.s.len() {
        return Err(format!("trailing text at byte {}", p.at));
    }
    Ok(obj)
}

/// The last line of `output` that parses as an object, if any.
pub fn last_object(output: &str) -> Option<Object> {
    output
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .find_map(|l| parse(l).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let o = parse(r#" {"a": 1.5, "b":"x\"y\u0041", "c": null, "d": true, "e": -2e3} "#).unwrap();
        assert_eq!(o.num("a"), Some(1.5));
        assert_eq!(o.str("b"), Some("x\"yA"));
        assert_eq!(o.get("c"), Some(&Value::Null));
        assert_eq!(o.num("e"), Some(-2000.0));
        assert_eq!(parse(&o.to_json()).unwrap(), o);
        assert!(parse("{\"a\":1} x").is_err());
        assert_eq!(parse("{}").unwrap(), Object::default());
    }
}
