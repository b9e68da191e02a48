//! What JavaScript's `JSON.parse` accepts and serde_json does not, so that a
//! line pi keeps is kept here too: invalid UTF-8, lone surrogate escapes,
//! numbers outside the f64 range and duplicate keys are repaired and the
//! line parsed again.
//! Its own module because both the line reader (`read`) and the entry
//! conversion (`convert`) use it.

/// Parse one line as JavaScript's `JSON.parse` would accept it. serde
/// rejects four things JavaScript takes, so a failed line is repaired and
/// parsed again: invalid UTF-8 (pi decodes the file with replacement
/// characters), lone surrogate escapes (`"\ud83d"`, from a string cut inside
/// an emoji: `\ufffd`, one UTF-16 unit like the surrogate), numbers
/// outside the f64 range (`1e400`: Infinity for pi, which `JSON.stringify`
/// writes as `null`, so `null` here), and a key given twice in one object
/// (the typed shapes refuse it; for `JSON.parse` the last value wins, and
/// so it does in a `serde_json::Value`, through which the line is written
/// again). The second value tells whether invalid UTF-8 was repaired.
pub(crate) fn parse_line<'b, T: serde::Deserialize<'b>>(
    text: &'b [u8],
    repaired: &'b mut Option<String>,
) -> (Result<T, serde_json::Error>, bool) {
    let err = match serde_json::from_slice::<T>(text) {
        Ok(v) => return (Ok(v), false),
        Err(e) => e,
    };
    let (mut fixed, bad_utf8) = match std::str::from_utf8(text) {
        Ok(t) => (std::borrow::Cow::Borrowed(t), false),
        Err(_) => (String::from_utf8_lossy(text), true),
    };
    let mut changed = bad_utf8;
    if let Some(f) = replace_lone_surrogates(&fixed) {
        (fixed, changed) = (std::borrow::Cow::Owned(f), true);
    }
    if let Some(f) = replace_infinite_numbers(&fixed) {
        (fixed, changed) = (std::borrow::Cow::Owned(f), true);
    }
    // Written again through a `Value` (last value wins) when a key is given
    // twice, or when the repairs above may have hidden one behind them.
    if changed || is_duplicate_key(&err) {
        if let Some(f) = last_value_wins(&fixed) {
            (fixed, changed) = (std::borrow::Cow::Owned(f), true);
        }
    }
    if !changed {
        return (Err(err), false);
    }
    let fixed = repaired.insert(fixed.into_owned());
    (serde_json::from_str::<T>(fixed), bad_utf8)
}

/// serde's "duplicate field `x`" (the lenient shapes name every field pi writes).
fn is_duplicate_key(err: &serde_json::Error) -> bool {
    err.is_data() && err.to_string().starts_with("duplicate field")
}

/// `text` parsed as `JSON.parse` does with keys given twice (the last value
/// wins, in the first one's place) and written again; `None` when it is not
/// JSON or has no key twice.
fn last_value_wins(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let again = serde_json::to_string(&value).ok()?;
    (again.len() != text.len() || again != text).then_some(again)
}

/// The value of four hex digits at the start of `b`.
fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// `text` with every unpaired `\uD800`–`\uDFFF` escape replaced by `\ufffd`;
/// `None` when there is none.
pub(crate) fn replace_lone_surrogates(text: &str) -> Option<String> {
    let b = text.as_bytes();
    memchr::memmem::find(b, b"\\u")?;
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &b[i..]) {
        let at = i + off;
        let Some(n) = (b.get(at + 1) == Some(&b'u'))
            .then(|| hex4(&b[(at + 2).min(b.len())..]))
            .flatten()
        else {
            i = at + 2;
            continue;
        };
        let paired = (0xD800..0xDC00).contains(&n)
            && b.get(at + 6..at + 8) == Some(b"\\u")
            && hex4(&b[(at + 8).min(b.len())..]).is_some_and(|m| (0xDC00..0xE000).contains(&m));
        i = at + 6;
        if paired {
            i = at + 12;
        } else if (0xD800..0xE000).contains(&n) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push_str("\\ufffd");
            copied = at + 6;
        }
        if i >= b.len() {
            break;
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

/// `text` with every number literal outside the f64 range (`1e400`, a
/// 5,000-digit integer, their negatives) replaced by `null`; `None` when
/// there is none.
pub(crate) fn replace_infinite_numbers(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let (mut copied, mut i, mut in_string) = (0, 0, false);
    while i < b.len() {
        match b[i] {
            b'\\' if in_string => i += 2,
            b'"' => {
                in_string = !in_string;
                i += 1;
            }
            b'-' | b'0'..=b'9' if !in_string => {
                let len = b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'));
                let end = i + len.unwrap_or(b.len() - i);
                if text[i..end].parse::<f64>().is_ok_and(f64::is_infinite) {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(&text[copied..i]);
                    o.push_str("null");
                    copied = end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::raw::RawLine;

    /// A key given twice is read as `JSON.parse` reads it: the last value wins.
    #[test]
    fn the_last_of_a_key_given_twice_wins() {
        let line = br#"{"type":"message","id":"a","id":"b","message":{"role":"user","role":"assistant","content":"x"}}"#;
        let mut repaired = None;
        let (parsed, bad_utf8) = parse_line::<RawLine<'_>>(line, &mut repaired);
        let parsed = parsed.expect("the line is kept");
        assert!(!bad_utf8);
        assert_eq!(parsed.id.as_str(), Some("b"));
        let message = parsed.message.and_then(|m| m.0).expect("a message");
        assert_eq!(message.role.as_str(), Some("assistant"));
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let line = r#"{"type":"x","name":"a\ud83d|\ud83d\ude00|\ude00|\\ud83d|\u0041"}"#;
        let mut repaired = None;
        let (parsed, bad_utf8) = parse_line::<RawLine<'_>>(line.as_bytes(), &mut repaired);
        assert!(!bad_utf8);
        let name = parsed.ok().and_then(|l| l.name.owned::<String>());
        assert_eq!(name.as_deref(), Some("a\u{FFFD}|😀|\u{FFFD}|\\ud83d|A"));
        assert_eq!(replace_lone_surrogates(r#""ok \u00e9""#), None);
        assert_eq!(
            replace_lone_surrogates(r#""\ud800""#).as_deref(),
            Some(r#""\ufffd""#)
        );
    }

    #[test]
    fn numbers_outside_f64_become_null_and_the_line_stays() {
        let digits = "9".repeat(5000);
        let line = format!(
            r#"{{"type":"x","name":"1e400 stays","n":[1e400,-{digits},1.5e3,"2e999"],"version":1e400}}"#
        );
        let mut repaired = None;
        let parsed = parse_line::<RawLine<'_>>(line.as_bytes(), &mut repaired)
            .0
            .ok();
        assert_eq!(
            parsed.and_then(|l| l.name.owned::<String>()).as_deref(),
            Some("1e400 stays")
        );
        assert_eq!(
            replace_infinite_numbers(&line).as_deref(),
            Some(
                r#"{"type":"x","name":"1e400 stays","n":[null,null,1.5e3,"2e999"],"version":null}"#
            )
        );
        assert_eq!(
            replace_infinite_numbers(r#"{"a":"\"1e400","b":-0.5e-400}"#),
            None
        );
    }

    #[test]
    fn raw_control_characters_make_a_line_malformed_as_in_javascript() {
        let line = "{\"type\":\"message\",\"id\":\"e1\",\"message\":{\"role\":\"toolResult\",\"content\":[{\"type\":\"text\",\"text\":\"a\tb\"}]}}";
        let mut repaired = None;
        assert!(parse_line::<RawLine<'_>>(line.as_bytes(), &mut repaired)
            .0
            .is_err());
    }
}
