//! Writing pi session files (version 3) and meta files for the search tests.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_index::store::{Query, SessionHit, Store};

/// A session being written: entries are appended to the file as they are added.
pub struct Writer {
    pub path: PathBuf,
    pub id: String,
    last: Option<String>,
    n: usize,
}

pub fn project_dir(agent_dir: &Path, cwd: &str) -> PathBuf {
    let dir = agent_dir
        .join("sessions")
        .join(session_index::session::discovery::encode_cwd(cwd));
    std::fs::create_dir_all(&dir).expect("create the project dir");
    dir
}

impl Writer {
    pub fn new(agent_dir: &Path, cwd: &str, id: &str) -> Writer {
        let path = project_dir(agent_dir, cwd).join(format!("2026-11-01T10-00-00-000Z_{id}.jsonl"));
        let header = json!({"type":"session","version":3,"id":id,"timestamp":"2026-11-01T10:00:00.000Z","cwd":cwd});
        std::fs::write(&path, format!("{header}\n")).expect("write the header");
        Writer {
            path,
            id: id.to_string(),
            last: None,
            n: 0,
        }
    }

    fn append(&mut self, parent: Option<&str>, entry: Value) -> String {
        self.n += 1;
        let id = format!("{}e{:04}", &self.id[..self.id.len().min(4)], self.n);
        let mut entry = entry;
        entry["id"] = json!(id);
        entry["parentId"] = json!(parent);
        entry["timestamp"] = json!("2026-11-01T10:00:01.000Z");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .expect("open to append");
        writeln!(file, "{entry}").expect("append");
        self.last = Some(id.clone());
        id
    }

    fn message(&mut self, parent: Option<&str>, message: Value) -> String {
        self.append(parent, json!({"type":"message","message":message}))
    }

    pub fn user(&mut self, text: &str) -> String {
        let parent = self.last.clone();
        self.user_after(parent.as_deref(), text)
    }

    pub fn user_after(&mut self, parent: Option<&str>, text: &str) -> String {
        self.message(parent, json!({"role":"user","content":text,"timestamp":1}))
    }

    pub fn assistant(&mut self, text: &str) -> String {
        let parent = self.last.clone();
        self.message(
            parent.as_deref(),
            json!({"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m",
                   "stopReason":"stop","timestamp":2}),
        )
    }

    /// An assistant tool call and its result.
    pub fn tool(&mut self, name: &str, args: Value, output: &str) -> String {
        let parent = self.last.clone();
        let call = self.message(
            parent.as_deref(),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":name,"arguments":args}],
                   "provider":"p","model":"m","stopReason":"toolUse","timestamp":2}),
        );
        self.message(
            Some(&call),
            json!({"role":"toolResult","toolCallId":"c1","toolName":name,"content":[{"type":"text","text":output}],
                   "isError":false,"timestamp":3}),
        )
    }

    pub fn image(&mut self, data: &str) -> String {
        let parent = self.last.clone();
        self.message(
            parent.as_deref(),
            json!({"role":"user","content":[{"type":"text","text":"see the screenshot"},
                   {"type":"image","mimeType":"image/png","data":data}],"timestamp":1}),
        )
    }
}

/// A meta file as the indexer writes it.
pub fn write_meta(agent_dir: &Path, w: &Writer, name: &str, summary: &str, tags: &[&str]) {
    let dir = agent_dir.join("sessions-meta");
    std::fs::create_dir_all(&dir).expect("create the meta dir");
    let meta = json!({
        "schemaVersion": 1, "sessionId": w.id, "sessionFile": w.path, "name": name, "description": "",
        "summary": summary, "tags": tags, "cwd": "/p", "createdAt": "2026-11-01T10:00:00.000Z",
        "updatedAt": "2026-11-01T10:00:00.000Z", "model": "local/extractive",
        "decisions": ["keep the index a cache"]
    });
    std::fs::write(dir.join(format!("{}.meta.json", w.id)), meta.to_string())
        .expect("write the meta");
}

/// Copy the shared real and generated sessions in as distractors.
pub fn copy_real_sessions(agent_dir: &Path) -> usize {
    let shared = super::shared_dir::shared_dir();
    let dir = project_dir(agent_dir, "/home/runner/work/other");
    let mut n = 0;
    for set in ["real", "generated"] {
        let Ok(read) = std::fs::read_dir(shared.join("fixtures/pi-sessions").join(set)) else {
            continue;
        };
        for e in read.flatten() {
            if e.path().extension().is_some_and(|x| x == "jsonl") {
                std::fs::copy(e.path(), dir.join(e.file_name())).expect("copy a fixture");
                n += 1;
            }
        }
    }
    n
}

/// The store of `agent_dir`, ranking with the sentence encoder installed in
/// `model` (`None`: by words only), brought up to date with every session.
pub fn store_updated(agent_dir: &Path, model: Option<&Path>) -> Store {
    let mut index = Store::open(agent_dir)
        .expect("open the index")
        .with_model(model.map(Path::to_path_buf));
    index
        .update(
            &agent_dir.join("sessions"),
            &agent_dir.join("sessions-meta"),
            None,
        )
        .expect("update the index");
    index
}

/// The five best sessions for the query `text`.
pub fn top5(index: &Store, text: &str) -> Vec<SessionHit> {
    index
        .search(&Query {
            limit: 5,
            ..Query::parse(text).expect("a valid query")
        })
        .expect("search")
}

/// The session ids of `hits`, best first.
pub fn hit_ids(hits: &[SessionHit]) -> Vec<String> {
    hits.iter().map(|h| h.session.id.clone()).collect()
}
