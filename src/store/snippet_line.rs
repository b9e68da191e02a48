//! A snippet as a person reads it on one line (`/sessions`, `search`): the
//! sentence around the matched words, without markup or JSON punctuation,
//! with only the words that mean something marked (never "the", "with", …).

use super::rank::{is_function_word, Snippet, MARK_END, MARK_START};
use crate::text::{clip, flat, Keep};

/// Longest snippet line, in UTF-16 units (before the marks are drawn).
const SENTENCE_UNITS: usize = 160;

impl Snippet {
    /// The best matching sentence, clean and on one line, its meaningful
    /// matches between `open` and `close`.
    pub fn sentence(&self, open: &str, close: &str) -> String {
        self.sentence_within(open, close, None)
    }

    /// [`Snippet::sentence`] in at most `room` characters as shown (the
    /// marks not counted), cut with `…`.
    pub fn sentence_within(&self, open: &str, close: &str, room: Option<usize>) -> String {
        let text = clean(&unmark_function_words(&self.text));
        let max = room.map_or(SENTENCE_UNITS, |r| r.clamp(1, SENTENCE_UNITS));
        let text = clip_marked(around_marks(&text), max);
        text.replace(MARK_START, open).replace(MARK_END, close)
    }
}

/// [`clip`] that does not count the marks, and closes a mark it cuts into.
fn clip_marked(text: &str, max: usize) -> String {
    let marks = |t: &str| {
        t.chars()
            .filter(|c| [MARK_START, MARK_END].contains(c))
            .count()
    };
    let mut clipped = clip(text, max + marks(text), Keep::Head);
    while marks(&clipped) > 0 && clipped.encode_utf16().count() - marks(&clipped) > max {
        clipped = clip(text, clipped.encode_utf16().count() - 1, Keep::Head);
    }
    let opened = clipped.matches(MARK_START).count() > clipped.matches(MARK_END).count();
    if opened {
        clipped.push(MARK_END);
    }
    clipped
}

/// The marks around function words removed (their text stays).
fn unmark_function_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(MARK_START) {
        out.push_str(&rest[..start]);
        let inner = &rest[start + MARK_START.len_utf8()..];
        let Some(end) = inner.find(MARK_END) else {
            out.push_str(inner);
            return out;
        };
        let word = &inner[..end];
        if is_function_word(&word.to_lowercase()) {
            out.push_str(word);
        } else {
            out.push(MARK_START);
            out.push_str(word);
            out.push(MARK_END);
        }
        rest = &inner[end + MARK_END.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// One line of prose: escaped newlines and tabs as spaces, JSON's braces,
/// brackets and quotes and markdown's emphasis dropped, `key:value` and
/// `a,b` spaced, whitespace collapsed.
fn clean(text: &str) -> String {
    let unescaped = text
        .replace("\\n", " ")
        .replace("\\t", " ")
        .replace("\\\"", "\"");
    let mut out = String::with_capacity(unescaped.len());
    let mut chars = unescaped.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' | '[' | ']' | '"' | '`' | '*' | '#' => out.push(' '),
            ':' | ',' | ';' => {
                out.push(c);
                if chars.peek().is_some_and(|n| !n.is_whitespace()) {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    flat(&out)
        .replace(" :", ":")
        .replace(" ,", ",")
        .replace(&format!("{MARK_START} "), &MARK_START.to_string())
        .replace(&format!(" {MARK_END}"), &MARK_END.to_string())
}

/// The sentence(s) holding the marks: from the end of the sentence before
/// the first mark to the end of the one holding the last.
fn around_marks(text: &str) -> &str {
    let (Some(first), Some(last)) = (text.find(MARK_START), text.rfind(MARK_END)) else {
        return text;
    };
    let ends = |i: usize| {
        let b = text.as_bytes();
        matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_some_and(|n| *n == b' ')
    };
    let start = (0..first).rev().find(|&i| ends(i)).map_or(0, |i| i + 2);
    let end = (last..text.len())
        .find(|&i| ends(i))
        .map_or(text.len(), |i| i + 1);
    text[start..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(text: &str) -> Snippet {
        Snippet {
            entry_id: None,
            role: "toolResult".into(),
            abandoned: false,
            text: text.replace("<<", "\u{2}").replace(">>", "\u{3}"),
        }
    }

    #[test]
    fn one_clean_line_with_the_meaningful_words_marked() {
        let s = snippet("Done. Now <<the>> <<cron>> job runs\nnightly. Next we fix the logs.");
        assert_eq!(s.sentence("*", "*"), "Now the *cron* job runs nightly.");
        let json = snippet(r#"…{"status":"ok","output":"<<chart>> saved\n","files":["a.png"]}…"#);
        assert_eq!(
            json.sentence("<", ">"),
            "… status: ok, output: <chart> saved, files: a.png …"
        );
        assert_eq!(snippet("no marks here").sentence("*", "*"), "no marks here");
        let long = snippet("The <<cron>> job of the <<nightly>> report runs at noon.");
        assert_eq!(
            long.sentence_within("*", "*", Some(20)),
            "The *cron* job of the…"
        );
        assert_eq!(
            long.sentence_within("*", "*", Some(27)),
            "The *cron* job of the *nightl…*"
        );
    }
}
