use super::*;

use crate::shared_dir;

/// The scan as it was before chunked reading: every line read in turn,
/// interesting ones parsed into a `Value`. The reference for equivalence.
mod line_by_line {
    use super::super::{Light, FIRST_MESSAGE_CHARS};
    use crate::catalog::content_text;
    use serde_json::Value;
    use std::io::{BufRead, BufReader, Seek, SeekFrom};

    pub fn read(path: &std::path::Path, prev: Option<&Light>) -> Option<Light> {
        let mut file = std::fs::File::open(path).ok()?;
        let len = file.metadata().ok()?.len();
        let mut light = match prev {
            Some(p) if len >= p.scanned_to && p.scanned_to > 0 => {
                file.seek(SeekFrom::Start(p.scanned_to)).ok()?;
                p.clone()
            }
            _ => Light::default(),
        };
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).ok()?;
            if n == 0 {
                break;
            }
            let complete = line.last() == Some(&b'\n');
            if light.scanned_to == 0 && light.id.is_empty() {
                let v: Value = serde_json::from_slice(trim(&line)).ok()?;
                if v.get("type")?.as_str()? != "session" {
                    return None;
                }
                light.id = v.get("id")?.as_str()?.to_string();
                if light.id.is_empty() {
                    return None;
                }
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                light.cwd = s("cwd");
                light.created = s("timestamp");
                light.parent_session =
                    v.get("parentSession").and_then(Value::as_str).filter(|p| !p.is_empty()).map(str::to_string);
            } else {
                scan_line(&line, &mut light);
            }
            if complete {
                light.scanned_to += n as u64;
            } else {
                break;
            }
        }
        (!light.id.is_empty()).then_some(light)
    }

    fn trim(line: &[u8]) -> &[u8] {
        let mut end = line.len();
        while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        &line[..end]
    }

    fn scan_line(line: &[u8], light: &mut Light) {
        let Ok(text) = std::str::from_utf8(trim(line)) else { return };
        let info = text.contains("\"session_info\"");
        let user = light.first_message.is_none() && text.contains("\"user\"");
        if !info && !user {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(text) else { return };
        match v.get("type").and_then(Value::as_str) {
            Some("session_info") => {
                let name = v.get("name").and_then(Value::as_str).map(str::trim).unwrap_or_default();
                light.name = (!name.is_empty()).then(|| name.to_string());
            }
            Some("message") if light.first_message.is_none() => {
                let Some(msg) = v.get("message") else { return };
                if msg.get("role").and_then(Value::as_str) != Some("user") {
                    return;
                }
                let text = content_text(msg.get("content"));
                let text = text.trim();
                if !text.is_empty() {
                    light.first_message = Some(text.chars().take(FIRST_MESSAGE_CHARS).collect());
                }
            }
            _ => {}
        }
    }
}

fn check_same(path: &Path) {
    let want = line_by_line::read(path, None);
    let got = read_session(path, None).ok().and_then(|r| r.1);
    assert_eq!(got, want, "{}", path.display());
}

const HEAD: &str =
    "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n";

fn user(text: &str) -> String {
    format!("{{\"type\":\"message\",\"id\":\"u\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":{}}}]}}}}\n", serde_json::to_string(text).unwrap())
}

fn info(name: &str) -> String {
    format!(
        "{{\"type\":\"session_info\",\"id\":\"i\",\"parentId\":\"u\",\"name\":{}}}\n",
        serde_json::to_string(name).unwrap()
    )
}

#[test]
fn same_as_line_by_line_on_edge_cases() {
    let big = "x".repeat(3 * CHUNK);
    let cases: Vec<String> = vec![
        String::new(),
        "\n".into(),
        HEAD.trim_end().into(),
        HEAD.into(),
        format!("{HEAD}{}{}", user("hello there"), info("  Auth work ")),
        format!("{HEAD}{}{}{}", info("First"), user("x"), info("")),
        format!("{HEAD}{}{}", info("Named"), info("Renamed").trim_end()),
        format!("{HEAD}{}{}", user("   "), user("second is first")),
        format!("{HEAD}{}", user(&big)),
        format!("{HEAD}{}{}{}", user(&big), info("after big"), user("late")),
        // Mentions that are not entries of that kind.
        format!("{HEAD}{}{}", "{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":\"the \\\"user\\\" and \\\"session_info\\\"\"}}\n", info("Real")),
        format!("{HEAD}{{\"type\":\"custom\",\"data\":[\"session_info\",\"user\"]}}\n{}", user("ok")),
        // Escaped type: parsed only because the line mentions "user".
        format!("{HEAD}{}{}", info("Plain"), "{\"type\":\"session\\u005finfo\",\"name\":\"Escaped\",\"by\":\"user\"}\n"),
        // Duplicate keys and odd types.
        format!("{HEAD}{{\"type\":\"session_info\",\"name\":\"a\",\"name\":\"b\"}}\n{{\"type\":\"session_info\",\"name\":7}}\n"),
        format!("{HEAD}{{\"type\":\"session_info\",\"name\":\"x\"}}\r\n{}", "{\"type\":\"session_info\",\"name\":\"bad \u{0}\"}\n"),
        format!("{HEAD}{}\n{}", "{\"type\":\"session_info\",\"name\":\"broken\"", info("ok")),
        format!("{HEAD}{}", "{\"type\":\"session_info\",\"name\":\"no newline\"}"),
        // Content shapes: a plain string, odd blocks, a non-object message, duplicates.
        format!("{HEAD}{}", "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"plain \\u00e9 text\"}}\n"),
        format!("{HEAD}{}", "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[1,\"s\",{\"type\":\"image\",\"text\":\"no\"},{\"type\":\"text\",\"text\":\"a\"},{\"text\":\"b\",\"type\":\"text\"},{\"type\":\"text\",\"text\":5}]}}\n"),
        format!("{HEAD}{}{}", "{\"type\":\"message\",\"message\":\"user\"}\n", user("after")),
        format!("{HEAD}{}", "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"one\",\"content\":\"two\"},\"message\":{\"role\":\"user\",\"content\":{\"text\":\"x\"}}}\n"),
        format!("{HEAD}{}", "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"nested [\\\"user\\\"]\"}]},\"x\":[[{}],null,true,1.5e3]}\n"),
        // Not sessions.
        "{\"type\":\"message\"}\n".into(),
        "{\"type\":\"session\",\"id\":\"\"}\n".into(),
        "{\"type\":\"session\",\"id\":\"a\",\"id\":\"\"}\n".into(),
        "{\"type\":\"session\",\"id\":\"a\",\"cwd\":5,\"parentSession\":\"\"}\n".into(),
        "{\"type\":\"session\",\"id\":\"a\"} trailing\n".into(),
        "[\"session\"]\n".into(),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in cases.iter().enumerate() {
        let p = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&p, text).unwrap();
        check_same(&p);
    }
    // Invalid UTF-8 in a line that matters, and in the header.
    let p = dir.path().join("bytes.jsonl");
    let mut bytes = HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(b"{\"type\":\"session_info\",\"name\":\"\xff\"}\n");
    bytes.extend_from_slice(info("kept").as_bytes());
    bytes.extend_from_slice(b"{\"type\":\"session_info\",\"name\":\"x\",\"z\":\"\xfe\"}\n");
    std::fs::write(&p, &bytes).unwrap();
    check_same(&p);
    std::fs::write(&p, b"{\"type\":\"session\",\"id\":\"a\",\"z\":\"\xff\"}\n").unwrap();
    check_same(&p);
}

#[test]
fn appends_continue_like_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let steps = [
        HEAD.to_string(),
        format!("{}{}", user("hello"), "{\"type\":\"session_info\",\"name\":\"half"),
        "\"}\n".to_string(),
        info("Final"),
    ];
    let mut text = String::new();
    let (mut a, mut b): (Option<Light>, Option<Light>) = (None, None);
    for step in steps {
        text.push_str(&step);
        std::fs::write(&p, &text).unwrap();
        a = read_session(&p, a.as_ref()).unwrap().1;
        b = line_by_line::read(&p, b.as_ref());
        assert_eq!(a, b, "after {step:?}");
    }
    assert_eq!(a.and_then(|l| l.name).as_deref(), Some("Final"));
}

#[test]
fn same_as_line_by_line_on_real_sessions() {
    let root = shared_dir::pi_sessions_dir();
    let mut stack = vec![root];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                check_same(&p);
                seen += 1;
            }
        }
    }
    assert!(seen >= 5, "only {seen} fixture sessions");
}

#[test]
fn scans_header_name_and_first_message_incrementally() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let head = "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n\
         {\"type\":\"message\",\"id\":\"1\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello there\"}]}}\n";
    std::fs::write(&p, head).unwrap();
    let a = read_session(&p, None).unwrap().1.unwrap();
    assert_eq!((a.id.as_str(), a.first_message.as_deref(), a.name.as_deref()), ("abc", Some("hello there"), None));
    assert_eq!(a.scanned_to, head.len() as u64);
    let more = "{\"type\":\"session_info\",\"id\":\"2\",\"parentId\":\"1\",\"name\":\"  Auth work \"}\n";
    std::fs::write(&p, format!("{head}{more}")).unwrap();
    let b = read_session(&p, Some(&a)).unwrap().1.unwrap();
    assert_eq!(b.name.as_deref(), Some("Auth work"));
    assert_eq!(b.first_message.as_deref(), Some("hello there"));
}

#[test]
fn non_session_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.jsonl");
    std::fs::write(&p, "{\"createSurface\":{}}\n").unwrap();
    assert_eq!(read_session(&p, None).unwrap().1, None);
}
