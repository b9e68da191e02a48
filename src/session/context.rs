//! pi's `buildSessionContext` over an already resolved branch.

use super::convert::iso_to_ms;
use super::model::*;

fn push(messages: &mut Vec<ContextMessage>, entry: &Entry) {
    let message = match &entry.kind {
        EntryKind::Message(m) => m.clone(),
        EntryKind::CustomMessage { custom_type, content, display } => AgentMessage::Custom {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            timestamp: iso_to_ms(&entry.timestamp),
        },
        EntryKind::BranchSummary { from_id, summary, .. } if !summary.is_empty() => AgentMessage::BranchSummary {
            summary: summary.clone(),
            from_id: from_id.clone(),
            timestamp: iso_to_ms(&entry.timestamp),
        },
        _ => return,
    };
    messages.push(ContextMessage { entry_id: entry.id.clone(), message });
}

pub(crate) fn build(path: &[&Entry]) -> BuiltContext {
    let mut thinking_level = "off".to_string();
    let mut model = None;
    let mut compaction: Option<&Entry> = None;
    for entry in path {
        match &entry.kind {
            EntryKind::ThinkingLevelChange { thinking_level: level } => thinking_level = level.clone(),
            EntryKind::ModelChange { provider, model_id } => {
                model = Some((provider.clone(), model_id.clone()));
            }
            EntryKind::Message(AgentMessage::Assistant { provider, model: m, .. }) => {
                model = Some((provider.clone(), m.clone()));
            }
            EntryKind::Compaction { .. } => compaction = Some(entry),
            _ => {}
        }
    }

    let mut messages = Vec::new();
    match compaction {
        Some(comp) => {
            let EntryKind::Compaction { summary, first_kept_entry_id, tokens_before, .. } = &comp.kind else {
                return BuiltContext::default();
            };
            messages.push(ContextMessage {
                entry_id: comp.id.clone(),
                message: AgentMessage::CompactionSummary {
                    summary: summary.clone(),
                    tokens_before: *tokens_before,
                    timestamp: iso_to_ms(&comp.timestamp),
                },
            });
            // pi finds the first compaction on the path with that id (duplicates!).
            let idx = path
                .iter()
                .position(|e| matches!(e.kind, EntryKind::Compaction { .. }) && e.id == comp.id)
                .unwrap_or(0);
            let mut found_first_kept = false;
            for entry in &path[..idx] {
                if entry.id == *first_kept_entry_id {
                    found_first_kept = true;
                }
                if found_first_kept {
                    push(&mut messages, entry);
                }
            }
            for entry in &path[idx + 1..] {
                push(&mut messages, entry);
            }
        }
        None => {
            for entry in path {
                push(&mut messages, entry);
            }
        }
    }
    BuiltContext { messages, thinking_level, model }
}
