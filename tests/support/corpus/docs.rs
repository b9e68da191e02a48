//! The second distractor corpus, unlike the first: pi sessions in which a
//! user asks about the npm packages their project depends on and the
//! assistant looks things up and answers from the packages' documentation.
//! The text is real prose written by people (the markdown of the packages
//! under `tools/pi-ref/node_modules`, about 380 files and 4 MB that `.ci/run`
//! installs), on topics that overlap the targets' for real: pi's own docs
//! (sessions, retries, compaction, extensions), HTTP clients and proxies,
//! rate limits, TLS, streams, TypeScript, git and npm. Where the first
//! corpus is word salad around quoted sentences, these are fluent sessions
//! a semantic ranking can confuse with the targets.
//!
//! Each session is built from one seeded generator of its own (the seed and
//! its number), so a smaller corpus is the first sessions of a larger one
//! and a session does not change when the count does. The shape is pi's: a
//! header, the model and thinking-level entries, user turns, `read` and
//! `bash` tool calls with their output, assistant answers, sometimes a name.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_index::text::byte_head as head;
use session_index::time::iso_from_millis as iso;

use crate::support::rng::Rng;
use crate::support::search::project_dir;

const SEED: u64 = 0x0d0c_5d15_7ac7_0125;
/// 2026-01-05T09:00:00Z: the sessions start on days after this.
const FIRST_DAY_MS: u64 = 1_767_603_600_000;
/// Longest tool output and answer written, in bytes.
const TOOL_OUTPUT_BYTES: usize = 3_000;
const ANSWER_BYTES: usize = 1_600;

/// One section of a markdown file: its heading and paragraphs.
struct Section {
    /// The package, as npm names it (`undici`, `@mariozechner/pi-ai`).
    package: String,
    /// The file's path from `node_modules/`.
    file: String,
    heading: String,
    paragraphs: Vec<String>,
}

/// `tools/pi-ref/node_modules`, installed by `npm ci --prefix tools/pi-ref`.
pub fn node_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/pi-ref/node_modules")
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().to_lowercase();
        if kind.is_dir() {
            markdown_files(&path, out);
        } else if kind.is_file() && name.ends_with(".md") && !is_release_notes(&name) {
            out.push(path);
        }
    }
}

/// Licenses, and change logs: hundreds of "Bug Fixes" sections each, unlike
/// what anyone asks an agent about.
fn is_release_notes(name: &str) -> bool {
    [
        "license",
        "changelog",
        "history",
        "release-notes",
        "changes",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

/// The package a file belongs to: the path after the last `node_modules/`,
/// one segment, or two for a scope.
fn package_of(relative: &str) -> String {
    let inner = relative.rsplit("node_modules/").next().unwrap_or(relative);
    let mut parts = inner.split('/');
    let first = parts.next().unwrap_or_default();
    if first.starts_with('@') {
        format!("{first}/{}", parts.next().unwrap_or_default())
    } else {
        first.to_string()
    }
}

/// Markdown reduced to what a chat shows: no HTML, no image or badge lines,
/// links as their text.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            let end = after[close..].find(')')? + close;
            Some((close, end))
        }) {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn sections_of(relative: &str, text: &str) -> Vec<Section> {
    let package = package_of(relative);
    let mut sections = Vec::new();
    let mut heading = package.clone();
    let (mut paragraphs, mut paragraph, mut fenced) = (Vec::new(), String::new(), false);
    let flush = |paragraph: &mut String, paragraphs: &mut Vec<String>| {
        let p = paragraph.trim();
        if p.len() >= 40 {
            paragraphs.push(p.to_string());
        }
        paragraph.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            paragraph.push_str(line);
            paragraph.push('\n');
            continue;
        }
        if fenced {
            paragraph.push_str(line);
            paragraph.push('\n');
            continue;
        }
        if let Some(title) = trimmed.strip_prefix('#') {
            flush(&mut paragraph, &mut paragraphs);
            if !paragraphs.is_empty() {
                sections.push(Section {
                    package: package.clone(),
                    file: relative.to_string(),
                    heading: heading.clone(),
                    paragraphs: std::mem::take(&mut paragraphs),
                });
            }
            heading = clean(title.trim_start_matches('#').trim())
                .replace(['`', '*', '_'], "")
                .trim()
                .to_string();
            continue;
        }
        let skip =
            trimmed.starts_with('<') || trimmed.starts_with("![") || trimmed.starts_with("[!");
        if trimmed.is_empty() {
            flush(&mut paragraph, &mut paragraphs);
        } else if !skip {
            paragraph.push_str(&clean(line));
            paragraph.push('\n');
        }
    }
    flush(&mut paragraph, &mut paragraphs);
    if !paragraphs.is_empty() {
        sections.push(Section {
            package,
            file: relative.to_string(),
            heading,
            paragraphs,
        });
    }
    sections.retain(|s| s.heading.len() >= 3 && s.heading.len() <= 80);
    sections
}

/// Every section of every markdown file under `node_modules`, in path order.
fn sections(node_modules: &Path) -> Vec<Section> {
    let mut files = Vec::new();
    markdown_files(node_modules, &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let relative = path
            .strip_prefix(node_modules)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        out.extend(sections_of(&relative, &text));
    }
    out
}

/// The sections of one file: `sections[start..start + len]`.
struct FileSections {
    start: usize,
    len: usize,
}

fn by_file(sections: &[Section]) -> Vec<FileSections> {
    let mut files: Vec<FileSections> = Vec::new();
    for (i, section) in sections.iter().enumerate() {
        match files.last_mut() {
            Some(last) if sections[last.start].file == section.file => last.len += 1,
            _ => files.push(FileSections { start: i, len: 1 }),
        }
    }
    files
}

const USERS: &[&str] = &["dana", "kofi", "lee", "marta", "sam", "yuki"];
const PROJECTS: &[&str] = &[
    "billing-service",
    "cli-tools",
    "docs-site",
    "edge-proxy",
    "mobile-backend",
    "notes-app",
    "pi-extensions",
    "scraper",
    "telemetry",
    "webhooks",
];
const OPENERS: &[&str] = &[
    "how do I deal with {h} in {p}?",
    "what does the {p} documentation say about {h}",
    "can you look up {h} in the {p} docs, I keep getting it wrong",
    "we depend on {p}. explain {h} to me",
    "{h}: is that something {p} handles for us?",
    "I'm reading {f} and don't get the part on {h}",
    "quick question about {p}: {h}",
    "before I touch the code, what's the deal with {h} ({p})",
];
const FOLLOW_UPS: &[&str] = &[
    "ok. and {h}?",
    "makes sense. what about {h}",
    "next thing: {h}",
    "does {h} matter for us too?",
    "also check {h} please",
    "hm, and how does {h} work",
    "thanks. one more, {h}",
];
const INTROS: &[&str] = &[
    "From the {p} docs:",
    "Here is what {f} says about it:",
    "Short version, from the documentation:",
    "The relevant part of the {p} README:",
    "",
];
const CLOSINGS: &[&str] = &[
    "Want me to apply this in the code?",
    "That should cover our case.",
    "I'd keep the defaults unless we hit this in practice.",
    "Let me know if you want an example adapted to our setup.",
    "",
];

fn fill(template: &str, section: &Section) -> String {
    let heading = section.heading.to_lowercase();
    template
        .replace("{h}", &heading)
        .replace("{p}", &section.package)
        .replace("{f}", &section.file)
}

/// Appends pi's JSONL entries to one session file, with increasing times.
struct SessionFile {
    lines: String,
    last: Option<String>,
    clock_ms: u64,
    next_id: u64,
}

impl SessionFile {
    fn entry(&mut self, rng: &mut Rng, kind: &str, fields: Value) {
        self.clock_ms += 2_000 + rng.next() % 40_000;
        let id = format!(
            "{:08x}",
            (self.next_id.wrapping_mul(0x9e37_79b9) ^ rng.next()) as u32
        );
        self.next_id += 1;
        let mut entry = json!({"type": kind, "id": id, "parentId": self.last, "timestamp": iso(self.clock_ms as i64)});
        if let (Some(entry), Value::Object(fields)) = (entry.as_object_mut(), fields) {
            entry.extend(fields);
        }
        self.lines.push_str(&entry.to_string());
        self.lines.push('\n');
        self.last = Some(id);
    }

    fn message(&mut self, rng: &mut Rng, mut message: Value) {
        message["timestamp"] = json!(self.clock_ms + 500);
        self.entry(rng, "message", json!({ "message": message }));
    }

    fn user(&mut self, rng: &mut Rng, text: &str) {
        let content = json!([{"type": "text", "text": text}]);
        self.message(rng, json!({"role": "user", "content": content}));
    }

    fn assistant(&mut self, rng: &mut Rng, content: Value, stop: &str) {
        self.message(
            rng,
            json!({"role": "assistant", "content": content, "api": "openai-completions",
                   "provider": "openai", "model": "gpt-4.1-mini", "stopReason": stop,
                   "usage": {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0,
                             "totalTokens": 1500}}),
        );
    }

    fn tool(&mut self, rng: &mut Rng, name: &str, arguments: Value, output: &str) {
        let call_id = format!("call_{}", self.next_id);
        let call =
            json!([{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}]);
        self.assistant(rng, call, "toolUse");
        self.message(
            rng,
            json!({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                   "content": [{"type": "text", "text": output}], "isError": false}),
        );
    }
}

/// A word of the heading worth grepping for (the longest).
fn grep_word(section: &Section) -> String {
    section
        .heading
        .split(|c: char| !c.is_alphanumeric())
        .max_by_key(|w| w.len())
        .unwrap_or("usage")
        .to_lowercase()
}

/// The tool call the assistant makes before answering about `section`, if any.
fn look_up(rng: &mut Rng, file: &mut SessionFile, section: &Section, text: &str) {
    let path = format!("node_modules/{}", section.file);
    match rng.next() % 4 {
        0 | 1 => {
            let body = format!(
                "## {}\n\n{}",
                section.heading,
                section.paragraphs.join("\n\n")
            );
            file.tool(
                rng,
                "read",
                json!({"path": path}),
                head(&body, TOOL_OUTPUT_BYTES),
            );
        }
        2 => {
            let word = grep_word(section);
            let lines: Vec<String> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| l.to_lowercase().contains(&word))
                .take(12)
                .map(|(n, l)| format!("{}:{}", n + 1, head(l, 200)))
                .collect();
            let output = if lines.is_empty() {
                "(no output)".to_string()
            } else {
                lines.join("\n")
            };
            let command = format!("grep -n -i '{word}' {path} | head -12");
            file.tool(rng, "bash", json!({"command": command}), &output);
        }
        _ => {}
    }
}

fn answer(rng: &mut Rng, section: &Section) -> String {
    let mut text = fill(rng.pick(INTROS), section);
    let start = (rng.next() % section.paragraphs.len() as u64) as usize;
    for paragraph in section
        .paragraphs
        .iter()
        .skip(start)
        .take(1 + (rng.next() % 3) as usize)
    {
        if text.len() + paragraph.len() > ANSWER_BYTES && !text.is_empty() {
            break;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(head(paragraph, ANSWER_BYTES));
    }
    let closing = rng.pick(CLOSINGS);
    if !closing.is_empty() {
        text.push_str("\n\n");
        text.push_str(closing);
    }
    text
}

/// Writes `count` sessions (`docs-00000`…) under `<agent>/sessions`, from the
/// markdown under `node_modules`; panics when there is none (install it with
/// `npm ci --prefix tools/pi-ref`).
pub fn write(agent: &Path, count: usize) {
    let dir = node_modules();
    let sections = sections(&dir);
    assert!(
        sections.len() > 1_000,
        "{} holds {} markdown sections: run `npm ci --prefix tools/pi-ref --no-audit --no-fund`",
        dir.display(),
        sections.len()
    );
    let files = by_file(&sections);
    let mut texts: std::collections::HashMap<&str, String> = Default::default();
    for i in 0..count {
        let mut rng = Rng((SEED ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
        for _ in 0..4 {
            rng.next();
        }
        // A file first, then one of its sections: a long README does not
        // crowd out the small packages.
        let home = &files[(rng.next() % files.len() as u64) as usize];
        let first = home.start + (rng.next() % home.len as u64) as usize;
        let user = rng.pick(USERS);
        let cwd = format!("/home/{user}/code/{}", rng.pick(PROJECTS));
        let start_ms = FIRST_DAY_MS + (rng.next() % 330) * 86_400_000 + rng.next() % 36_000_000;
        let id = format!("docs-{i:05}");
        let mut file = SessionFile {
            lines: String::new(),
            last: None,
            clock_ms: start_ms,
            next_id: 1,
        };
        let header = json!({"type": "session", "version": 3, "id": id, "timestamp": iso(start_ms as i64), "cwd": cwd});
        file.lines = format!("{header}\n");
        file.entry(
            &mut rng,
            "model_change",
            json!({"provider": "openai", "modelId": "gpt-4.1-mini"}),
        );
        file.entry(
            &mut rng,
            "thinking_level_change",
            json!({"thinkingLevel": "off"}),
        );
        let turns = 2 + (rng.next() % 5) as usize;
        for turn in 0..turns {
            // Later turns stay in the same file mostly (the next sections),
            // sometimes move to another package.
            let index = match (turn, rng.next() % 5) {
                (0, _) => first,
                (_, 0) => (rng.next() % sections.len() as u64) as usize,
                _ => {
                    home.start + (first - home.start + turn + (rng.next() % 3) as usize) % home.len
                }
            };
            let section = &sections[index];
            let template = if turn == 0 {
                rng.pick(OPENERS)
            } else {
                rng.pick(FOLLOW_UPS)
            };
            let mut ask = fill(template, section);
            if rng.next() % 6 == 0 {
                // Users paste what they are looking at.
                let pasted = head(&section.paragraphs[0], 400);
                ask = format!("{ask}\n\n{pasted}");
            }
            file.user(&mut rng, &ask);
            let source = texts.entry(section.file.as_str()).or_insert_with(|| {
                std::fs::read_to_string(dir.join(&section.file)).unwrap_or_default()
            });
            look_up(&mut rng, &mut file, section, source);
            let reply = answer(&mut rng, section);
            file.assistant(&mut rng, json!([{"type": "text", "text": reply}]), "stop");
        }
        if rng.next() % 8 == 0 {
            let name = sections[first].heading.clone();
            file.entry(&mut rng, "session_info", json!({ "name": name }));
        }
        let name = format!(
            "{}_{id}.jsonl",
            iso(start_ms as i64).replace([':', '.'], "-")
        );
        let path = project_dir(agent, &cwd).join(name);
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(file.lines.as_bytes()))
            .expect("write a docs session");
    }
}
