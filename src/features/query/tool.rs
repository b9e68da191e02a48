//! The tool call around [`super::answer`]: arguments, the per-run call
//! limit, resolution, the result document, telemetry and the status line.

use crate::plugin::state::Tool;
use crate::text::{clip, first_line, Keep};
use std::sync::Arc;
use std::time::Instant;

use pi_ext_abi::protocol::{SessionContext, ToolCall, ToolResult};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{QueryAnswer, QueryError};
use crate::plugin::state::Services;
use crate::resolve::ResolveError;
use crate::store::SessionRecord;

/// Custom entry type of the telemetry record.
pub const TELEMETRY_TYPE: &str = "session-query:query";
const MAX_REF_CHARS: usize = 500;
const MAX_QUESTION_CHARS: usize = 4000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    session: String,
    question: String,
}

fn parse_args(params: &Value) -> Result<Args, QueryError> {
    let args: Args = serde_json::from_value(params.clone())
        .map_err(|e| QueryError::InvalidArgs(first_line(&e.to_string(), 300)))?;
    let (session, question) = (args.session.trim(), args.question.trim());
    for (name, value, max) in [
        ("session", session, MAX_REF_CHARS),
        ("question", question, MAX_QUESTION_CHARS),
    ] {
        if value.is_empty() {
            return Err(QueryError::InvalidArgs(format!("`{name}` is empty")));
        }
        if value.chars().count() > max {
            return Err(QueryError::InvalidArgs(format!(
                "`{name}` is longer than {max} characters"
            )));
        }
    }
    Ok(Args {
        session: session.to_string(),
        question: question.to_string(),
    })
}

pub fn call(services: &Arc<Services>, call: &ToolCall) -> ToolResult {
    let started = Instant::now();
    let outcome = run(services, call);
    let latency_ms = started.elapsed().as_millis().min(u128::from(u64::MAX)) as u64;
    match outcome {
        Ok(mut answer) => {
            answer.latency_ms = latency_ms;
            report_success(services, &answer);
            ToolResult::text(
                result_text(&answer),
                serde_json::to_value(&answer).unwrap_or(Value::Null),
                false,
            )
        }
        Err(error) => {
            let code = error.code();
            let message = error.to_string();
            let telemetry = json!({
                "success": false,
                "code": code,
                "message": message,
                "latencyMs": latency_ms,
                "timestamp": crate::time::iso_now(),
            });
            services.host.append_entry(TELEMETRY_TYPE, &telemetry);
            ToolResult::text(
                format!("query_session failed ({code}): {message}"),
                error.details(),
                true,
            )
        }
    }
}

fn run(services: &Arc<Services>, call: &ToolCall) -> Result<QueryAnswer, QueryError> {
    let args = parse_args(&call.params)?;
    let limit = services.config.query.max_calls_per_turn;
    if !services.turn.take_call(Tool::QuerySession, limit) {
        return Err(QueryError::CallLimitExceeded { limit });
    }
    // A reference that does not resolve costs nothing, so it does not use up the allowance.
    let entry = resolve(services, &call.ctx, &args.session).inspect_err(|_| {
        services.turn.give_back(Tool::QuerySession);
    })?;
    super::answer(services, &call.ctx, &entry, &args.question)
}

/// The same resolver as `@@` references: id, id prefix, name, slug, fuzzy.
fn resolve(
    services: &Services,
    ctx: &SessionContext,
    reference: &str,
) -> Result<SessionRecord, QueryError> {
    let cwd = if ctx.cwd.is_empty() {
        services.host.context().cwd
    } else {
        ctx.cwd.clone()
    };
    let current = ctx.session_id.as_deref();
    let found = services.catalog.resolve_in_session(
        &services.sessions_dir(ctx),
        &services.meta_dir(ctx),
        &cwd,
        current,
        reference,
    );
    found.map(|r| r.entry).map_err(|e| {
        let message = first_line(&e.to_string(), 300);
        match e {
            ResolveError::NotFound { suggestions, .. } => QueryError::NotFound {
                message,
                suggestions: suggestions.iter().map(|c| c.short()).collect(),
            },
            ResolveError::Outside { .. } => QueryError::NotFound {
                message,
                suggestions: Vec::new(),
            },
            ResolveError::Ambiguous { candidates, .. } => QueryError::Ambiguous {
                message,
                candidates,
            },
            ResolveError::FileMissing { .. } => QueryError::FileMissing(message),
            ResolveError::Excluded { id } => QueryError::Excluded(id),
        }
    })
}

fn result_text(answer: &QueryAnswer) -> String {
    let how = if answer.offline {
        "no model used".to_string()
    } else {
        format!("model {}, ${:.4}", answer.model, answer.cost_usd)
    };
    let mut text = format!(
        "Answer from session \"{}\" (id {}) — confidence: {} ({how})\n\n{}",
        answer.name,
        answer.session_id,
        crate::text::variant_name(&answer.confidence),
        answer.answer_markdown.trim()
    );
    if !answer.offline && !answer.citations.is_empty() {
        text.push_str("\n\nCitations:");
        for c in &answer.citations {
            text.push_str(&format!(
                "\n- [{}] {}: {}",
                c.entry_id,
                c.role,
                c.excerpt.replace('\n', " ")
            ));
        }
    }
    text
}

fn report_success(services: &Arc<Services>, answer: &QueryAnswer) {
    let telemetry = json!({
        "success": true,
        "sessionId": answer.session_id,
        "name": answer.name,
        "confidence": answer.confidence,
        "citations": answer.citations.len(),
        "model": answer.model,
        "offline": answer.offline,
        "contextTokens": answer.context_tokens,
        "inputTokens": answer.usage.input_tokens,
        "outputTokens": answer.usage.output_tokens,
        "costUsd": answer.cost_usd,
        "attempts": answer.attempts,
        "latencyMs": answer.latency_ms,
        "timestamp": crate::time::iso_now(),
    });
    services.host.append_entry(TELEMETRY_TYPE, &telemetry);
    let status = format!(
        "queried \"{}\" (${:.4})",
        clip(&answer.name, 40, Keep::Head),
        answer.cost_usd
    );
    services.show_status("query", &status, true);
}
