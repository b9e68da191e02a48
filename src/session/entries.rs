//! The in-memory model of a pi session file (pi's `session-manager.ts` types),
//! shaped for bounded memory: image data is never kept, and
//! tool-result text keeps a bounded head plus its full length.
//!
//! An entry is kept whole for every line, so its size bounds a session of
//! many small entries (issue 13: a million of them within 200 MB, with the
//! branch and the serialized context). An [`Entry`] is 128 bytes: ids
//! (pi's are 8 characters) and short texts are held inline
//! ([`CompactString`], up to 24 bytes), a user's or an assistant's one
//! block too ([`Blocks`]), and rare or large parts are boxed. A longer text
//! is one allocation of its size; a message of several blocks, one more.

pub use compact_str::CompactString;
use serde_json::Value;

/// A message's blocks: one is held inline (most user messages and many
/// replies have one), more are one allocation.
pub type Blocks = smallvec::SmallVec<[Block; 1]>;

/// First line of a session file.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionHeader {
    /// 1, 2 or 3 (a missing version means 1, as in pi).
    pub version: u32,
    /// Session id; usually a UUID, but not necessarily.
    pub id: String,
    /// ISO timestamp of creation.
    pub timestamp: String,
    pub cwd: String,
    /// Path of the session this one was forked from.
    pub parent_session: Option<String>,
}

/// One entry of the tree (every line after the header).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: CompactString,
    pub parent_id: Option<CompactString>,
    /// The entry's ISO `timestamp`, in milliseconds since the epoch (what pi's
    /// `new Date(entry.timestamp).getTime()` gives; 0 when unparsable).
    pub timestamp: i64,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    Message(AgentMessage),
    ThinkingLevelChange {
        thinking_level: String,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    Compaction {
        summary: String,
        first_kept_entry_id: String,
        tokens_before: u64,
        /// pi's file lists; `None` when written by an extension (`fromHook`).
        details: Option<Box<Value>>,
    },
    BranchSummary {
        from_id: String,
        summary: String,
        /// pi's file lists; `None` when written by an extension (`fromHook`).
        details: Option<Box<Value>>,
    },
    /// Extension state; not part of the LLM context (its `data` is not kept: nothing reads it).
    Custom {
        custom_type: String,
    },
    CustomMessage {
        custom_type: String,
        content: Box<[Block]>,
        display: bool,
    },
    Label {
        target_id: String,
        label: Option<String>,
    },
    SessionInfo {
        name: Option<String>,
    },
    /// An entry type this reader does not know; kept so the tree stays connected.
    Unknown {
        entry_type: String,
    },
}

/// pi's `AgentMessage` union.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentMessage {
    /// A string content is kept as one text block (pi's views read it so).
    User {
        content: Blocks,
        timestamp: i64,
    },
    Assistant {
        content: Blocks,
        /// Boxed: rare, and inline it would make every entry 16 bytes larger.
        error_message: Option<Box<CompactString>>,
        timestamp: i64,
    },
    ToolResult {
        tool_name: CompactString,
        content: Box<[Block]>,
        is_error: bool,
        timestamp: i64,
    },
    BashExecution(Box<BashExecution>),
    Custom {
        custom_type: String,
        content: Box<[Block]>,
        display: bool,
        timestamp: i64,
    },
    BranchSummary {
        summary: String,
        from_id: String,
        timestamp: i64,
    },
    CompactionSummary {
        summary: String,
        tokens_before: u64,
        timestamp: i64,
    },
}

/// A `bashExecution` message (boxed in [`AgentMessage`]: it is large and rare).
#[derive(Debug, Clone, PartialEq)]
pub struct BashExecution {
    pub command: String,
    pub output: BoundedText,
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub truncated: bool,
    pub full_output_path: Option<String>,
    pub exclude_from_context: bool,
    pub timestamp: i64,
}

impl AgentMessage {
    /// pi's role name (`user`, `assistant`, `toolResult`, `bashExecution`, ...).
    pub fn role(&self) -> &'static str {
        match self {
            AgentMessage::User { .. } => "user",
            AgentMessage::Assistant { .. } => "assistant",
            AgentMessage::ToolResult { .. } => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom { .. } => "custom",
            AgentMessage::BranchSummary { .. } => "branchSummary",
            AgentMessage::CompactionSummary { .. } => "compactionSummary",
        }
    }
}

/// The text blocks of a content joined with `separator` (pi's previews join
/// with " ", views with "\n"), each as [`BoundedText::shown`].
pub fn text_joined(blocks: &[Block], separator: &str) -> String {
    let texts = blocks.iter().filter_map(|b| match b {
        Block::Text(t) => Some(t.shown()),
        _ => None,
    });
    texts.collect::<Vec<_>>().join(separator)
}

/// A content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text. In tool results the text is bounded (see [`BoundedText`]); elsewhere it is whole.
    Text(BoundedText),
    Thinking(String),
    /// A tool call; `arguments` keeps key order (serde_json `preserve_order`) for pi parity.
    ToolCall {
        name: CompactString,
        /// Boxed: inline, it would make every block (text included) 120 bytes.
        arguments: Box<Value>,
    },
    /// An image: the base64 data is never read.
    Image {
        mime_type: String,
    },
}

/// Text that may have been cut while reading to bound memory.
///
/// `head` holds the text (whole when `full_utf16_len` equals its UTF-16
/// length). pi measures lengths in UTF-16 code units, so the full length is
/// kept in those units for byte-identical truncation markers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundedText {
    pub head: CompactString,
    pub full_utf16_len: usize,
    pub full_bytes: usize,
}

impl BoundedText {
    pub fn whole(text: impl Into<CompactString>) -> Self {
        let head = text.into();
        BoundedText {
            full_utf16_len: super::utf16_len(&head),
            full_bytes: head.len(),
            head,
        }
    }

    /// True when `head` is the complete text.
    pub fn is_complete(&self) -> bool {
        self.head.len() == self.full_bytes
    }

    /// The text as a view shows a message's text: the head, and when it is
    /// not the whole text, a note of how much was not read. (Tool results
    /// are shown as pi cuts them instead.)
    pub fn shown(&self) -> std::borrow::Cow<'_, str> {
        if self.is_complete() {
            return std::borrow::Cow::Borrowed(&self.head);
        }
        let note = super::convert::cut_note(self.full_bytes.saturating_sub(self.head.len()));
        std::borrow::Cow::Owned(format!("{}{note}", self.head))
    }
}

/// Problems met while reading, counted by kind; each kind is reported once.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Warnings {
    pub blank_lines: u64,
    pub malformed_lines: u64,
    pub truncated_final_line: u64,
    pub invalid_utf8_lines: u64,
    pub missing_header: u64,
    pub unknown_entry_types: u64,
    pub dangling_parents: u64,
    pub cyclic_parents: u64,
    pub duplicate_ids: u64,
    /// Texts longer than the reader keeps, cut to a head (a text block keeps
    /// its full length beside it; views say what was not read).
    pub cut_texts: u64,
    /// Lines read past because, even with their long texts cut, they stayed
    /// longer than the reader holds (`session::LONG_LINE`).
    pub oversized_lines: u64,
    /// The oldest entries of a session longer than the reader holds
    /// (`session::MAX_ENTRIES`): read, then let go.
    pub entries_not_kept: u64,
}

/// A message of the built context (see [`super::Session::context_refs`]):
/// its entry's own, borrowed, or one made for the context (a summary, a
/// custom message), boxed.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageRef<'a> {
    Entry(&'a AgentMessage),
    Made(Box<AgentMessage>),
}

impl std::ops::Deref for MessageRef<'_> {
    type Target = AgentMessage;
    fn deref(&self) -> &AgentMessage {
        match self {
            MessageRef::Entry(m) => m,
            MessageRef::Made(m) => m,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The sizes the module docs state: a session of a million small entries
    /// is held in about 128 MB (issue 13's 200 MB includes the branch and the
    /// serialized context).
    #[test]
    fn entries_stay_small() {
        assert_eq!(std::mem::size_of::<super::Entry>(), 128);
        assert_eq!(std::mem::size_of::<super::Block>(), 40);
    }
}
