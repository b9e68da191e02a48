//! Deterministic pi v3 session files for the reader bench.
//!
//! The files are shaped like the heavy sessions pi users report (hundreds of
//! MB to GB): most bytes are base64 images and long tool outputs, with a
//! realistic amount of user/assistant text, thinking and tool calls, one
//! compaction and one abandoned branch. Every line is written as pi writes it
//! (`JSON.stringify` key order and escaping), so pi itself opens the files.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use session_index::time::iso_from_millis as iso;

use super::pools::{
    push_escaped, Pools, Rng, COMMANDS, MAX_IMAGE_BYTES, MAX_TOOL_OUTPUT, PATHS, WORDS,
};

/// Bump when the output of [`generate`] changes, so cached files are rebuilt.
pub const GEN_VERSION: u32 = 1;

/// Byte counts by kind, written next to the file and into the results.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GenStats {
    pub bytes: u64,
    pub lines: u64,
    pub image_bytes: u64,
    pub images: u64,
    pub tool_output_bytes: u64,
    pub tool_results: u64,
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub abandoned_entries: u64,
}

struct Writer<'p> {
    rng: Rng,
    out: BufWriter<File>,
    pools: &'p Pools,
    line: String,
    scratch: String,
    ids: HashSet<u32>,
    clock_ms: i64,
    leaf: Option<String>,
    tool_seq: u64,
    stats: GenStats,
}

impl Writer<'_> {
    fn new_id(&mut self) -> String {
        loop {
            let id = self.rng.next_u64() as u32;
            if self.ids.insert(id) {
                return format!("{id:08x}");
            }
        }
    }

    /// Start an entry line with pi's base fields; the caller appends the rest.
    fn begin(&mut self, ty: &str) -> String {
        self.clock_ms += self.rng.range(300, 20_000) as i64;
        let id = self.new_id();
        self.line.clear();
        let _ = write!(
            self.line,
            "{{\"type\":\"{ty}\",\"id\":\"{id}\",\"parentId\":"
        );
        match &self.leaf {
            Some(p) => {
                let _ = write!(self.line, "\"{p}\"");
            }
            None => self.line.push_str("null"),
        }
        let _ = write!(self.line, ",\"timestamp\":\"{}\"", iso(self.clock_ms));
        id
    }

    fn finish(&mut self, id: String) -> std::io::Result<()> {
        self.line.push_str("}\n");
        self.out.write_all(self.line.as_bytes())?;
        self.stats.bytes += self.line.len() as u64;
        self.stats.lines += 1;
        self.leaf = Some(id);
        Ok(())
    }

    /// Prose of about `len` bytes, escaped into the current line.
    fn prose(&mut self, len: usize) {
        self.scratch.clear();
        let mut sentence = 0;
        while self.scratch.len() < len {
            let w = *self.rng.pick(WORDS);
            self.scratch.push_str(w);
            sentence += 1;
            if sentence > 6 && self.rng.chance(1, 6) {
                sentence = 0;
                self.scratch
                    .push_str(if self.rng.chance(1, 5) { ".\n\n" } else { ". " });
            } else if self.rng.chance(1, 40) {
                let _ = write!(self.scratch, " `{}` ", self.rng.pick(PATHS));
            } else {
                self.scratch.push(' ');
            }
        }
        let scratch = std::mem::take(&mut self.scratch);
        push_escaped(&mut self.line, &scratch);
        self.scratch = scratch;
    }

    fn image_block(&mut self, min: usize, max: usize) {
        let len = self.rng.range(min, max);
        let (prefix, mime) = if self.rng.chance(1, 2) {
            ("iVBORw0KGgoAAAANSUhEUgAA", "image/png")
        } else {
            ("/9j/4AAQ", "image/jpeg")
        };
        let data = self.pools.base64_slice(&mut self.rng, len);
        let _ = write!(
            self.line,
            "{{\"type\":\"image\",\"data\":\"{prefix}{data}\",\"mimeType\":\"{mime}\"}}"
        );
        self.stats.image_bytes += (prefix.len() + data.len()) as u64;
        self.stats.images += 1;
    }

    fn msg_ts(&mut self) -> i64 {
        self.clock_ms - self.rng.range(0, 40) as i64
    }

    fn user(&mut self) -> std::io::Result<String> {
        let id = self.begin("message");
        self.line.push_str(
            ",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"",
        );
        let len = self.rng.range(40, 700);
        self.prose(len);
        self.line.push_str("\"}");
        if self.rng.chance(1, 12) {
            self.line.push(',');
            self.image_block(400 << 10, MAX_IMAGE_BYTES);
        }
        let ts = self.msg_ts();
        let _ = write!(self.line, "],\"timestamp\":{ts}}}");
        self.stats.user_messages += 1;
        self.finish(id.clone())?;
        Ok(id)
    }

    fn bash_execution(&mut self) -> std::io::Result<()> {
        let id = self.begin("message");
        let cmd = *self.rng.pick(COMMANDS);
        self.line
            .push_str(",\"message\":{\"role\":\"bashExecution\",\"command\":\"");
        push_escaped(&mut self.line, cmd);
        let len = self.rng.range(1 << 10, 40 << 10);
        let out = self.pools.tool_slice(&mut self.rng, len);
        self.stats.tool_output_bytes += out.len() as u64;
        let ts = self.msg_ts();
        let _ = write!(
            self.line,
            "\",\"output\":\"{out}\",\"exitCode\":0,\"cancelled\":false,\"truncated\":false,\"timestamp\":{ts}}}"
        );
        self.finish(id)
    }

    /// One assistant message; returns the tool calls it made as `(id, tool)`.
    fn assistant(&mut self, final_reply: bool) -> std::io::Result<Vec<(String, &'static str)>> {
        let id = self.begin("message");
        self.line
            .push_str(",\"message\":{\"role\":\"assistant\",\"content\":[");
        let mut first = true;
        if self.rng.chance(85, 100) {
            self.line.push_str("{\"type\":\"thinking\",\"thinking\":\"");
            let len = self.rng.range(100, 2000);
            self.prose(len);
            let sig_len = self.rng.range(200, 900);
            let sig = self.pools.base64_slice(&mut self.rng, sig_len);
            let _ = write!(self.line, "\",\"thinkingSignature\":\"{sig}\"}}");
            first = false;
        }
        if final_reply || self.rng.chance(1, 2) {
            if !first {
                self.line.push(',');
            }
            self.line.push_str("{\"type\":\"text\",\"text\":\"");
            let len = if final_reply {
                self.rng.range(200, 2000)
            } else {
                self.rng.range(50, 600)
            };
            self.prose(len);
            self.line.push_str("\"}");
            first = false;
        }
        let mut calls = Vec::new();
        if !final_reply {
            let n = if self.rng.chance(1, 4) { 2 } else { 1 };
            for _ in 0..n {
                if !first {
                    self.line.push(',');
                }
                first = false;
                self.tool_seq += 1;
                let call_id = format!(
                    "toolu_01{:022x}",
                    u128::from(self.rng.next_u64()) << 24 | u128::from(self.tool_seq)
                );
                let tool = self.tool_call(&call_id);
                calls.push((call_id, tool));
            }
        }
        let (input, output) = (self.rng.range(2_000, 180_000), self.rng.range(20, 4_000));
        let (cost_in, cost_out) = (input as f64 * 3.0 / 1e6, output as f64 * 15.0 / 1e6);
        let stop = if final_reply { "stop" } else { "toolUse" };
        let ts = self.msg_ts();
        let _ = write!(
            self.line,
            "],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\
             \"input\":{input},\"output\":{output},\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":{},\"cost\":{{\
             \"input\":{cost_in},\"output\":{cost_out},\"cacheRead\":0,\"cacheWrite\":0,\"total\":{}}}}},\
             \"stopReason\":\"{stop}\",\"timestamp\":{ts}}}",
            input + output,
            cost_in + cost_out
        );
        self.stats.assistant_messages += 1;
        self.finish(id)?;
        Ok(calls)
    }

    fn tool_call(&mut self, call_id: &str) -> &'static str {
        let path = *self.rng.pick(PATHS);
        let _ = write!(
            self.line,
            "{{\"type\":\"toolCall\",\"id\":\"{call_id}\",\"name\":"
        );
        let roll = self.rng.below(100);
        let tool = match roll {
            0..=34 => "read",
            35..=64 => "bash",
            65..=79 => "edit",
            80..=84 => "write",
            85..=94 => "grep",
            _ => "ls",
        };
        let _ = write!(self.line, "\"{tool}\",\"arguments\":{{");
        match tool {
            "bash" => {
                self.line.push_str("\"command\":\"");
                let cmd = *self.rng.pick(COMMANDS);
                push_escaped(&mut self.line, cmd);
                self.line.push('"');
            }
            "edit" => {
                let _ = write!(self.line, "\"path\":\"{path}\",\"oldText\":\"");
                let len = self.rng.range(100, 2000);
                self.prose(len);
                self.line.push_str("\",\"newText\":\"");
                let len = self.rng.range(100, 2500);
                self.prose(len);
                self.line.push('"');
            }
            "write" => {
                let _ = write!(self.line, "\"path\":\"{path}\",\"content\":\"");
                let len = self.rng.range(500, 8000);
                self.prose(len);
                self.line.push('"');
            }
            "grep" => {
                let w = *self.rng.pick(WORDS);
                self.line.push_str("\"pattern\":\"");
                push_escaped(&mut self.line, w);
                self.line.push_str("\",\"path\":\"src\"");
            }
            _ => {
                let _ = write!(self.line, "\"path\":\"{path}\"");
            }
        }
        self.line.push_str("}}");
        tool
    }

    fn tool_result(&mut self, call_id: &str, tool: &str) -> std::io::Result<()> {
        let id = self.begin("message");
        let _ = write!(
            self.line,
            ",\"message\":{{\"role\":\"toolResult\",\"toolCallId\":\"{call_id}\",\"toolName\":\"{tool}\",\"content\":["
        );
        let is_error = tool == "bash" && self.rng.chance(1, 30);
        let path = *self.rng.pick(PATHS);
        let mut details = String::new();
        match tool {
            "read" if self.rng.chance(1, 30) => {
                let mime = if self.rng.chance(1, 2) {
                    "image/png"
                } else {
                    "image/jpeg"
                };
                let _ = write!(
                    self.line,
                    "{{\"type\":\"text\",\"text\":\"Read image file [{mime}]\"}},"
                );
                self.image_block(200 << 10, 2 << 20);
            }
            "read" | "bash" | "grep" | "ls" => {
                let len = match tool {
                    "read" if self.rng.chance(1, 8) => self.rng.range(60 << 10, 300 << 10),
                    "read" => self.rng.range(2 << 10, 60 << 10),
                    "bash" if self.rng.chance(1, 6) => self.rng.range(60 << 10, MAX_TOOL_OUTPUT),
                    "bash" => self.rng.range(100, 30 << 10),
                    "grep" => self.rng.range(1 << 10, 40 << 10),
                    _ => self.rng.range(200, 5 << 10),
                };
                let out = self.pools.tool_slice(&mut self.rng, len);
                let _ = write!(self.line, "{{\"type\":\"text\",\"text\":\"{out}\"}}");
                self.stats.tool_output_bytes += out.len() as u64;
            }
            "edit" => {
                let _ = write!(
                    self.line,
                    "{{\"type\":\"text\",\"text\":\"Successfully replaced text in {path}.\"}}"
                );
                let len = self.rng.range(200, 3000);
                let diff = self.pools.tool_slice(&mut self.rng, len);
                details = format!(",\"details\":{{\"diff\":\"{diff}\"}}");
            }
            _ => {
                let n = self.rng.range(500, 8000);
                let _ = write!(
                    self.line,
                    "{{\"type\":\"text\",\"text\":\"Successfully wrote {n} bytes to {path}\"}}"
                );
            }
        }
        let ts = self.msg_ts();
        let _ = write!(
            self.line,
            "]{details},\"isError\":{is_error},\"timestamp\":{ts}}}"
        );
        self.stats.tool_results += 1;
        self.finish(id)
    }

    /// A user prompt, tool rounds, and the final reply.
    fn turn(&mut self) -> std::io::Result<String> {
        let user_id = self.user()?;
        if self.rng.chance(1, 25) {
            self.bash_execution()?;
        }
        for _ in 0..self.rng.range(1, 7) {
            for (call_id, tool) in self.assistant(false)? {
                self.tool_result(&call_id, tool)?;
            }
        }
        self.assistant(true)?;
        Ok(user_id)
    }

    fn simple(&mut self, ty: &str, fields: &str) -> std::io::Result<String> {
        let id = self.begin(ty);
        self.line.push_str(fields);
        self.finish(id.clone())?;
        Ok(id)
    }
}

/// Write a session of about `target_bytes` to `path`.
pub fn generate(
    path: &Path,
    target_bytes: u64,
    seed: u64,
    pools: &Pools,
) -> std::io::Result<GenStats> {
    let file = File::create(path)?;
    let mut w = Writer {
        rng: Rng::new(seed ^ target_bytes),
        out: BufWriter::with_capacity(8 << 20, file),
        pools,
        line: String::with_capacity(8 << 20),
        scratch: String::new(),
        ids: HashSet::new(),
        clock_ms: 1_768_467_600_000, // 2026-01-15T09:00:00Z
        leaf: None,
        tool_seq: 0,
        stats: GenStats::default(),
    };
    let session_id = format!(
        "019bc1a0-{:04x}-7{:03x}-{:04x}-{:012x}",
        w.rng.below(1 << 16),
        w.rng.below(1 << 12),
        0x8000 | w.rng.below(1 << 14),
        w.rng.below(1 << 48)
    );
    w.line = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{session_id}\",\"timestamp\":\"{}\",\"cwd\":\"/home/dev/projects/billing\"}}\n",
        iso(w.clock_ms)
    );
    w.out.write_all(w.line.as_bytes())?;
    w.stats.bytes += w.line.len() as u64;
    w.stats.lines += 1;
    w.simple(
        "model_change",
        ",\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-5\"",
    )?;
    w.simple("thinking_level_change", ",\"thinkingLevel\":\"medium\"")?;
    let mut user_ids = vec![w.turn()?];
    w.simple(
        "session_info",
        ",\"name\":\"Billing pipeline refactor (bench)\"",
    )?;

    let (compact_at, branch_at) = (target_bytes * 6 / 10, target_bytes * 8 / 10);
    let (mut compacted, mut branched) = (false, false);
    while w.stats.bytes < target_bytes.saturating_sub(target_bytes / 50) {
        user_ids.push(w.turn()?);
        if !compacted && w.stats.bytes >= compact_at {
            compacted = true;
            let kept = user_ids[user_ids.len().saturating_sub(3)].clone();
            let fields = format!(
                ",\"summary\":\"## Goal\\nRefactor the billing pipeline.\\n\\n## Progress\\n- Token bucket limiter done\\n\\n## Next\\n- Webhooks\",\
                 \"firstKeptEntryId\":\"{kept}\",\"tokensBefore\":183211,\"details\":{{\"readFiles\":[\"src/limiter.rs\",\"docs/ARCHITECTURE.md\"],\
                 \"modifiedFiles\":[\"src/billing/pipeline.rs\"]}},\"fromHook\":false"
            );
            w.simple("compaction", &fields)?;
        }
        if !branched && w.stats.bytes >= branch_at {
            branched = true;
            let branch_point = w.leaf.clone();
            let before = w.stats.lines;
            w.turn()?;
            w.turn()?;
            w.stats.abandoned_entries = w.stats.lines - before;
            w.leaf = branch_point.clone();
            let from = branch_point.unwrap_or_else(|| "root".to_string());
            let fields = format!(
                ",\"fromId\":\"{from}\",\"summary\":\"The user explored a different conversation branch before returning here.\\nSummary of that exploration:\\n\\nTried Paddle instead of Stripe; abandoned.\",\
                 \"details\":{{\"readFiles\":[],\"modifiedFiles\":[]}},\"fromHook\":false"
            );
            w.simple("branch_summary", &fields)?;
        }
    }
    let last_user = user_ids.last().cloned().unwrap_or_default();
    w.simple(
        "label",
        &format!(",\"targetId\":\"{last_user}\",\"label\":\"bench-end\""),
    )?;
    w.out.flush()?;
    w.out.get_ref().sync_all()?;
    Ok(w.stats)
}
