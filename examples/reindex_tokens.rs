//! Input sent to the model per re-index on a long session: incremental
//! (previous summary + only the new messages) versus full-tail re-indexing
//! (the newest `maxInputBytes`, 50 KB, every time).
//!
//! The session is replayed as pi writes it (entries appended in order) and
//! indexed every `--every` user messages (default 5, the `agent_end`
//! threshold) through the real indexing code against a loopback mock of the
//! OpenAI API. What is measured is what went over the wire: the bytes of the
//! system prompt and messages of every request, and tokens estimated as
//! chars/4 (pi's own estimate; real tokenizers differ by model).
//!
//!   cargo run --release --example reindex_tokens [-- --session FILE] [--every N] [--turns N]
//!
//! Without `--session`, a long synthetic session in pi's format is generated
//! (`--turns` user messages, default 200).

#[path = "../tests/support/mock_provider.rs"]
#[allow(dead_code)] // the example uses part of it
mod mock_provider;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use mock_provider::{MockProvider, Reply, Wire};
use pi_ext_abi::protocol::SessionContext;
use serde_json::{json, Value};
use session_index::features::summarize::{index_session, IndexOutcome, IndexRequest};
use session_index::plugin::host::RecordingHost;
use session_index::plugin::state::Services;

struct Args {
    session: Option<PathBuf>,
    every: usize,
    turns: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        session: None,
        every: 5,
        turns: 200,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--session" => args.session = Some(PathBuf::from(value()?)),
            "--every" => args.every = value()?.parse().map_err(|e| format!("--every: {e}"))?,
            "--turns" => args.turns = value()?.parse().map_err(|e| format!("--turns: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() -> Result<(), String> {
    let args = parse_args()?;
    let lines: Vec<String> = match &args.session {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => synthetic_session(args.turns),
    }
    .lines()
    .map(str::to_string)
    .collect();
    let user_lines = lines.iter().filter(|l| is_user_message(l)).count();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    println!(
        "session: {} ({} entries, {user_lines} user messages, {:.1} KB); re-index every {} user messages",
        args.session.as_ref().map_or("synthetic".to_string(), |p| p.display().to_string()),
        lines.len() - 1,
        bytes as f64 / 1024.0,
        args.every
    );
    let full = replay(&lines, args.every, false)?;
    let incremental = replay(&lines, args.every, true)?;
    report("full-tail (newest 50 KB each time)", &full);
    report(
        "incremental (previous summary + new messages)",
        &incremental,
    );
    let total = |r: &[Measured]| r.iter().map(|m| m.bytes).sum::<usize>();
    let later = |r: &[Measured]| r.iter().skip(1).map(|m| m.bytes).sum::<usize>();
    println!(
        "ratio incremental/full: {:.3} overall, {:.3} over re-indexes (excluding the shared first index)",
        total(&incremental) as f64 / total(&full) as f64,
        later(&incremental) as f64 / later(&full).max(1) as f64
    );
    Ok(())
}

struct Measured {
    /// Bytes of the system prompt and message texts sent (all attempts).
    bytes: usize,
    incremental: bool,
}

fn report(label: &str, runs: &[Measured]) {
    let bytes: usize = runs.iter().map(|m| m.bytes).sum();
    let incremental = runs.iter().filter(|m| m.incremental).count();
    let max = runs.iter().map(|m| m.bytes).max().unwrap_or(0);
    println!(
        "{label}: {} indexes ({incremental} incremental), input {:.1} KB ≈ {} tokens total, {} tokens/index on average, {} max",
        runs.len(),
        bytes as f64 / 1024.0,
        bytes / 4,
        bytes / 4 / runs.len().max(1),
        max / 4
    );
}

/// Append the session entry by entry and index after every `every` user
/// messages (and at the end). `keep_meta: false` deletes the meta file before
/// each index, so every index is a full one.
fn replay(lines: &[String], every: usize, keep_meta: bool) -> Result<Vec<Measured>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let agent_dir = dir.path().join("agent");
    let project = agent_dir.join("sessions/--replay--");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    let session_file = project.join("replay.jsonl");
    let meta_dir = agent_dir.join("sessions-meta");
    let mock = MockProvider::start(Wire::OpenAi);
    let mut provider = mock.provider_config();
    provider["noApiKey"] = json!(true);
    let config = json!({"modelKeys": ["openai/mock"], "providers": {"openai": provider}, "useHostModels": false,
        "offlineFallback": false});
    let host = RecordingHost::new(SessionContext {
        agent_dir: agent_dir.to_string_lossy().into(),
        ..Default::default()
    });
    let services: Arc<Services> =
        Services::new(host, dir.path().to_path_buf(), &config.to_string());

    let mut file = std::fs::File::create(&session_file).map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    let mut user_seen = 0;
    let index_now = |file: &mut std::fs::File, runs: &mut Vec<Measured>| -> Result<(), String> {
        file.flush().map_err(|e| e.to_string())?;
        if !keep_meta {
            let _ = std::fs::remove_dir_all(&meta_dir);
        }
        mock.push(Reply::answer_json(&model_answer(runs.len())));
        let before = mock.requests().len();
        let request = IndexRequest {
            session_file: session_file.clone(),
            meta_dir: meta_dir.clone(),
            leaf_id: None,
            force: true,
            offline: false,
            replace: session_index::store::meta::Replace::KeepModelWritten,
            past_cap: false,
        };
        let outcome = index_session(&services.model_env(), &request, &|| {})
            .map_err(|f| f.error.to_string())?;
        let IndexOutcome::Indexed(indexed) = outcome else {
            return Err("unexpected skip".into());
        };
        let bytes = mock.requests()[before..]
            .iter()
            .map(|r| r.texts().len())
            .sum();
        runs.push(Measured {
            bytes,
            incremental: indexed.incremental,
        });
        Ok(())
    };
    for (i, line) in lines.iter().enumerate() {
        // Index before the user message that starts the next batch: agent_end of the previous run.
        if i > 0 && is_user_message(line) {
            if user_seen > 0 && user_seen % every == 0 {
                index_now(&mut file, &mut runs)?;
            }
            user_seen += 1;
        }
        writeln!(file, "{line}").map_err(|e| e.to_string())?;
    }
    // agent_end of the last run.
    index_now(&mut file, &mut runs)?;
    Ok(runs)
}

fn is_user_message(line: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .is_ok_and(|e| e["type"] == "message" && e["message"]["role"] == "user")
}

/// A realistic answer: the summary grows with the session, as real ones do.
fn model_answer(n: usize) -> Value {
    let done: Vec<String> = (0..n.min(12))
        .map(|i| format!("- Phase {i}: module_{i} refactored and tested"))
        .collect();
    json!({
        "name": "Refactor the billing service modules",
        "description": "The user is refactoring the billing service module by module. Each phase moves logic behind traits and adds tests.",
        "summary": format!(
            "## Goal\nRefactor the billing service into testable modules (PROJ-100).\n\n## Key Decisions\n- Traits per external system\n- Money as integer cents\n- Token bucket in src/limiter.rs\n\n## Outcome\n{}\n\n## Next Steps\n- Continue with module_{n}\n- Update the docs",
            done.join("\n")
        ),
        "tags": ["billing", "refactoring", "rust", "ticket:PROJ-100"],
        "decisions": ["Traits per external system", "Money as integer cents"],
        "openTasks": [format!("Refactor module_{n}")],
    })
}

/// A long session in pi's v3 format: user requests, assistant answers with a
/// tool call, tool results, in phases of related work.
fn synthetic_session(turns: usize) -> String {
    const WORDS: &[&str] = &[
        "invoice",
        "ledger",
        "refund",
        "customer",
        "currency",
        "rounding",
        "trait",
        "adapter",
        "retry",
        "webhook",
        "schema",
        "migration",
        "latency",
        "cache",
        "tax",
        "discount",
        "subscription",
        "proration",
        "audit",
        "report",
        "the",
        "and",
        "with",
        "before",
        "after",
        "because",
        "so",
        "then",
        "we",
        "should",
        "keep",
        "move",
        "test",
    ];
    let mut text = Words {
        seed: 0x2545_f491_4f6c_dd1d,
        words: WORDS,
    };
    let mut out = vec![
        json!({"type": "session", "version": 3, "id": "replay-session-0001",
        "timestamp": "2026-11-22T00:00:00.000Z", "cwd": "/home/user/billing"})
        .to_string(),
    ];
    let mut parent = Value::Null;
    let mut id = 0u32;
    let mut push = |out: &mut Vec<String>, parent: &mut Value, message: Value| {
        id += 1;
        let entry_id = format!("{id:08x}");
        out.push(
            json!({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-11-22T00:00:00.000Z",
                "message": message})
            .to_string(),
        );
        *parent = json!(entry_id);
    };
    for t in 0..turns {
        let phase = t / 10;
        let user = format!(
            "Step {t}: in module_{phase}.rs, {}. {}?",
            text.sentence(30),
            text.sentence(20)
        );
        push(
            &mut out,
            &mut parent,
            json!({"role": "user", "content": [{"type": "text", "text": user}], "timestamp": t}),
        );
        let call = json!({"type": "toolCall", "id": format!("call_{t}"), "name": "read",
            "arguments": {"path": format!("src/module_{phase}.rs")}});
        push(
            &mut out,
            &mut parent,
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("Reading module_{phase}.rs.")}, call],
                "api": "openai-completions", "provider": "mock", "model": "mock-1", "stopReason": "toolUse", "timestamp": t}),
        );
        let file_text = (0..40)
            .map(|_| format!("    let {} = {};", text.word(), text.sentence(6)))
            .collect::<Vec<_>>()
            .join("\n");
        push(
            &mut out,
            &mut parent,
            json!({"role": "toolResult", "toolCallId": format!("call_{t}"), "toolName": "read",
                "content": [{"type": "text", "text": file_text}], "isError": false, "timestamp": t}),
        );
        let answer = (0..6)
            .map(|_| format!("{}.", text.sentence(25)))
            .collect::<Vec<_>>()
            .join(" ");
        push(
            &mut out,
            &mut parent,
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("Done with step {t}. {answer}")}],
                "api": "openai-completions", "provider": "mock", "model": "mock-1", "stopReason": "stop", "timestamp": t}),
        );
    }
    out.join("\n") + "\n"
}

/// Deterministic pseudo-random words (xorshift), so every run replays the same session.
struct Words {
    seed: u64,
    words: &'static [&'static str],
}

impl Words {
    fn word(&mut self) -> &'static str {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.words[(self.seed % self.words.len() as u64) as usize]
    }

    fn sentence(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}
