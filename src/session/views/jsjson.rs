//! `JSON.stringify` of a parsed JSON value, byte for byte as V8 writes it:
//! integer-like keys first (JavaScript's own property order), JavaScript
//! number formatting, and V8's string escaping.

use serde_json::{Map, Number, Value};
use std::fmt::Write;

/// `JSON.stringify(value)` (compact).
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in js_entries(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_value(v, out);
            }
            out.push('}');
        }
    }
}

/// An array index key (`"0"`, `"17"`, up to 2^32 − 2): JavaScript enumerates
/// these first, in numeric order, before the other keys in insertion order.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n < u32::MAX as u64).then_some(n as u32)
}

/// `Object.entries` order of a parsed object.
pub fn js_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, &String, &Value)> = Vec::new();
    let mut named = Vec::with_capacity(map.len());
    for (k, v) in map {
        match array_index(k) {
            Some(n) => indexed.push((n, k, v)),
            None => named.push((k, v)),
        }
    }
    if indexed.is_empty() {
        return named;
    }
    indexed.sort_by_key(|&(n, _, _)| n);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(named)
        .collect()
}

pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\u{08}' => "\\b",
            '\u{0C}' => "\\f",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(esc);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn write_number(n: &Number, out: &mut String) {
    // Integers within 2^53 print exactly in JS; beyond that JS holds a double.
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        if u <= SAFE {
            let _ = write!(out, "{u}");
            return;
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= SAFE {
            let _ = write!(out, "{i}");
            return;
        }
    }
    match n.as_f64() {
        Some(f) => out.push_str(&js_number(f)),
        None => out.push_str("null"),
    }
}

/// JavaScript's `Number.prototype.toString()` for a finite double
/// (ECMA-262 Number::toString with shortest round-trip digits).
pub fn js_number(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    if f == 0.0 {
        return "0".to_string();
    }
    if f < 0.0 {
        return format!("-{}", js_number(-f));
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    let k = digits.len() as i32;
    let n = exp + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let e = (n - 1).abs();
        if k == 1 {
            format!("{digits}e{sign}{e}")
        } else {
            format!("{}.{}e{sign}{e}", &digits[..1], &digits[1..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_as_javascript_does() {
        let cases = [
            (1.0, "1"),
            (0.1, "0.1"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (-0.0, "0"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ];
        for (f, want) in cases {
            assert_eq!(js_number(f), want, "{f}");
        }
    }

    #[test]
    fn stringify_matches_v8() {
        let v: Value = serde_json::from_str(
            r#"{"b":1.0,"10":true,"a":"x\u0001\"\\\n/\u2028","2":[1e2,-0,12345678901234567890],"c":null}"#,
        )
        .unwrap_or_default();
        let want =
            r#"{"2":[100,0,12345678901234567000],"10":true,"b":1,"a":"x\u0001\"\\\n/LS","c":null}"#;
        assert_eq!(stringify(&v), want.replace("LS", "\u{2028}"));
        assert_eq!(stringify(&json!("é😀")), "\"é😀\"");
    }
}
