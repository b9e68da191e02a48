//! Temp agent directories for catalog and reference tests: synthetic
//! sessions and meta files, and copies of the shared pi session fixtures
//! (copied into the temp dir at test time, never into the repo).
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_ext_abi::protocol::{ContentPart, SessionContext, ToolCall};
use serde_json::{json, Value};
use session_index::plugin::host::{Effect, Host, RecordingHost};
use session_index::plugin::state::Services;

pub use super::shared_dir::shared_dir;

pub fn fixture(rel: &str) -> PathBuf {
    shared_dir().join("fixtures/pi-sessions").join(rel)
}

/// pi's directory name for a cwd.
pub fn encode_cwd(cwd: &str) -> String {
    format!(
        "--{}--",
        cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-")
    )
}

pub struct Agent {
    pub tmp: tempfile::TempDir,
    pub dir: PathBuf,
}

impl Agent {
    pub fn new() -> Agent {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("agent");
        std::fs::create_dir_all(dir.join("sessions")).expect("mkdir");
        std::fs::create_dir_all(dir.join("sessions-meta")).expect("mkdir");
        Agent { tmp, dir }
    }

    pub fn sessions(&self) -> PathBuf {
        self.dir.join("sessions")
    }

    pub fn meta_dir(&self) -> PathBuf {
        self.dir.join("sessions-meta")
    }

    /// Write a synthetic session; returns its path.
    pub fn session(&self, s: &Synth) -> PathBuf {
        let dir = self.sessions().join(encode_cwd(&s.cwd));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join(format!("2026-02-20T12-00-00-000Z_{}.jsonl", s.id));
        let mut header = json!({"type": "session", "version": 3, "id": s.id, "timestamp": s.created, "cwd": s.cwd});
        if let Some(p) = &s.parent {
            header["parentSession"] = json!(p);
        }
        let mut lines = vec![header];
        let mut parent: Value = Value::Null;
        let mut n = 0;
        let mut push = |mut v: Value, lines: &mut Vec<Value>| {
            n += 1;
            let id = format!("e{n:07}");
            v["id"] = json!(id);
            v["parentId"] = parent.clone();
            v["timestamp"] = json!("2026-02-20T12:00:01.000Z");
            parent = json!(id);
            lines.push(v);
        };
        for (i, text) in s.user.iter().enumerate() {
            let msg = json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_771_588_800_000i64 + i as i64});
            push(json!({"type": "message", "message": msg}), &mut lines);
            let reply = s
                .replies
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("Done with step {i}."));
            let mut content = vec![json!({"type": "text", "text": reply})];
            for f in &s.files_read {
                content.push(json!({"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": f}}));
            }
            let msg = json!({"role": "assistant", "content": content, "provider": "mock", "model": "m", "stopReason": "stop", "timestamp": 1_771_588_800_500i64 + i as i64});
            push(json!({"type": "message", "message": msg}), &mut lines);
        }
        if let Some(name) = &s.name {
            push(json!({"type": "session_info", "name": name}), &mut lines);
        }
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).expect("write session");
        path
    }

    /// Copy a shared fixture into `sessions/<project of its header cwd>/`.
    pub fn copy_fixture(&self, rel: &str) -> PathBuf {
        let src = fixture(rel);
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let header: Value =
            serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or(Value::Null);
        let cwd = header
            .get("cwd")
            .and_then(Value::as_str)
            .unwrap_or("/unknown");
        let dir = self.sessions().join(encode_cwd(cwd));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let dest = dir.join(src.file_name().expect("file name"));
        std::fs::write(&dest, text).expect("copy");
        dest
    }

    /// Write a schemaVersion 1 meta file.
    pub fn meta(
        &self,
        id: &str,
        name: &str,
        description: &str,
        tags: &[&str],
        summary: &str,
        session_file: &Path,
    ) {
        let doc = json!({
            "schemaVersion": 1, "sessionId": id, "sessionFile": session_file, "name": name,
            "description": description, "summary": summary, "tags": tags, "cwd": "/proj/a",
            "createdAt": "2026-02-20T12:00:00.000Z", "updatedAt": "2026-02-20T13:00:00.000Z",
            "model": "local/extractive", "files": {"read": ["src/a.rs"], "modified": ["src/b.rs"]}
        });
        std::fs::write(
            self.meta_dir().join(format!("{id}.meta.json")),
            doc.to_string(),
        )
        .expect("write meta");
    }

    pub fn ctx(&self, cwd: &str) -> SessionContext {
        SessionContext {
            cwd: cwd.into(),
            agent_dir: self.dir.to_string_lossy().into_owned(),
            ..Default::default()
        }
    }

    /// A Services over this agent dir with a recording host.
    pub fn services(&self, cwd: &str, config: &str) -> (Arc<Services>, Arc<RecordingHost>) {
        let rec = RecordingHost::new(self.ctx(cwd));
        let host: Host = rec.clone();
        let services = Services::new(host, self.dir.clone(), config);
        (services, rec)
    }

    /// `query_session` called through the plugin's router as pi calls it
    /// (from another project, `/elsewhere`): the answer's text and details.
    pub fn query_session(&self, services: &Arc<Services>, session: &str, question: &str) -> String {
        let call = ToolCall {
            v: 1,
            tool: "query_session".into(),
            tool_call_id: "t1".into(),
            params: json!({"session": session, "question": question}),
            ctx: self.ctx("/elsewhere"),
        };
        let plugin = session_index::plugin::router::SessionIndexPlugin::new(services.clone());
        let result = plugin.call_tool(call).expect("query_session answers");
        let text: String = result
            .content
            .iter()
            .map(|ContentPart::Text { text }| text.as_str())
            .collect();
        format!("{text}\n{}", result.details)
    }
}

/// A synthetic session.
#[derive(Clone)]
pub struct Synth {
    pub id: String,
    pub cwd: String,
    pub created: String,
    pub name: Option<String>,
    pub user: Vec<String>,
    pub replies: Vec<String>,
    pub files_read: Vec<String>,
    pub parent: Option<String>,
}

impl Synth {
    pub fn new(id: &str, cwd: &str) -> Synth {
        Synth {
            id: id.into(),
            cwd: cwd.into(),
            created: "2026-02-20T12:00:00.000Z".into(),
            name: None,
            user: vec![format!("Work on task {id}")],
            replies: Vec::new(),
            files_read: Vec::new(),
            parent: None,
        }
    }
    pub fn name(mut self, n: &str) -> Synth {
        self.name = Some(n.into());
        self
    }
    pub fn user(mut self, u: &[&str]) -> Synth {
        self.user = u.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn replies(mut self, r: &[&str]) -> Synth {
        self.replies = r.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn parent(mut self, p: &Path) -> Synth {
        self.parent = Some(p.to_string_lossy().into_owned());
        self
    }
    pub fn reads(mut self, f: &[&str]) -> Synth {
        self.files_read = f.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// `before_agent_start` with `text` through the plugin's event dispatch.
pub fn prompt(agent: &Agent, config: &str, cwd: &str, text: &str) -> (Value, Arc<RecordingHost>) {
    let (services, rec) = agent.services(cwd, config);
    let plugin = session_index::plugin::router::SessionIndexPlugin::new(services);
    let call = pi_ext_abi::protocol::EventCall {
        v: 1,
        event: "before_agent_start".into(),
        payload: json!({"prompt": text, "systemPrompt": "sys"}),
        ctx: agent.ctx(cwd),
    };
    (plugin.on_event(call).expect("event"), rec)
}

pub fn appended(rec: &RecordingHost, custom_type: &str) -> Vec<Value> {
    rec.effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::AppendEntry {
                custom_type: t,
                data,
            } if t == custom_type => Some(data),
            _ => None,
        })
        .collect()
}

pub fn notifications(rec: &RecordingHost) -> Vec<String> {
    rec.effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Notify { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}
