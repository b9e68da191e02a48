//! The session context handed to the plugin, built from a real pi session
//! file. Only the header line is read: pi owns session files and the host
//! never writes them.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use pi_ext_abi::protocol::SessionContext;
use serde::Deserialize;

use crate::error::{one_line, HostError};

/// The agent directory: `cli`, else pi's ([`pi_ext_abi::protocol::agent_dir`]),
/// else `./.pi/agent` when there is no home directory.
pub fn resolve_agent_dir(cli: Option<&Path>) -> PathBuf {
    let pi = || {
        pi_ext_abi::protocol::agent_dir()
            .unwrap_or_else(|| Path::new(".").join(".pi").join("agent"))
    };
    cli.map_or_else(pi, Path::to_path_buf)
}

#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
}

/// Longest header line accepted; a real header is a few hundred bytes.
const MAX_HEADER_BYTES: u64 = 64 * 1024;

/// A session file named by the caller is read by the plugin (and its text
/// may be sent to a model), so it gets the plugin's containment rule: a
/// regular file inside `<agent_dir>/sessions`, symlinks resolved. The one
/// check for every way a session file reaches the plugin: `--session` of
/// the one-shot subcommands and `ctx.sessionFile` of `serve`.
pub fn check_session_file(agent_dir: &Path, file: &Path) -> Result<(), String> {
    let sessions = agent_dir.join("sessions");
    if !sessions.is_dir() {
        return Err(format!(
            "{} is outside the sessions directory {}, which does not exist (is the agent directory right?)",
            file.display(),
            sessions.display()
        ));
    }
    match regular_files::open_inside(&sessions, file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
            "{} is outside the sessions directory {}: only pi's session files are read",
            file.display(),
            sessions.display()
        )),
        Err(e) => Err(format!("{}: {}", file.display(), one_line(&e.to_string()))),
    }
}

/// Build the context for `session_file`, which must be a pi session file
/// inside `<agent_dir>/sessions` ([`check_session_file`]) starting with a
/// header. `cwd` overrides the header's working directory.
pub fn session_context(
    session_file: &Path,
    leaf: Option<&str>,
    agent_dir: &Path,
    cwd: Option<&Path>,
) -> Result<SessionContext, HostError> {
    let shown = session_file.display();
    if session_file.exists() {
        check_session_file(agent_dir, session_file)
            .map_err(|e| HostError::Session(format!("session file {e}")))?;
    }
    let file = regular_files::open_regular(session_file).map_err(|e| {
        let what = if e.kind() == std::io::ErrorKind::NotFound {
            "not found".to_string()
        } else {
            e.to_string()
        };
        HostError::Session(format!("session file {shown}: {what}"))
    })?;
    let mut line = String::new();
    BufReader::new(file.take(MAX_HEADER_BYTES))
        .read_line(&mut line)
        .map_err(|e| {
            HostError::Session(format!(
                "session file {shown}: {}",
                one_line(&e.to_string())
            ))
        })?;
    let header: Header = serde_json::from_str(line.trim()).map_err(|e| {
        HostError::Session(format!(
            "session file {shown}: first line is not a pi session header: {}",
            one_line(&e.to_string())
        ))
    })?;
    if header.kind != "session" {
        return Err(HostError::Session(format!(
            "session file {shown}: first line is a '{}' entry, not a pi session header",
            header.kind
        )));
    }
    let absolute = std::path::absolute(session_file).unwrap_or_else(|_| session_file.to_path_buf());
    let bare = bare_context(agent_dir);
    let cwd = match (cwd, header.cwd) {
        (Some(cwd), _) => cwd.display().to_string(),
        (None, Some(cwd)) if !cwd.is_empty() => cwd,
        _ => bare.cwd.clone(),
    };
    Ok(SessionContext {
        session_file: Some(absolute.display().to_string()),
        session_id: header.id,
        session_dir: absolute.parent().map(|d| d.display().to_string()),
        leaf_id: leaf.map(str::to_string),
        cwd,
        ..bare
    })
}

/// A context without a session (for `info` and plugin start-up; a session's
/// context starts from it). This host reports a command's actions in its
/// result (as it reports every effect) instead of performing them, so it
/// accepts them all.
pub fn bare_context(agent_dir: &Path) -> SessionContext {
    SessionContext {
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        agent_dir: agent_dir.display().to_string(),
        actions: pi_ext_abi::protocol::ACTIONS
            .iter()
            .map(|a| a.to_string())
            .collect(),
        ..SessionContext::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent dir with a sessions directory holding one project.
    fn agent() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("sessions/--w--");
        std::fs::create_dir_all(&project).unwrap();
        (dir, project)
    }

    #[test]
    fn reads_id_and_cwd_from_the_header() {
        let (agent, dir) = agent();
        let agent = agent.path();
        let file = dir.join("s.jsonl");
        std::fs::write(
            &file,
            "{\"type\":\"session\",\"version\":3,\"id\":\"abc\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\n{\"type\":\"message\"}\n",
        )
        .unwrap();
        let before = std::fs::read(&file).unwrap();
        let ctx = session_context(&file, Some("leaf1"), agent, None).unwrap();
        assert_eq!(ctx.session_id.as_deref(), Some("abc"));
        assert_eq!(ctx.cwd, "/w");
        assert_eq!(ctx.leaf_id.as_deref(), Some("leaf1"));
        assert_eq!(ctx.agent_dir, agent.to_str().unwrap());
        assert_eq!(ctx.session_dir.as_deref(), Some(dir.to_str().unwrap()));
        assert_eq!(std::fs::read(&file).unwrap(), before);
        let ctx = session_context(&file, None, agent, Some(Path::new("/other"))).unwrap();
        assert_eq!(ctx.cwd, "/other");
    }

    /// `--session` is read by the plugin (and may be sent to a model): a file
    /// outside `<agent dir>/sessions`, or a link leading out, is refused in one line.
    #[test]
    fn a_session_file_outside_the_sessions_directory_is_refused() {
        let (agent, dir) = agent();
        let elsewhere = tempfile::tempdir().unwrap();
        let foreign = elsewhere.path().join("s.jsonl");
        std::fs::write(&foreign, "{\"type\":\"session\",\"id\":\"x\"}\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&foreign, dir.join("link.jsonl")).unwrap();
        for file in [
            foreign.clone(),
            dir.join("link.jsonl"),
            agent.path().join("s.jsonl"),
        ] {
            if !file.exists() {
                std::fs::write(&file, "{\"type\":\"session\",\"id\":\"x\"}\n").unwrap();
            }
            let err = session_context(&file, None, agent.path(), None)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("is outside the sessions directory") && !err.contains('\n'),
                "{err}"
            );
        }
        let err = session_context(&foreign, None, elsewhere.path(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("which does not exist"), "{err}");
    }

    #[test]
    fn missing_and_foreign_files_are_one_line_errors() {
        let (agent, dir) = agent();
        let agent = agent.path();
        let err = session_context(&dir.join("nope.jsonl"), None, agent, None)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("nope.jsonl: not found"), "{err}");
        let file = dir.join("x.jsonl");
        std::fs::write(&file, "{\"type\":\"message\"}\n").unwrap();
        let err = session_context(&file, None, agent, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a pi session header"), "{err}");
        std::fs::write(&file, "garbage\nmore\n").unwrap();
        let err = session_context(&file, None, agent, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a pi session header") && !err.contains('\n'),
            "{err}"
        );
    }

    #[test]
    fn agent_dir_prefers_the_flag() {
        assert_eq!(
            resolve_agent_dir(Some(Path::new("/x"))),
            PathBuf::from("/x")
        );
    }
}
