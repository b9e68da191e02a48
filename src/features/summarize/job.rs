//! One indexing run: session file → branch → prompt → model → validated
//! summary → meta file. No host effects here (`report` shows them), so the
//! same code serves the plugin, the `/index-session` command and the CLI.

use std::path::{Path, PathBuf};

use crate::features::summarize::extractive::{self, ExtractiveInput};
use crate::features::summarize::summary::{self, IndexSummary};
use crate::model::spend::Kind;
use crate::model::{self, JsonTask, ModelEnv, ModelError, LOCAL_PROVIDER};
use crate::session::views::{self, FilesTouched};
use crate::session::{self, AgentMessage, Entry, EntryKind, Session, SessionError};
use crate::store::meta::{
    self, MetaError, MetaUsage, ModelChoice, Replace, SessionMeta, SCHEMA_VERSION,
};

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
    /// Whether the offline model may replace a meta a model wrote (only when
    /// the user said so: `session-index index --force`).
    pub replace: Replace,
    /// The user chose to spend past the daily cap (`--over-cap`).
    pub past_cap: bool,
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
    /// The offline model would have replaced the meta a model wrote: kept.
    Kept {
        session_id: String,
        model: String,
    },
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

/// What a model (or the offline model) produced.
struct Generated {
    summary: IndexSummary,
    /// `provider/model` that answered.
    model: String,
    usage: MetaUsage,
    attempts: u32,
    incremental: bool,
    fallback_reason: Option<String>,
    choice: ModelChoice,
}

/// Where the answer comes from.
enum Chosen {
    Remote(model::SelectedModel),
    Offline { reason: Option<String> },
}

/// A session read for a run that is going to happen: what every phase after
/// the threshold needs.
struct Reading<'s> {
    session: &'s Session,
    branch: Vec<&'s Entry>,
    leaf_id: String,
    previous: Option<SessionMeta>,
    /// The first entry of `branch` after the last one indexed (0: all of it).
    new_start: usize,
    /// The name the user gave the session, which the meta keeps.
    user_name: Option<String>,
    /// Names of the project's other sessions, which the meta's must differ from.
    taken: Vec<String>,
    files: FilesTouched,
}

/// Run one index. `on_start` is called once the run is known to happen (after
/// the threshold check, before the model call). The phases: read the
/// session and decide whether to run, generate the summary (a model, or the
/// offline one), name it and write the meta file.
pub fn index_session(
    env: &ModelEnv,
    request: &IndexRequest,
    on_start: &dyn Fn(),
) -> Result<IndexOutcome, Failure> {
    let session = session::open(&request.session_file).map_err(|e| fail(e.into(), None, None))?;
    index_parsed(env, request, &session, on_start)
}

/// [`index_session`] of a session already read from `request.session_file`
/// (a caller that read it to decide whether to index it reads it once).
pub fn index_parsed(
    env: &ModelEnv,
    request: &IndexRequest,
    session: &Session,
    on_start: &dyn Fn(),
) -> Result<IndexOutcome, Failure> {
    let sid = Some(session.header.id.as_str());
    let reading = match read(env, request, session).map_err(|e| fail(e, sid, None))? {
        Ok(reading) => reading,
        Err(skipped) => return Ok(skipped),
    };
    on_start();
    let chosen = choose_model(env, request.offline).map_err(|e| fail(e, sid, None))?;
    if let Some(kept) = kept_from_offline(request, &reading, &chosen) {
        return Ok(kept);
    }
    let generated = generate(env, request, &reading, chosen)
        .map_err(|(e, tried)| fail(e, sid, tried.as_deref()))?;
    let model = generated.model.clone();
    match write(request, reading, generated) {
        // Another process's model wrote it since this run read it.
        Err(IndexError::Meta(MetaError::ModelWritten { model, .. })) => Ok(IndexOutcome::Kept {
            session_id: session.header.id.clone(),
            model,
        }),
        written => written.map_err(|e| fail(e, sid, Some(&model))),
    }
}

/// The run would put the offline model's meta over one a model wrote: it
/// stops before generating (the store refuses such a write anyway, also when
/// the model's lands while this run works).
fn kept_from_offline(
    request: &IndexRequest,
    reading: &Reading<'_>,
    chosen: &Chosen,
) -> Option<IndexOutcome> {
    let previous = reading.previous.as_ref()?;
    let offline = matches!(chosen, Chosen::Offline { .. });
    (offline && request.replace == Replace::KeepModelWritten && previous.written_by_model()).then(
        || IndexOutcome::Kept {
            session_id: reading.session.header.id.clone(),
            model: previous.model.clone(),
        },
    )
}

fn fail(error: IndexError, session_id: Option<&str>, model: Option<&str>) -> Failure {
    Failure {
        error,
        session_id: session_id.map(str::to_string),
        model: model.map(str::to_string),
    }
}

/// The session's branch and previous meta, unless the run is refused
/// (excluded, no such leaf) or skipped (below the threshold, a newer meta).
fn read<'s>(
    env: &ModelEnv,
    request: &IndexRequest,
    session: &'s Session,
) -> Result<Result<Reading<'s>, IndexOutcome>, IndexError> {
    let file = &request.session_file;
    let session_id = session.header.id.clone();
    if env.config.privacy.excludes(&session.header.cwd, file) {
        return Err(IndexError::Excluded(file.clone()));
    }
    let branch = session.branch(request.leaf_id.as_deref());
    let Some(leaf) = branch.last() else {
        return Err(match &request.leaf_id {
            Some(leaf) => IndexError::UnknownLeaf(file.clone(), leaf.clone()),
            None => IndexError::Empty(file.clone()),
        });
    };
    let leaf_id = leaf.id.to_string();
    let previous = match meta::read_or_missing(&request.meta_dir, &session_id) {
        // A newer session-index owns this meta file: only an explicit index reports it.
        Err(meta::MetaError::Newer { .. }) if !request.force => {
            return Ok(Err(IndexOutcome::Skipped {
                session_id,
                new_user_messages: 0,
            }))
        }
        previous => previous?,
    };
    let last_indexed = previous
        .as_ref()
        .and_then(|m| m.last_indexed_leaf_id.as_deref());
    let new_start = last_indexed
        .and_then(|id| branch.iter().position(|e| e.id == id))
        .map_or(0, |p| p + 1);
    if !request.force {
        let is_user = |e: &&&Entry| matches!(e.kind, EntryKind::Message(AgentMessage::User { .. }));
        let new_user_messages = branch[new_start..].iter().filter(is_user).count();
        if new_user_messages < env.config.min_new_user_messages as usize {
            return Ok(Err(IndexOutcome::Skipped {
                session_id,
                new_user_messages,
            }));
        }
    }
    let taken = project_names(&request.meta_dir, &session.header.cwd, &session_id);
    Ok(Ok(Reading {
        files: views::files_touched(&branch),
        user_name: user_set_name(session),
        session,
        branch,
        leaf_id,
        previous,
        new_start,
        taken,
    }))
}

/// The summary, from the chosen model; a failure names the model tried.
fn generate(
    env: &ModelEnv,
    request: &IndexRequest,
    reading: &Reading<'_>,
    chosen: Chosen,
) -> Result<Generated, (IndexError, Option<String>)> {
    let selected = match chosen {
        Chosen::Offline { reason } => return Ok(generate_offline(reading, reason)),
        Chosen::Remote(selected) => selected,
    };
    let (branch, new_start) = (&reading.branch, reading.new_start);
    let incremental = reading
        .previous
        .as_ref()
        .filter(|_| new_start > 0 && new_start < branch.len());
    let task = JsonTask {
        system: summary::SYSTEM_PROMPT.to_string(),
        user: prompt(env, reading, incremental),
        schema_name: summary::SCHEMA_NAME.to_string(),
        schema: summary::json_schema(),
        max_output_tokens: env.config.indexing.max_output_tokens,
    };
    let budget = env.budget(&request.meta_dir, Kind::Indexing, request.past_cap);
    let outcome = match selected.complete_json::<IndexSummary>(env, &budget, &task, &()) {
        Ok(outcome) => outcome,
        // The host may use none of the models (issue 25: never the chat model unasked).
        Err(ModelError::Unavailable(reason)) if offline_allowed(env) => {
            return Ok(generate_offline(reading, Some(reason)))
        }
        Err(e) => {
            let tried = e.model_tried().unwrap_or(selected.key()).to_string();
            return Err((e.into(), Some(tried)));
        }
    };
    Ok(Generated {
        summary: outcome.value,
        model: outcome.model,
        usage: MetaUsage {
            input_tokens: outcome.usage.input_tokens,
            output_tokens: outcome.usage.output_tokens,
            cost_usd: outcome.usage.cost_usd.unwrap_or(0.0),
        },
        attempts: outcome.attempts,
        incremental: incremental.is_some(),
        fallback_reason: None,
        choice: outcome.choice,
    })
}

/// The offline model's summary; `reason`: why it serves instead of a configured model.
fn generate_offline(reading: &Reading<'_>, reason: Option<String>) -> Generated {
    let session = reading.session;
    let input = ExtractiveInput {
        branch: &reading.branch,
        session_name: reading.user_name.as_deref(),
        cwd: &session.header.cwd,
        files: &reading.files,
    };
    Generated {
        summary: extractive::summarize(&input),
        model: extractive::MODEL_KEY.to_string(),
        usage: MetaUsage::default(),
        attempts: 1,
        incremental: false,
        fallback_reason: reason,
        choice: ModelChoice::Offline,
    }
}

/// The model's prompt: the new entries and the previous summary (`incremental`),
/// else the session within `maxInputBytes`; with the names already taken.
fn prompt(env: &ModelEnv, reading: &Reading<'_>, incremental: Option<&SessionMeta>) -> String {
    let (branch, indexing) = (&reading.branch, &env.config.indexing);
    let files = files_text(&reading.files);
    let prompt = match incremental {
        Some(previous) => {
            let text = views::index_text(&branch[reading.new_start..], false);
            let cut = views::truncate_tail(&text, indexing.incremental_max_bytes, NO_LINE_LIMIT);
            summary::incremental_prompt(previous, &files, &cut.text, cut.truncated)
        }
        None => {
            let (text, cut) = first_index_text(branch, indexing.max_input_bytes);
            let cwd = &reading.session.header.cwd;
            summary::full_prompt(reading.user_name.as_deref(), cwd, &files, &text, cut)
        }
    };
    // A user's name is kept whatever the model proposes, so only the indexer's must be distinct.
    let taken: &[String] = match reading.user_name {
        Some(_) => &[],
        None => &reading.taken,
    };
    summary::with_taken_names(prompt, taken)
}

/// Name the summary and write the meta file (atomically, under its lock,
/// keeping what other tools added and when it was first written).
fn write(
    request: &IndexRequest,
    reading: Reading<'_>,
    generated: Generated,
) -> Result<IndexOutcome, IndexError> {
    let Reading {
        session,
        branch,
        leaf_id,
        user_name,
        taken,
        files,
        ..
    } = reading;
    let Generated {
        summary: mut result,
        model: model_key,
        usage,
        attempts,
        incremental,
        fallback_reason,
        choice,
    } = generated;
    result.name = match &user_name {
        Some(name) => name.clone(),
        // Offline, or a model that proposed a taken name anyway: the topic or the date is added.
        None => distinct_name(&result, &taken, &session.header.timestamp),
    };
    let session_id = session.header.id.clone();
    let session_file =
        std::path::absolute(&request.session_file).unwrap_or_else(|_| request.session_file.clone());
    let session_file = session_file.to_string_lossy().into_owned();
    let (path, meta) = meta::update(&request.meta_dir, &session_id, request.replace, |current| {
        let now = crate::time::iso_now();
        let created_at = current
            .as_ref()
            .map(|m| m.created_at.clone())
            .filter(|c| !c.is_empty());
        SessionMeta {
            schema_version: SCHEMA_VERSION,
            session_id: session_id.clone(),
            session_file,
            parent_session_file: session.header.parent_session.clone(),
            name: result.name,
            description: result.description,
            summary: result.summary,
            tags: summary::normalize_tags(result.tags),
            cwd: session.header.cwd.clone(),
            created_at: created_at.unwrap_or_else(|| now.clone()),
            updated_at: now,
            model: model_key,
            model_choice: Some(choice),
            last_indexed_leaf_id: Some(leaf_id),
            usage: Some(usage),
            files: Some(files),
            decisions: result.decisions,
            open_tasks: result.open_tasks,
            extra: current.map(|m| m.extra).unwrap_or_default(),
        }
    })?;
    Ok(IndexOutcome::Indexed(Box::new(Indexed {
        meta,
        path,
        previous_session_name: session.session_name(&branch),
        user_named: user_name.is_some(),
        incremental,
        attempts,
        fallback_reason,
    })))
}

/// The summary's name made distinct from the project's `taken` ones by its
/// own topics (its tags, not the offline model's fallback ones), else the date.
fn distinct_name(result: &IndexSummary, taken: &[String], timestamp: &str) -> String {
    let date = timestamp.get(..10).unwrap_or_default();
    let own = |t: &&String| !t.contains(':') && !extractive::FALLBACK_TAGS.contains(&t.as_str());
    let topics: Vec<String> = result.tags.iter().filter(own).cloned().collect();
    extractive::distinct_name(&result.name, taken, &topics, date)
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

fn choose_model(env: &ModelEnv, offline: bool) -> Result<Chosen, IndexError> {
    if offline {
        return Ok(Chosen::Offline { reason: None });
    }
    match model::select_model(env) {
        Ok(selected) => Ok(Chosen::Remote(selected)),
        Err(ModelError::Unavailable(reason)) if offline_allowed(env) => Ok(Chosen::Offline {
            reason: Some(reason),
        }),
        Err(ModelError::Unavailable(reason)) => Err(IndexError::NoModel(reason)),
        Err(e) => Err(e.into()),
    }
}

/// The offline model may stand in: `offlineFallback`, or `local/…` in `modelKeys`.
fn offline_allowed(env: &ModelEnv) -> bool {
    let listed = env
        .config
        .model_keys
        .iter()
        .any(|k| k.split('/').next() == Some(LOCAL_PROVIDER));
    env.config.offline_fallback || listed
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
