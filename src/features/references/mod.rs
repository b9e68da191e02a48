//! `@@session` references in prompts: parsing, resolution and injection.
//!
//! `before_agent_start` returns one `session-reference` message (pi persists
//! it as a `custom_message`, so it stays in the prompt-cache prefix). Every
//! reference of the prompt is confirmed in one notice ([`notice`]); one that
//! does not resolve never fails the turn: the notice says why, and so do the
//! status line, `details.unresolved` and the telemetry entry. An unsure one
//! (several sessions, or close names) is settled by the user before the
//! prompt is sent ([`choose`]).

pub mod choose;
pub mod describe;
pub mod extract;
pub mod notice;
pub mod render;

use crate::text::{clip, Keep};
use std::sync::Arc;

use pi_ext_abi::protocol::{CustomMessage, SessionContext};
use serde_json::{json, Value};

use crate::error_code::ErrorCode;
use crate::plugin::state::Services;
use crate::resolve::{Ancestor, Candidate, ResolveError, Rule};
use crate::store::SessionRecord;

pub use crate::resolve::syntax::{parse, Reference};
pub use choose::Pick;

pub const CUSTOM_TYPE: &str = "session-reference";
pub const TELEMETRY_TYPE: &str = "session-reference:inject";

/// A reference that could not be injected.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    /// As written in the prompt, from `@@`.
    pub reference: String,
    pub reason: String,
    pub code: ErrorCode,
    /// The sessions it may mean (an ambiguity), or whose names are close (a miss).
    pub candidates: Vec<Candidate>,
}

impl Unresolved {
    fn new(reference: &str, error: ResolveError) -> Unresolved {
        let reason = error.to_string();
        let code = error.code();
        let candidates = match error {
            ResolveError::Ambiguous { candidates, .. } => candidates,
            ResolveError::NotFound { suggestions, .. } => suggestions,
            _ => Vec::new(),
        };
        Unresolved {
            reference: reference.to_string(),
            reason,
            code,
            candidates,
        }
    }
}

/// A reference that resolved: its session, the rule that found it, and the
/// ancestors injected with it (`~N`), nearest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmed {
    /// As written in the prompt, from `@@`.
    pub reference: String,
    pub entry: SessionRecord,
    pub rule: Rule,
    pub ancestors: Vec<SessionRecord>,
}

/// `session_start`: compile the redaction rules in the background (~0.1-0.3
/// s), not on the first `@@` prompt. (The session store is refreshed by the
/// plugin at `session_start` too.)
pub fn on_session_start(services: &Arc<Services>, _ctx: &SessionContext) {
    if services.config.references.enabled || services.config.query.enabled {
        services
            .jobs
            .submit("redact-prewarm", || drop(crate::redact::redact("")));
    }
}

/// `before_agent_start`: the `session-reference` message to inject, if the
/// prompt has references; `picks`: the user's answers to [`choose`]'s questions.
pub fn before_agent_start(
    services: &Arc<Services>,
    ctx: &SessionContext,
    prompt: &str,
    picks: &[Pick],
) -> Option<CustomMessage> {
    let cfg = &services.config.references;
    if !cfg.enabled {
        return None;
    }
    // One more than honoured: enough to say that there were more.
    let refs = parse(prompt, cfg.max_refs_per_prompt.saturating_add(1));
    if refs.is_empty() {
        return None;
    }
    let built = build(services, ctx, &refs, picks);
    let trailer: Vec<String> = built
        .unresolved
        .iter()
        .map(|u| {
            render::escape(&format!(
                "Unresolved reference {}: {}",
                clip(&u.reference, 120, Keep::Head),
                clip(&u.reason, 400, Keep::Head)
            ))
        })
        .collect();
    let rendered = render::render(
        render::INTRO,
        &built.blocks,
        &trailer,
        cfg.max_injected_bytes,
    );
    report(services, ctx, &built, &rendered);
    if built.blocks.is_empty() && trailer.is_empty() {
        // Every reference was left out by the user's choice.
        return None;
    }
    let resolved: Vec<Value> = built
        .confirmed
        .iter()
        .map(|c| json!({"reference": c.reference, "sessionId": c.entry.id, "rule": c.rule}))
        .collect();
    let unresolved: Vec<Value> = built
        .unresolved
        .iter()
        .map(|u| json!({"reference": u.reference, "reason": u.reason, "code": u.code}))
        .collect();
    Some(CustomMessage {
        custom_type: CUSTOM_TYPE.into(),
        content: rendered.content,
        display: cfg.display,
        details: json!({
            "sessionIds": built.session_ids,
            "resolved": resolved,
            "unresolved": unresolved,
            "skipped": built.skipped,
            "truncated": rendered.truncated,
        }),
    })
}

#[derive(Default)]
pub struct Built {
    blocks: Vec<render::Block>,
    /// Every injected session (references first, then their ancestors), once.
    session_ids: Vec<String>,
    /// Each resolved reference, in prompt order.
    pub confirmed: Vec<Confirmed>,
    /// References the user chose to send without (as written).
    pub skipped: Vec<String>,
    pub unresolved: Vec<Unresolved>,
}

/// The session `r` names: the user's pick when there is one (`Ok(None)`:
/// sent without it), else what the resolver finds.
fn resolve(
    services: &Services,
    ctx: &SessionContext,
    r: &Reference,
    picks: &[Pick],
) -> Result<Option<crate::resolve::Resolved>, ResolveError> {
    let (target, picked) = match picks.iter().find(|p| p.reference == r.raw) {
        Some(Pick {
            session_id: None, ..
        }) => return Ok(None),
        Some(Pick {
            session_id: Some(id),
            ..
        }) => (id.as_str(), true),
        None => (r.target.as_str(), false),
    };
    let found = services.catalog.resolve_in_session(
        &services.sessions_dir(ctx),
        &services.meta_dir(ctx),
        &ctx.cwd,
        ctx.session_id.as_deref(),
        target,
    )?;
    Ok(Some(crate::resolve::Resolved {
        rule: if picked { Rule::Picked } else { found.rule },
        entry: found.entry,
    }))
}

fn build(services: &Services, ctx: &SessionContext, refs: &[Reference], picks: &[Pick]) -> Built {
    let cfg = &services.config.references;
    let sessions_dir = services.sessions_dir(ctx);
    let meta_dir = services.meta_dir(ctx);
    let mut out = Built::default();
    let mut resolved: Vec<(usize, &Reference, SessionRecord)> = Vec::new();
    for (group, r) in refs.iter().enumerate() {
        if group >= cfg.max_refs_per_prompt {
            out.unresolved.push(Unresolved {
                reference: r.raw.clone(),
                reason: format!(
                    "more than {} references in one prompt (the rest are not read)",
                    cfg.max_refs_per_prompt
                ),
                code: ErrorCode::TooManyReferences,
                candidates: Vec::new(),
            });
            continue;
        }
        match resolve(services, ctx, r, picks) {
            Ok(Some(found)) => {
                out.confirmed.push(Confirmed {
                    reference: r.raw.clone(),
                    entry: found.entry.clone(),
                    rule: found.rule,
                    ancestors: Vec::new(),
                });
                resolved.push((group, r, found.entry));
            }
            Ok(None) => out.skipped.push(r.raw.clone()),
            Err(e) => out.unresolved.push(Unresolved::new(&r.raw, e)),
        }
    }
    // Questions may each wait on a model: answer them side by side, so the
    // turn waits for the slowest one rather than for their sum.
    let mut answers: Vec<Option<describe::Answered>> = std::thread::scope(|scope| {
        let handles: Vec<_> = resolved
            .iter()
            .map(|(_, r, entry)| {
                r.question
                    .as_ref()
                    .map(|q| scope.spawn(move || ask(services, ctx, entry, q)))
            })
            .collect();
        handles
            .into_iter()
            .zip(&resolved)
            .map(|(h, (_, r, _))| {
                h.map(|h| {
                    h.join().unwrap_or_else(|_| describe::Answered {
                        question: r.question.clone().unwrap_or_default(),
                        result: Err("the answer failed unexpectedly".into()),
                    })
                })
            })
            .collect()
    });
    for (k, (group, r, entry)) in resolved.iter().enumerate() {
        let (group, entry) = (*group, entry.clone());
        let answered = answers.get_mut(k).and_then(Option::take);
        if out.session_ids.contains(&entry.id) {
            // Already injected by an earlier reference: only its answer is new.
            if let (Some(a), Some(b)) = (answered, out.blocks.iter_mut().find(|b| b.id == entry.id))
            {
                b.body = format!("{}\n{}", describe::answer_text(&a), b.body);
            }
            continue;
        }
        let mut body = describe::body(&sessions_dir, &meta_dir, &entry, answered.as_ref());
        let depth = r.depth.min(cfg.max_depth);
        if r.depth > cfg.max_depth {
            body.push_str(&format!(
                "\nnote: ancestor depth capped at {} (references.maxDepth)",
                cfg.max_depth
            ));
        }
        out.session_ids.push(entry.id.clone());
        let child_index = out.blocks.len();
        out.blocks.push(render::Block {
            id: entry.id.clone(),
            name: Some(entry.title()),
            relation: None,
            body,
            group,
        });
        if depth > 0 {
            let ancestors = add_ancestors(
                services,
                &sessions_dir,
                &meta_dir,
                &entry,
                depth,
                group,
                child_index,
                &mut out,
            );
            if let Some(c) = out.confirmed.get_mut(k) {
                c.ancestors = ancestors;
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn add_ancestors(
    services: &Services,
    sessions_dir: &std::path::Path,
    meta_dir: &std::path::Path,
    entry: &SessionRecord,
    depth: u32,
    group: usize,
    child_index: usize,
    out: &mut Built,
) -> Vec<SessionRecord> {
    let mut found = Vec::new();
    let mut child = entry.clone();
    for (level, a) in services
        .catalog
        .ancestors(sessions_dir, meta_dir, entry, depth)
        .into_iter()
        .enumerate()
    {
        let level = level + 1;
        // An excluded or missing ancestor ends the chain with a note on its child's block.
        let note = match a {
            Ancestor::Excluded => {
                format!(
                    "\nnote: ancestor level {level} of {} is excluded by privacy.exclude",
                    entry.id
                )
            }
            Ancestor::Found(parent) => {
                let relation = format!("ancestor level {level} of {} (parentSession)", entry.id);
                if !out.session_ids.contains(&parent.id) {
                    out.session_ids.push(parent.id.clone());
                    let body = describe::body(sessions_dir, meta_dir, &parent, None);
                    out.blocks.push(render::Block {
                        id: parent.id.clone(),
                        name: Some(parent.title()),
                        relation: Some(relation),
                        body,
                        group,
                    });
                }
                found.push((*parent).clone());
                child = *parent;
                continue;
            }
            Ancestor::Missing { path, reason } => {
                // Only the file name: the path may point outside the sessions directory.
                let file = std::path::Path::new(&path)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned());
                format!(
                    "\nnote: ancestor level {level} (parent of {}) is not available: {reason} ({})",
                    child.id,
                    file.unwrap_or_default()
                )
            }
        };
        let idx = out
            .blocks
            .iter()
            .rposition(|b| b.id == child.id)
            .unwrap_or(child_index);
        if let Some(b) = out.blocks.get_mut(idx) {
            b.body.push_str(&render::escape(&note));
        }
        break;
    }
    found
}

/// The custom type of a continuation's first message (`/continue`).
pub const CONTINUATION_TYPE: &str = "session-continuation";

/// `/continue <ref>`: the referenced session's context (summary, decisions,
/// open tasks, files; with `~N` its ancestors, with `: question` an answer)
/// as the first message of a new session, framed as its continuation and
/// redacted before it is cut to `references.maxInjectedBytes`. Its
/// `details.headline` (`Continued from "<title>" (<id>, <day>)`) is the one
/// line pi shows of it. Returns the session's file and the message.
pub fn continue_message(
    services: &Services,
    ctx: &SessionContext,
    reference: &str,
) -> Result<(String, CustomMessage), String> {
    let written = if reference.starts_with("@@") {
        reference.to_string()
    } else {
        format!("@@{reference}")
    };
    let Some(r) = parse(&written, 1).into_iter().next() else {
        return Err(format!(
            "\"{reference}\" is not a session reference (try @@<name>, @@<id prefix> or @@\"Quoted name\")"
        ));
    };
    let mut built = build(services, ctx, std::slice::from_ref(&r), &[]);
    if let Some(u) = built.unresolved.first() {
        return Err(u.reason.clone());
    }
    let Some(parent) = built.confirmed.first().map(|c| c.entry.clone()) else {
        return Err(format!("{} names no session", r.raw));
    };
    let file = parent.path.to_string_lossy().into_owned();
    for block in &mut built.blocks {
        block.body = crate::redact::redact(&block.body).into_owned();
    }
    let headline = continuation_headline(&parent);
    let rendered = render::render(
        &render::continuation_intro(&headline),
        &built.blocks,
        &[],
        services.config.references.max_injected_bytes,
    );
    let details = json!({
        "headline": headline,
        "sessionId": parent.id,
        "title": parent.title(),
        "sessionIds": built.session_ids,
        "continuedFrom": file,
        "truncated": rendered.truncated,
    });
    Ok((
        file,
        CustomMessage {
            custom_type: CONTINUATION_TYPE.into(),
            content: rendered.content,
            display: true,
            details,
        },
    ))
}

/// `Continued from "Cron in gitclaw" (034d1cd7, 2026-02-20)`.
pub fn continuation_headline(parent: &SessionRecord) -> String {
    let id: String = parent.id.chars().take(8).collect();
    format!(
        "Continued from \"{}\" ({id}, {})",
        clip(&parent.title(), 80, Keep::Head),
        parent.active_day()
    )
}

fn ask(
    services: &Services,
    ctx: &SessionContext,
    entry: &SessionRecord,
    question: &str,
) -> describe::Answered {
    let result = crate::features::query::answer(services, ctx, entry, question)
        .map(|a| {
            let confidence = crate::text::variant_name(&a.confidence);
            let citations = a
                .citations
                .iter()
                .map(|c| {
                    format!(
                        "[{} {}] {}",
                        c.entry_id,
                        c.role,
                        clip(&c.excerpt, 280, Keep::Head)
                    )
                })
                .collect();
            (a.answer_markdown.clone(), confidence, citations)
        })
        .map_err(|e| e.to_string());
    describe::Answered {
        question: question.to_string(),
        result,
    }
}

/// The status line shows unresolved references until a prompt resolves all of its own.
const STATUS_OWNER: &str = "references";

fn report(
    services: &Arc<Services>,
    ctx: &SessionContext,
    built: &Built,
    rendered: &render::Rendered,
) {
    let host = &services.host;
    // Whatever `display` says, the user sees what each reference became, in one notice.
    if let Some((text, level)) = notice::notice(built, ctx.has_ui && ctx.can("select")) {
        host.notify(&text, level);
    }
    if built.unresolved.is_empty() {
        // Clear only our own earlier warning, never another feature's status.
        services.clear_status(STATUS_OWNER);
    } else {
        let status = format!(
            "@@ {} of {} reference(s) unresolved",
            built.unresolved.len(),
            built.unresolved.len() + built.confirmed.len()
        );
        services.show_status(STATUS_OWNER, &status, false);
    }
    let reasons: Vec<ErrorCode> = built.unresolved.iter().map(|u| u.code).collect();
    host.append_entry(
        TELEMETRY_TYPE,
        &json!({
            "success": built.unresolved.is_empty(),
            "resolvedCount": built.confirmed.len(),
            "unresolvedCount": built.unresolved.len(),
            "skippedCount": built.skipped.len(),
            "unresolvedReasons": reasons,
            "injectedBytes": rendered.content.len(),
            "truncated": rendered.truncated,
            "timestamp": crate::time::iso_now(),
        }),
    );
}

/// Completion candidates for a `@@` prefix (`{"prefix": "..", "limit": n}` →
/// `{"candidates": [...]}`), for editor autocomplete.
pub fn complete(services: &Arc<Services>, payload: &Value) -> Value {
    let ctx = services.host.context();
    let prefix = payload
        .get("prefix")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let limit = payload
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(10)
        .clamp(1, 50) as usize;
    let cwd = payload
        .get("cwd")
        .and_then(Value::as_str)
        .unwrap_or(&ctx.cwd);
    let candidates = services.catalog.complete(
        &services.sessions_dir(&ctx),
        &services.meta_dir(&ctx),
        cwd,
        ctx.session_id.as_deref(),
        prefix,
        limit,
    );
    json!({"candidates": candidates})
}
