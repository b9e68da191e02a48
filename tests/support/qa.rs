//! The query_session QA fixture: loading questions, locating the shared
//! session fixtures, writing the deterministic synthetic sessions, and
//! measuring evidence recall of the assembled context against a plain
//! newest-bytes tail of the same branch.
//!
//! Shared by `tests/query/recall.rs` and `examples/query_recall.rs` (which
//! includes it with `#[path]`, next to `shared_dir.rs` and `rng.rs`, the
//! two modules it takes from its parent).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};
use session_index::features::query::{self, Prepared};
use session_index::session::{self, AgentMessage, EntryKind, MessageRef, Session};

/// Bytes of the "plain tail" baseline.
pub const TAIL_BYTES: usize = 160 * 1024;

#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    pub id: String,
    /// `real/<file>`, `generated/<file>` or `synthetic:<name>`.
    pub session: String,
    pub question: String,
    pub evidence: Vec<String>,
    #[serde(default)]
    pub forbidden: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Fact {
    pub turn: usize,
    #[serde(default)]
    pub r#in: Option<String>,
    pub text: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SyntheticSpec {
    pub name: String,
    pub turns: usize,
    pub seed: u64,
    pub facts: Vec<Fact>,
}

#[derive(Debug, Clone, Deserialize)]
struct FixtureFile {
    #[serde(default)]
    sessions: Vec<SyntheticSpec>,
    questions: Vec<Question>,
}

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub use super::shared_dir::shared_dir;

/// All questions and synthetic specs under `tests/fixtures/qa/`.
pub fn load_fixture() -> (Vec<Question>, Vec<SyntheticSpec>) {
    let dir = repo_dir().join("tests/fixtures/qa");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/qa")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut questions = Vec::new();
    let mut specs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("fixture");
        let parsed: FixtureFile =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        questions.extend(parsed.questions);
        specs.extend(parsed.sessions);
    }
    (questions, specs)
}

/// Entry id of a synthetic turn's message (`k`: 1 user, 2 call, 3 result, 4 reply).
pub fn synthetic_id(turn: usize, k: usize) -> String {
    format!("{:08x}", 0x1000_0000 + turn * 1000 + k)
}

/// `turn:T` / `turn:T:toolResult` → entry id; other ids unchanged.
pub fn resolve_evidence(id: &str) -> String {
    let mut parts = id.split(':');
    if parts.next() != Some("turn") {
        return id.to_string();
    }
    let turn: usize = parts.next().and_then(|t| t.parse().ok()).expect("turn:N");
    let k = match parts.next() {
        None => 1,
        Some("toolResult") => 3,
        Some("reply") => 4,
        Some(other) => panic!("unknown evidence part {other}"),
    };
    synthetic_id(turn, k)
}

use super::rng::Rng;

const FILES: &[&str] = &[
    "src/db/pool.rs",
    "src/api/search.rs",
    "src/export/csv.rs",
    "src/billing/invoice.rs",
    "src/auth/session.rs",
    "src/jobs/email.rs",
    "src/config/mod.rs",
    "tests/integration/orders.rs",
    "src/storage/s3.rs",
    "src/flags.rs",
    "deploy/ci.yml",
    "src/runtime/shutdown.rs",
];
const NOUNS: &[&str] = &[
    "database",
    "connection pool",
    "latency",
    "export",
    "email",
    "deploy",
    "feature flag",
    "bucket",
    "test",
    "retry",
    "index",
    "migration",
    "cache",
    "queue",
    "timeout",
    "rows",
    "vault",
    "runtime",
    "checkout",
    "search",
];
const VERBS: &[&str] = &[
    "refactor",
    "review",
    "tighten",
    "document",
    "simplify",
    "benchmark",
    "fix",
    "test",
];

/// Write a deterministic synthetic session; returns its path.
pub fn write_synthetic(dir: &Path, spec: &SyntheticSpec) -> PathBuf {
    let mut rng = Rng(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let facts: HashMap<usize, &Fact> = spec.facts.iter().map(|f| (f.turn, f)).collect();
    let mut lines = vec![json!({
        "type": "session", "version": 3, "id": format!("synthetic-{}", spec.name),
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/synthetic"
    })];
    let mut parent: Option<String> = None;
    let ts: u64 = 1_767_225_600_000;
    let push = |lines: &mut Vec<Value>, id: String, message: Value, parent: &mut Option<String>| {
        lines.push(json!({"type": "message", "id": id, "parentId": parent.clone(), "timestamp": "2026-01-01T00:00:00.000Z", "message": message}));
        *parent = Some(id);
    };
    let usage = json!({"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    for turn in 0..spec.turns {
        let file = rng.pick(FILES);
        let noun = rng.pick(NOUNS);
        let verb = rng.pick(VERBS);
        let fact = facts.get(&turn);
        let user_text = match fact {
            Some(f) if f.r#in.is_none() => f.text.clone(),
            _ => format!(
                "Please {verb} the {noun} handling in {file} and keep the {} behaviour.",
                rng.pick(NOUNS)
            ),
        };
        push(
            &mut lines,
            synthetic_id(turn, 1),
            json!({"role": "user", "content": [{"type": "text", "text": user_text}], "timestamp": ts}),
            &mut parent,
        );
        let call_id = format!("call_{turn}");
        push(
            &mut lines,
            synthetic_id(turn, 2),
            json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Let me read {file}.")},
            {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": file}}],
            "api": "openai-completions", "provider": "mock", "model": "mock-1", "usage": usage, "stopReason": "toolUse", "timestamp": ts}),
            &mut parent,
        );
        let mut body = String::new();
        if let Some(f) = fact.filter(|f| f.r#in.as_deref() == Some("toolResult")) {
            body.push_str(&f.text);
            body.push('\n');
        }
        for k in 0..28 {
            let n = rng.pick(NOUNS).replace(' ', "_");
            let v = rng.pick(VERBS);
            body.push_str(&format!(
                "pub fn {v}_{n}_{k}(ctx: &Context) -> Result<(), Error> {{ ctx.{n}.{v}()?; Ok(()) }} // {v} {n}\n"
            ));
        }
        push(
            &mut lines,
            synthetic_id(turn, 3),
            json!({"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": body}], "isError": false, "timestamp": ts}),
            &mut parent,
        );
        let reply = format!(
            "I {verb}ed the {noun} code in {file}: the {} path now handles the {} case and the {} tests pass. \
             Next I would look at the {} module.",
            rng.pick(NOUNS),
            rng.pick(NOUNS),
            rng.pick(NOUNS),
            rng.pick(NOUNS)
        );
        push(
            &mut lines,
            synthetic_id(turn, 4),
            json!({"role": "assistant", "content": [{"type": "text", "text": reply}],
            "api": "openai-completions", "provider": "mock", "model": "mock-1", "usage": usage, "stopReason": "stop", "timestamp": ts}),
            &mut parent,
        );
    }
    let path = dir.join(format!("{}.jsonl", spec.name));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write synthetic session");
    path
}

/// Session files of the fixture: shared ones by relative path, synthetic ones written into `tmp`.
pub fn session_paths(specs: &[SyntheticSpec], tmp: &Path) -> HashMap<String, PathBuf> {
    let shared = shared_dir().join("fixtures/pi-sessions");
    let (questions, _) = load_fixture();
    let mut paths = HashMap::new();
    for q in &questions {
        if !q.session.starts_with("synthetic:") {
            paths.insert(q.session.clone(), shared.join(&q.session));
        }
    }
    for spec in specs {
        paths.insert(
            format!("synthetic:{}", spec.name),
            write_synthetic(tmp, spec),
        );
    }
    paths
}

/// Every branch message as pi would serialize it, newest first, with its entry id.
fn branch_messages(session: &Session) -> Vec<(String, AgentMessage)> {
    let branch = session.branch(None);
    let mut out = Vec::new();
    for entry in branch {
        let message = match &entry.kind {
            EntryKind::Message(m) => m.clone(),
            EntryKind::CustomMessage {
                custom_type,
                content,
                display,
            } => AgentMessage::Custom {
                custom_type: custom_type.clone(),
                content: content.clone(),
                display: *display,
                timestamp: 0,
            },
            EntryKind::Compaction {
                summary,
                tokens_before,
                ..
            } => AgentMessage::CompactionSummary {
                summary: summary.clone(),
                tokens_before: *tokens_before,
                timestamp: 0,
            },
            EntryKind::BranchSummary {
                summary, from_id, ..
            } => AgentMessage::BranchSummary {
                summary: summary.clone(),
                from_id: from_id.clone(),
                timestamp: 0,
            },
            _ => continue,
        };
        out.push((entry.id.to_string(), message));
    }
    out
}

/// Entry ids present in a plain newest-`max_bytes` tail of the serialized
/// branch (an entry counts when any part of it is inside the tail), and the
/// tail's size in bytes.
pub fn tail_entry_ids(session: &Session, max_bytes: usize) -> (BTreeSet<String>, usize) {
    let messages = branch_messages(session);
    let mut ids = BTreeSet::new();
    let mut used = 0;
    for (id, m) in messages.iter().rev() {
        if used >= max_bytes {
            break;
        }
        let text = session_index::session::views::serialize_context_refs([MessageRef::Entry(m)]);
        used += text.len() + 2;
        ids.insert(id.clone());
    }
    (ids, used.min(max_bytes))
}

/// Entry ids whose JSONL line is (at least partly) in the newest `max_bytes`
/// of the raw file: the plainest tail, blind to branches.
pub fn file_tail_entry_ids(path: &Path, max_bytes: usize) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut ids = BTreeSet::new();
    let mut used = 0;
    for line in text.lines().rev() {
        if used >= max_bytes {
            break;
        }
        used += line.len() + 1;
        if let Some(id) = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
        {
            ids.insert(id);
        }
    }
    ids
}

/// Outcome of one question.
#[derive(Debug, Clone)]
#[allow(dead_code)] // the tail fields are read by examples/query_recall.rs only
pub struct Scored {
    pub id: String,
    pub hit: bool,
    pub tail_hit: bool,
    pub forbidden_in_context: Vec<String>,
    pub forbidden_in_tail: Vec<String>,
    pub file_tail_hit: bool,
    pub forbidden_in_file_tail: Vec<String>,
    pub context_tokens: usize,
    pub tail_tokens: usize,
    pub offline_cites_evidence: bool,
    pub offline_cites_unknown: Vec<String>,
}

pub fn score(
    q: &Question,
    session: &Session,
    tail: &(BTreeSet<String>, usize),
    file_tail: &BTreeSet<String>,
    budget: usize,
) -> (Scored, Prepared) {
    let prepared = query::prepare(session, None, None, &q.question, budget).expect("prepare");
    let evidence: Vec<String> = q.evidence.iter().map(|e| resolve_evidence(e)).collect();
    let ids = &prepared.assembled.entry_ids;
    let (tail, tail_bytes) = (&tail.0, tail.1);
    let offline = query::offline_answer(&prepared);
    let cited: Vec<&str> = offline
        .citations
        .iter()
        .map(|c| c.entry_id.as_str())
        .collect();
    let scored = Scored {
        id: q.id.clone(),
        hit: evidence.iter().any(|e| ids.contains(e)),
        tail_hit: evidence.iter().any(|e| tail.contains(e)),
        forbidden_in_context: q
            .forbidden
            .iter()
            .filter(|f| ids.contains(*f))
            .cloned()
            .collect(),
        forbidden_in_tail: q
            .forbidden
            .iter()
            .filter(|f| tail.contains(*f))
            .cloned()
            .collect(),
        file_tail_hit: evidence.iter().any(|e| file_tail.contains(e)),
        forbidden_in_file_tail: q
            .forbidden
            .iter()
            .filter(|f| file_tail.contains(*f))
            .cloned()
            .collect(),
        context_tokens: prepared.assembled.tokens,
        tail_tokens: tail_bytes.div_ceil(4),
        offline_cites_evidence: evidence.iter().any(|e| cited.contains(&e.as_str())),
        offline_cites_unknown: cited
            .iter()
            .filter(|c| !ids.contains(**c))
            .map(|c| c.to_string())
            .collect(),
    };
    (scored, prepared)
}

/// Score every question of the fixture at `budget` tokens.
pub fn run_all(budget: usize) -> Vec<Scored> {
    let (questions, specs) = load_fixture();
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmp = std::env::temp_dir().join(format!("session-index-qa-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    let paths = session_paths(&specs, &tmp);
    type Cached = (Session, (BTreeSet<String>, usize), BTreeSet<String>);
    let mut cache: HashMap<String, Cached> = HashMap::new();
    let mut out = Vec::new();
    for q in &questions {
        let path = &paths[&q.session];
        let (session, tail, file_tail) = cache.entry(q.session.clone()).or_insert_with(|| {
            let session = session::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let tail = tail_entry_ids(&session, TAIL_BYTES);
            (session, tail, file_tail_entry_ids(path, TAIL_BYTES))
        });
        out.push(score(q, session, tail, file_tail, budget).0);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    out
}
