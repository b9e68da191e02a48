//! When a reference is unsure — it matches several sessions, or none while
//! some names are close — the user picks the session before the prompt is
//! sent, in pi's selector, instead of the prompt going out with nothing
//! injected.
//!
//! pi cancels a prompt only at `input`, before anything is sent, so the
//! bridge asks there: the `references.questions` request returns a
//! [`Question`] per unsure reference (none when every reference resolves,
//! so the prompt waits for nothing), the bridge shows each in pi's selector
//! (in RPC mode, pi's extension UI request), and hands the answers to
//! `before_agent_start` in its payload (`referencePicks`, [`Pick`]). A
//! session picked is injected as if it had been named by id; "send without
//! it" leaves it out; "cancel" gives the prompt back to the editor. Where no
//! one can pick (print mode, no UI) nothing is asked and the notice says so.

use std::sync::Arc;

use pi_ext_abi::protocol::SessionContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::plugin::state::Services;
use crate::resolve::{unique_prefixes, Candidate, ResolveError};
use crate::text::{clip, flat, home_relative, Keep};

use super::parse;

/// The payload field of `before_agent_start` that carries the picks.
pub const PICKS_FIELD: &str = "referencePicks";

/// One unsure reference, for pi's selector: the sessions it may mean (best
/// first), then `skip` and `cancel`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The reference as written (`@@gitclaw`): what its [`Pick`] names.
    pub reference: String,
    /// The selector's title.
    pub title: String,
    pub options: Vec<Choice>,
    /// The label of "send the prompt without this reference".
    pub skip: String,
    /// The label of "do not send; give the prompt back to the editor".
    pub cancel: String,
}

/// One session offered: its line in the selector (title · day · project · id).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    pub label: String,
    pub session_id: String,
}

/// The user's answer for one reference: a session, or none (send without it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pick {
    pub reference: String,
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Longest title in a selector line.
const TITLE_UNITS: usize = 60;

/// `references.questions` (`{"prompt"}` → `{"questions": [...]}`): a
/// question for each reference of the prompt the user should settle.
pub fn questions(services: &Arc<Services>, payload: &Value) -> Value {
    let ctx = services.host.context();
    let prompt = payload
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    serde_json::json!({ "questions": unsure(services, &ctx, prompt) })
}

/// The questions for `prompt`'s references (up to `maxRefsPerPrompt`).
pub fn unsure(services: &Services, ctx: &SessionContext, prompt: &str) -> Vec<Question> {
    let cfg = &services.config.references;
    if !cfg.enabled {
        return Vec::new();
    }
    let refs = parse(prompt, cfg.max_refs_per_prompt);
    refs.iter()
        .take(cfg.max_refs_per_prompt)
        .filter_map(|r| {
            let found = services.catalog.resolve_in_session(
                &services.sessions_dir(ctx),
                &services.meta_dir(ctx),
                &ctx.cwd,
                ctx.session_id.as_deref(),
                &r.target,
            );
            let (title, candidates) = match found {
                Ok(_) => return None,
                Err(ResolveError::Ambiguous { candidates, .. }) => (
                    format!(
                        "{} matches {} sessions: which one?",
                        r.raw,
                        candidates.len()
                    ),
                    candidates,
                ),
                Err(ResolveError::NotFound { suggestions, .. }) if !suggestions.is_empty() => (
                    format!("{} matches no session. Did you mean one of these?", r.raw),
                    suggestions,
                ),
                Err(_) => return None,
            };
            Some(Question {
                reference: r.raw.clone(),
                title,
                options: choices(&candidates),
                skip: format!("Send without {}", r.raw),
                cancel: "Cancel (back to the editor)".into(),
            })
        })
        .collect()
}

/// A selector line per candidate, each unique (by the shortest id prefix that tells them apart).
fn choices(candidates: &[Candidate]) -> Vec<Choice> {
    let line = |c: &Candidate, id: &str| {
        let mut parts = vec![
            clip(&flat(&c.title), TITLE_UNITS, Keep::Head),
            c.active_day.clone(),
        ];
        if !c.cwd.is_empty() {
            parts.push(home_relative(&c.cwd));
        }
        parts.push(id.to_string());
        parts.join(" · ")
    };
    let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    candidates
        .iter()
        .zip(unique_prefixes(&ids))
        .map(|(c, id)| Choice {
            label: line(c, &id),
            session_id: c.id.clone(),
        })
        .collect()
}

/// The picks a `before_agent_start` payload carries (none when absent or malformed).
pub fn picks(payload: &Value) -> Vec<Pick> {
    payload
        .get(PICKS_FIELD)
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or_default()
}
