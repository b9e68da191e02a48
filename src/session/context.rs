//! pi's `buildSessionContext` over an already resolved branch, as an
//! iterator: serializing a context of a million messages never holds a
//! list of them.

use super::entries::*;

/// The context message of one entry: borrowed when the entry is a message,
/// converted (small) for custom messages and branch summaries.
fn message_of(entry: &Entry) -> Option<MessageRef<'_>> {
    Some(match &entry.kind {
        EntryKind::Message(m) => MessageRef::Entry(m),
        EntryKind::CustomMessage {
            custom_type,
            content,
            display,
        } => MessageRef::Made(Box::new(AgentMessage::Custom {
            custom_type: custom_type.clone(),
            content: content.clone(),
            display: *display,
            timestamp: entry.timestamp,
        })),
        EntryKind::BranchSummary {
            from_id, summary, ..
        } if !summary.is_empty() => MessageRef::Made(Box::new(AgentMessage::BranchSummary {
            summary: summary.clone(),
            from_id: from_id.clone(),
            timestamp: entry.timestamp,
        })),
        _ => return None,
    })
}

/// The messages of pi's `buildSessionContext`, borrowing from the branch so
/// that large sessions are not copied (see [`super::Session::context_refs`]).
pub(crate) fn refs<'a>(path: &'a [&'a Entry]) -> impl Iterator<Item = MessageRef<'a>> + 'a {
    let compaction = path.iter().rev().find_map(|e| match &e.kind {
        EntryKind::Compaction {
            summary,
            first_kept_entry_id,
            tokens_before,
            ..
        } => Some((e, summary, first_kept_entry_id, *tokens_before)),
        _ => None,
    });
    let (summary, kept, after): (_, &[&Entry], &[&Entry]) = match compaction {
        None => (None, &[], path),
        Some((comp, summary, first_kept, tokens_before)) => {
            let message = MessageRef::Made(Box::new(AgentMessage::CompactionSummary {
                summary: summary.clone(),
                tokens_before,
                timestamp: comp.timestamp,
            }));
            // pi finds the first compaction on the path with that id (duplicates!),
            // and keeps the entries before it from the first kept one on.
            let idx = path
                .iter()
                .position(|e| matches!(e.kind, EntryKind::Compaction { .. }) && e.id == comp.id)
                .unwrap_or(0);
            let before = &path[..idx];
            let kept = before
                .iter()
                .position(|e| e.id == *first_kept)
                .map_or(&[][..], |k| &before[k..]);
            (Some(message), kept, &path[idx + 1..])
        }
    };
    summary
        .into_iter()
        .chain(kept.iter().chain(after).filter_map(|e| message_of(e)))
}
