//! pi's `buildSessionContext` over an already resolved branch.

use super::convert::iso_to_ms;
use super::entries::*;

/// The context message of one entry: borrowed when the entry is a message,
/// converted (small) for custom messages and branch summaries.
fn message_of(entry: &Entry) -> Option<MessageRef<'_>> {
    Some(match &entry.kind {
        EntryKind::Message(m) => MessageRef::Entry(m),
        EntryKind::CustomMessage { custom_type, content, display } => {
            MessageRef::Made(Box::new(AgentMessage::Custom {
                custom_type: custom_type.clone(),
                content: content.clone(),
                display: *display,
                timestamp: iso_to_ms(&entry.timestamp),
            }))
        }
        EntryKind::BranchSummary { from_id, summary, .. } if !summary.is_empty() => {
            MessageRef::Made(Box::new(AgentMessage::BranchSummary {
                summary: summary.clone(),
                from_id: from_id.clone(),
                timestamp: iso_to_ms(&entry.timestamp),
            }))
        }
        _ => return None,
    })
}

fn push<'a>(messages: &mut Vec<ContextRef<'a>>, entry: &'a Entry) {
    if let Some(message) = message_of(entry) {
        messages.push(ContextRef { entry_id: &entry.id, message });
    }
}

/// The messages of pi's `buildSessionContext`, borrowing from the branch so
/// that large sessions are not copied (see [`super::Session::context_refs`]).
pub(crate) fn build_refs<'a>(path: &[&'a Entry]) -> Vec<ContextRef<'a>> {
    let compaction = path.iter().rev().find(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let mut messages = Vec::new();
    match compaction {
        Some(comp) => {
            let EntryKind::Compaction { summary, first_kept_entry_id, tokens_before, .. } = &comp.kind else {
                return messages;
            };
            messages.push(ContextRef {
                entry_id: &comp.id,
                message: MessageRef::Made(Box::new(AgentMessage::CompactionSummary {
                    summary: summary.clone(),
                    tokens_before: *tokens_before,
                    timestamp: iso_to_ms(&comp.timestamp),
                })),
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
    messages
}
