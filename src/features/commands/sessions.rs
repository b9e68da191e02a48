//! `/sessions <query>`: search past sessions from inside pi. The results come
//! as pi's selector; picking one offers to resume it, to insert `@@<slug>` into
//! the prompt, or to continue from it in a new session (`/continue`). A host
//! that performs no actions gets the results as text.

use std::sync::Arc;

use pi_ext_abi::protocol::{Action, CommandCall, CommandResult, SelectOption};
use serde_json::json;

use crate::plugin::state::Services;
use crate::store::SessionHit;

pub fn run(services: &Arc<Services>, call: &CommandCall) -> CommandResult {
    let text = call.args.trim();
    if text.is_empty() {
        return super::failed(
            services,
            format!(
                "usage: /{} <words, \"a phrase\", -word, file:PATH, tag:TAG>",
                call.command
            ),
        );
    }
    let hits = match crate::features::search_tool::search(
        services,
        &call.ctx,
        text,
        services.config.search.max_results,
        None,
    ) {
        Ok(hits) => hits,
        Err(e) => return super::failed(services, format!("/{}: {e}", call.command)),
    };
    let labels: Vec<String> = hits
        .iter()
        .enumerate()
        .map(|(i, hit)| format!("{}. {}", i + 1, label(hit)))
        .collect();
    let found = match hits.len() {
        0 => format!("no session matches {text:?}"),
        1 => format!("1 session matches {text:?}"),
        n => format!("{n} sessions match {text:?}"),
    };
    let result = |message: String, actions| CommandResult {
        ok: true,
        message: Some(message),
        details: json!({ "results": hits }),
        actions,
    };
    if hits.is_empty() || !call.ctx.can("select") {
        return result(
            [found]
                .into_iter()
                .chain(labels)
                .collect::<Vec<_>>()
                .join("\n"),
            Vec::new(),
        );
    }
    let options = hits.iter().zip(labels).map(|(hit, label)| {
        let title = format!(
            "{}: resume it, mention it, or continue from it?",
            hit_name(hit)
        );
        SelectOption {
            label,
            actions: vec![Action::Select {
                title,
                options: choices(services, call, hit),
            }],
        }
    });
    let title = format!("Sessions matching {text:?}");
    result(
        found,
        vec![Action::Select {
            title,
            options: options.collect(),
        }],
    )
}

/// What can be done with a session found, as far as the host can.
fn choices(services: &Services, call: &CommandCall, hit: &SessionHit) -> Vec<SelectOption> {
    let s = &hit.session;
    let reference = format!("@@{}", s.slug.as_deref().unwrap_or(&s.id));
    let option = |label: &str, action| SelectOption {
        label: label.into(),
        actions: vec![action],
    };
    let path = s.path.to_string_lossy().into_owned();
    let continue_from = services.config.commands.continue_from.clone();
    [
        (
            "switchSession",
            option("Resume it", Action::SwitchSession { session_file: path }),
        ),
        (
            "insertText",
            option(
                &format!("Insert {reference} into the prompt"),
                Action::InsertText {
                    text: format!("{reference} "),
                },
            ),
        ),
        (
            "command",
            option(
                &format!("Continue from it (/{continue_from})"),
                Action::Command {
                    command: continue_from.clone(),
                    args: reference.clone(),
                },
            ),
        ),
    ]
    .into_iter()
    .filter(|(kind, _)| call.ctx.can(kind))
    .map(|(_, option)| option)
    .collect()
}

fn hit_name(hit: &SessionHit) -> String {
    let s = &hit.session;
    crate::text::clip(&s.title(), 60, crate::text::Keep::Head)
}

/// One line: title · day last active · project · the best snippet's sentence,
/// its meaningful words between `*` (pi's selector shows plain text).
fn label(hit: &SessionHit) -> String {
    let s = &hit.session;
    let mut parts = vec![
        hit_name(hit),
        s.active_day(),
        crate::text::home_relative(&s.cwd),
    ];
    parts.extend(
        hit.snippets
            .first()
            .map(|snippet| snippet.sentence("*", "*")),
    );
    parts.join(" · ")
}
