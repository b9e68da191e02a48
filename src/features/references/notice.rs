//! What the user sees of a prompt's references: one notice, a line per
//! reference — the session it became (and the ancestors injected with it),
//! the ones sent without (the user's choice), and the unresolved ones with
//! why. Sessions are shown by their title ([`SessionRecord::title`]).

use crate::error_code::ErrorCode;
use crate::plugin::host::NotifyLevel;
use crate::resolve::{short_id, Candidate, Rule};
use crate::store::SessionRecord;
use crate::text::{clip, home_relative, Keep};

use super::{Built, Confirmed, Unresolved};

/// Longest title in a notice line.
const TITLE_UNITS: usize = 80;
/// Candidates a notice line lists for an unresolved reference.
const LISTED: usize = 3;

/// The one notice for a prompt's references, and its level (a warning when
/// one did not resolve). `can_pick`: the host could have shown a selector.
pub fn notice(built: &Built, can_pick: bool) -> Option<(String, NotifyLevel)> {
    let mut lines = Vec::new();
    for c in &built.confirmed {
        lines.push(confirmation(&c.reference, &c.entry, c.rule));
        lines.extend(ancestor_lines(c));
    }
    for reference in &built.skipped {
        lines.push(format!(
            "{} → sent without it (your choice)",
            shown(reference)
        ));
    }
    for u in &built.unresolved {
        lines.push(unresolved_line(u, can_pick));
    }
    let level = match built.unresolved.is_empty() {
        true => NotifyLevel::Info,
        false => NotifyLevel::Warning,
    };
    (!lines.is_empty()).then(|| (lines.join("\n"), level))
}

/// `@@cron → "Cron in gitclaw" (034d1cd7, 2026-02-20, ~/work/gitclaw, via name)`.
pub fn confirmation(reference: &str, entry: &SessionRecord, rule: Rule) -> String {
    let mut about = about(entry);
    about.push(match rule {
        Rule::Picked => "your choice".to_string(),
        rule => format!("via {}", crate::text::variant_name(&rule)),
    });
    format!(
        "{} → \"{}\" ({})",
        shown(reference),
        clip(&entry.title(), TITLE_UNITS, Keep::Head),
        about.join(", ")
    )
}

/// `  ~1 → "Parent" (01a219ef, 2026-02-19, ~/work/x)`: each ancestor injected with a `~N` reference.
fn ancestor_lines(c: &Confirmed) -> impl Iterator<Item = String> + '_ {
    c.ancestors.iter().enumerate().map(|(level, parent)| {
        format!(
            "  ~{} → \"{}\" ({})",
            level + 1,
            clip(&parent.title(), TITLE_UNITS, Keep::Head),
            about(parent).join(", ")
        )
    })
}

/// Short id, the day last active, the project.
fn about(entry: &SessionRecord) -> Vec<String> {
    let id: String = short_id(&entry.id).trim_end_matches('…').to_string();
    let mut about = vec![id, entry.active_day()];
    if !entry.cwd.is_empty() {
        about.push(home_relative(&entry.cwd));
    }
    about
}

/// `@@gitclaw: 8 sessions match, nothing injected — "A" (034d1cd7, …), … and 5 more; …`.
fn unresolved_line(u: &Unresolved, can_pick: bool) -> String {
    let what = match u.code {
        ErrorCode::SessionAmbiguous => format!(
            "{} sessions match, nothing injected — {}",
            u.candidates.len(),
            listed(&u.candidates)
        ),
        ErrorCode::SessionNotFound if !u.candidates.is_empty() => format!(
            "no session matches, nothing injected; did you mean {}?",
            listed(&u.candidates)
        ),
        _ => format!("not injected: {}", clip(&u.reason, 300, Keep::Head)),
    };
    let how = match (u.candidates.is_empty(), can_pick) {
        (true, _) => "",
        (false, true) => "; write @@<id> to choose",
        (false, false) => "; no one can pick here (no UI), write @@<id> to choose",
    };
    format!("{}: {what}{how}", shown(&u.reference))
}

/// `"Title" (034d1cd7, 2026-02-20)` for the first few, then `and N more`.
fn listed(candidates: &[Candidate]) -> String {
    let mut items: Vec<String> = candidates
        .iter()
        .take(LISTED)
        .map(|c| {
            let id = short_id(&c.id).trim_end_matches('…').to_string();
            let title = clip(&c.title, 48, Keep::Head);
            format!("\"{title}\" ({id}, {})", c.active_day)
        })
        .collect();
    if candidates.len() > LISTED {
        items.push(format!("and {} more", candidates.len() - LISTED));
    }
    items.join(", ")
}

/// A reference as written, clipped for one line.
fn shown(reference: &str) -> String {
    clip(reference, 80, Keep::Head)
}
