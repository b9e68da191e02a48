//! One indexing run: session file → branch → prompt → model → validated
//! summary → meta file. No host effects here (`report` shows them), so the
//! same code serves the plugin, the `/index-session` command and the CLI.

use std::path::{Path, PathBuf};

use crate::features::summarize::extractive::{self, ExtractiveInput};
use crate::features::summarize::summary::{self, IndexSummary};
use crate::model::{self, JsonTask, ModelError, LOCAL_PROVIDER};
use crate::plugin::state::App;
use crate::session::views::{self, FilesTouched};
use crate::session::{self, AgentMessage, Entry, EntryKind, Session, SessionError};
use crate::store::meta::{self, MetaError, MetaUsage, SessionMeta, SCHEMA_VERSION};

/// Custom entry type recorded for every attempt (see [`super::report`]).
pub const ENTRY_TYPE: &str = "session-index:index";

/// Lines are not what bounds the prompt (bytes are), so the line limit of
/// `truncate_tail` is set out of the way.
const NO_LINE_LIMIT: usize = usize::MAX / 2;

/// What to index and how.
#[derive(Debug, Clone)]
pub struct IndexRequest {
    pub session_file: PathBuf,
    /// `<agent dir>/sessions-meta`.
    pub meta_dir: PathBuf,
    /// Leaf of the active branch; `None` is pi's default (last entry).
    pub leaf_id: Option<String>,
    /// Index even when fewer than `minNewUserMessages` are new.
    pub force: bool,
    /// Use the offline model even if a configured model is available.
    pub offline: bool,
}

/// A completed run.
#[derive(Debug, Clone)]
pub enum IndexOutcome {
    /// Below the threshold; nothing was done.
    Skipped {
        session_id: String,
        new_user_messages: usize,
    },
    Indexed(Box<Indexed>),
}

#[derive(Debug, Clone)]
pub struct Indexed {
    pub meta: SessionMeta,
    pub path: PathBuf,
    /// The session's name before this run (latest `session_info` in the file).
    pub previous_session_name: Option<String>,
    /// The user named the session (`/name`): the meta took that name and the
    /// session is not renamed.
    pub user_named: bool,
    pub incremental: bool,
    /// Answers requested from the model (1 offline).
    pub attempts: u32,
    /// Why the offline model served instead of a configured one.
    pub fallback_reason: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("{0}, and the offline model is turned off (offlineFallback)")]
    NoModel(String),
    #[error("{0}: the session has no entries")]
    Empty(PathBuf),
    #[error("{0}: no entry {1:?} (the active leaf) in the session")]
    UnknownLeaf(PathBuf, String),
    #[error("{0}: excluded by privacy.exclude, not indexed")]
    Excluded(PathBuf),
}

/// A failed run, with what the failure entry needs.
#[derive(Debug)]
pub struct Failure {
    pub error: IndexError,
    pub session_id: Option<String>,
    /// `provider/model` that was tried, if one was chosen.
    pub model: Option<String>,
}

/// What the model (or the offline model) produced.
struct Generated {
    summary: IndexSummary,
    /// `provider/model` that answered.
    model: String,
    usage: MetaUsage,
    attempts: u32,
    incremental: bool,
    fallback_reason: Option<String>,
    choice: String,
}

/// Where the answer comes from.
enum Chosen {
    Remote(model::SelectedModel),
    Offline { reason: Option<String> },
}

/// Run one index. `on_start` is called once the run is known to happen (after
/// the threshold check, before the model call).
pub fn index_session(
    app: &App,
    request: &IndexRequest,
    on_start: &dyn Fn(),
) -> Result<IndexOutcome, Failure> {
    let fail = |error: IndexError, session_id: Option<&str>, model: Option<&str>| Failure {
        error,
        session_id: session_id.map(str::to_string),
        model: model.map(str::to_string),
    };
    let session = session::open(&request.session_file).map_err(|e| fail(e.into(), None, None))?;
    let session_id = session.header.id.clone();
    let sid = Some(session_id.as_str());
    if app
        .config
        .privacy
        .excludes(&session.header.cwd, &request.session_file)
    {
        return Err(fail(
            IndexError::Excluded(request.session_file.clone()),
            sid,
            None,
        ));
    }
    let branch = session.branch(request.leaf_id.as_deref());
    let Some(leaf) = branch.last() else {
        let error = match &request.leaf_id {
            Some(leaf) => IndexError::UnknownLeaf(request.session_file.clone(), leaf.clone()),
            None => IndexError::Empty(request.session_file.clone()),
        };
        return Err(fail(error, sid, None));
    };
    let leaf_id = leaf.id.clone();
    let previous = match meta::read_or_missing(&request.meta_dir, &session_id) {
        // A newer session-index owns this meta file: only an explicit index reports it.
        Err(meta::MetaError::Newer { .. }) if !request.force => {
            return Ok(IndexOutcome::Skipped {
                session_id: session_id.clone(),
                new_user_messages: 0,
            })
        }
        previous => previous.map_err(|e| fail(e.into(), sid, None))?,
    };
    let last_indexed = previous
        .as_ref()
        .and_then(|m| m.last_indexed_leaf_id.as_deref());
    // The first entry after the last one indexed (0, the whole branch, when it is not on it).
    let new_start = last_indexed
        .and_then(|id| branch.iter().position(|e| e.id == id))
        .map_or(0, |p| p + 1);
    if !request.force {
        let is_user = |e: &&&Entry| matches!(e.kind, EntryKind::Message(AgentMessage::User { .. }));
        let new_user_messages = branch[new_start..].iter().filter(is_user).count();
        if new_user_messages < app.config.min_new_user_messages as usize {
            return Ok(IndexOutcome::Skipped {
                session_id,
                new_user_messages,
            });
        }
    }
    on_start();

    let chosen = choose_model(app, request.offline).map_err(|e| fail(e, sid, None))?;
    let files = views::files_touched(&branch);
    let session_name = session.session_name(&branch);
    let user_name = user_set_name(&session);
    let cwd = session.header.cwd.clone();
    let taken = project_names(&request.meta_dir, &cwd, &session_id);
    let generated = match chosen {
        Chosen::Offline { reason } => {
            let input = ExtractiveInput {
                branch: &branch,
                session_name: user_name.as_deref(),
                cwd: &cwd,
                files: &files,
            };
            Generated {
                summary: extractive::summarize(&input),
                model: extractive::MODEL_KEY.to_string(),
                usage: MetaUsage::default(),
                attempts: 1,
                incremental: false,
                fallback_reason: reason,
                choice: "offline".into(),
            }
        }
        Chosen::Remote(selected) => {
            let key = selected.key().to_string();
            let incremental = previous
                .as_ref()
                .filter(|_| new_start > 0 && new_start < branch.len());
            let prompt = match incremental {
                Some(prev) => {
                    let text = views::index_text(&branch[new_start..], false);
                    let cut = views::truncate_tail(
                        &text,
                        app.config.indexing.incremental_max_bytes,
                        NO_LINE_LIMIT,
                    );
                    summary::incremental_prompt(prev, &files_text(&files), &cut.text, cut.truncated)
                }
                None => {
                    let (text, cut) =
                        first_index_text(&branch, app.config.indexing.max_input_bytes);
                    summary::full_prompt(
                        user_name.as_deref(),
                        &cwd,
                        &files_text(&files),
                        &text,
                        cut,
                    )
                }
            };
            // A user's name is kept whatever the model proposes, so only the indexer's must be distinct.
            let prompt =
                summary::with_taken_names(prompt, if user_name.is_some() { &[] } else { &taken });
            let task = JsonTask {
                system: summary::SYSTEM_PROMPT.to_string(),
                user: prompt,
                schema_name: summary::SCHEMA_NAME.to_string(),
                schema: summary::json_schema(),
                max_output_tokens: app.config.indexing.max_output_tokens,
            };
            let outcome = selected
                .complete_json::<IndexSummary>(app, &task, &())
                .map_err(|e| {
                    let tried = model::tried_model(&e.to_string())
                        .unwrap_or(&key)
                        .to_string();
                    fail(e.into(), sid, Some(&tried))
                })?;
            let usage = MetaUsage {
                input_tokens: outcome.usage.input_tokens,
                output_tokens: outcome.usage.output_tokens,
                cost_usd: outcome.usage.cost_usd.unwrap_or(0.0),
            };
            Generated {
                summary: outcome.value,
                model: outcome.model,
                usage,
                attempts: outcome.attempts,
                incremental: incremental.is_some(),
                fallback_reason: None,
                choice: outcome.choice,
            }
        }
    };
    let Generated {
        summary: mut result,
        model: model_key,
        usage,
        attempts,
        incremental,
        fallback_reason,
        choice,
    } = generated;
    match &user_name {
        Some(name) => result.name = name.clone(),
        // Offline, or a model that proposed a taken name anyway: the topic or the date is added.
        None => {
            let date = session.header.timestamp.get(..10).unwrap_or_default();
            let own =
                |t: &&String| !t.contains(':') && !extractive::FALLBACK_TAGS.contains(&t.as_str());
            let topics: Vec<String> = result.tags.iter().filter(own).cloned().collect();
            result.name = extractive::distinct_name(&result.name, &taken, &topics, date);
        }
    }

    let session_file =
        std::path::absolute(&request.session_file).unwrap_or_else(|_| request.session_file.clone());
    let session_file = session_file.to_string_lossy().into_owned();
    let parent = session.header.parent_session.clone();
    let (path, meta) = meta::update(&request.meta_dir, &session_id, |current| {
        let now = crate::time::iso_now();
        let created_at = current
            .as_ref()
            .map(|m| m.created_at.clone())
            .filter(|c| !c.is_empty());
        SessionMeta {
            schema_version: SCHEMA_VERSION,
            session_id: session_id.clone(),
            session_file,
            parent_session_file: parent,
            name: result.name,
            description: result.description,
            summary: result.summary,
            tags: summary::normalize_tags(result.tags),
            cwd,
            created_at: created_at.unwrap_or_else(|| now.clone()),
            updated_at: now,
            model: model_key.clone(),
            model_choice: Some(choice.clone()),
            last_indexed_leaf_id: Some(leaf_id.into()),
            usage: Some(usage),
            files: Some(files),
            decisions: result.decisions,
            open_tasks: result.open_tasks,
            extra: current.map(|m| m.extra).unwrap_or_default(),
        }
    })
    .map_err(|e| fail(e.into(), sid, Some(&model_key)))?;
    Ok(IndexOutcome::Indexed(Box::new(Indexed {
        meta,
        path,
        previous_session_name: session_name,
        user_named: user_name.is_some(),
        incremental,
        attempts,
        fallback_reason,
    })))
}

/// The name the user gave the session: the latest `session_info` unless the
/// indexer wrote it. The indexer renames, then appends its [`ENTRY_TYPE`]
/// entry (see [`super::report`]), so its own `session_info` is the one right
/// before such an entry; `/name` (or any other writer) is followed by none.
fn user_set_name(session: &Session) -> Option<String> {
    let entries = &session.entries;
    let at = entries
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::SessionInfo { .. }))?;
    let by_indexer = entries.get(at + 1).is_some_and(
        |e| matches!(&e.kind, EntryKind::Custom { custom_type, .. } if custom_type == ENTRY_TYPE),
    );
    let EntryKind::SessionInfo { name: Some(name) } = &entries[at].kind else {
        return None;
    };
    Some(name.trim().to_string()).filter(|n| !n.is_empty() && !by_indexer)
}

/// Names of the project's other indexed sessions (same cwd), newest first.
fn project_names(meta_dir: &Path, cwd: &str, session_id: &str) -> Vec<String> {
    let mut metas: Vec<SessionMeta> = meta::read_all(meta_dir)
        .into_iter()
        .filter(|m| m.cwd == cwd && m.session_id != session_id && !m.name.trim().is_empty())
        .collect();
    metas.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    metas.into_iter().map(|m| m.name).collect()
}

/// What a model reads for a first index, within `max_bytes`, and whether it
/// was cut: the whole conversation when it fits; else the opening request(s)
/// (usually the goal), the compaction and branch summaries on the branch and
/// the newest messages. Redacted before it is cut, so no cut splits a secret.
fn first_index_text(branch: &[&Entry], max_bytes: usize) -> (String, bool) {
    let redacted = |text: &str| crate::redact::redact(text).into_owned();
    let whole = redacted(&views::index_text(branch, false));
    if whole.len() <= max_bytes {
        return (whole, false);
    }
    let is_assistant =
        |e: &&Entry| matches!(e.kind, EntryKind::Message(AgentMessage::Assistant { .. }));
    let first_answer = branch.iter().position(is_assistant).unwrap_or(branch.len());
    let opening = redacted(&views::index_text(&branch[..first_answer], false));
    let opening = &opening[..crate::text::floor_char_boundary(&opening, max_bytes / 4)];
    let summaries: Vec<String> = branch
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Compaction { summary, .. } => {
                Some(format!("Compaction summary: {}", redacted(summary)))
            }
            EntryKind::BranchSummary { summary, .. } => {
                Some(format!("Branch summary: {}", redacted(summary)))
            }
            _ => None,
        })
        .collect();
    let summaries =
        views::truncate_tail(&summaries.join("\n\n"), max_bytes / 4, NO_LINE_LIMIT).text;
    const GAP: &str = "\n\n[… earlier messages left out …]\n\n";
    let rest = max_bytes.saturating_sub(opening.len() + summaries.len() + 2 * GAP.len());
    let newest = views::truncate_tail(&whole, rest, NO_LINE_LIMIT).text;
    let mut out = format!("{opening}{GAP}");
    if !summaries.is_empty() {
        out.push_str(&format!("{summaries}{GAP}"));
    }
    out.push_str(&newest);
    (out, true)
}

fn choose_model(app: &App, offline: bool) -> Result<Chosen, IndexError> {
    if offline {
        return Ok(Chosen::Offline { reason: None });
    }
    match model::select_model(app) {
        Ok(selected) => Ok(Chosen::Remote(selected)),
        Err(ModelError::Unavailable(reason)) => {
            let listed = app
                .config
                .model_keys
                .iter()
                .any(|k| k.split('/').next() == Some(LOCAL_PROVIDER));
            if app.config.offline_fallback || listed {
                Ok(Chosen::Offline {
                    reason: Some(reason),
                })
            } else {
                Err(IndexError::NoModel(reason))
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Files touched, for the prompt (bounded).
fn files_text(files: &FilesTouched) -> String {
    let mut out = String::new();
    for (label, list) in [("modified", &files.modified), ("read", &files.read)] {
        if list.is_empty() {
            continue;
        }
        let shown: Vec<&str> = list.iter().take(40).map(String::as_str).collect();
        let more = if list.len() > shown.len() {
            format!(" (+{} more)", list.len() - shown.len())
        } else {
            String::new()
        };
        out.push_str(&format!("- {label}: {}{more}\n", shown.join(", ")));
    }
    out
}
