//! The in-memory model of a pi session file (pi's `session-manager.ts` types),
//! shaped for bounded memory: image data is never kept, and
//! tool-result text keeps a bounded head plus its full length.

use serde_json::Value;

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
    pub id: String,
    pub parent_id: Option<String>,
    pub timestamp: String,
    /// 1-based line number in the file, for diagnostics.
    pub line: u64,
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
        details: Option<Value>,
        /// Written by an extension, not pi: its `details` are not pi's file lists.
        from_hook: bool,
    },
    BranchSummary {
        from_id: String,
        summary: String,
        details: Option<Value>,
        /// Written by an extension, not pi: its `details` are not pi's file lists.
        from_hook: bool,
    },
    /// Extension state; not part of the LLM context. `data` is kept as-is (small in practice).
    Custom {
        custom_type: String,
        data: Value,
    },
    CustomMessage {
        custom_type: String,
        content: Content,
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
    User {
        content: Content,
        timestamp: i64,
    },
    Assistant {
        content: Vec<Block>,
        error_message: Option<String>,
        timestamp: i64,
    },
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        content: Vec<Block>,
        is_error: bool,
        timestamp: i64,
    },
    BashExecution {
        command: String,
        output: BoundedText,
        exit_code: Option<i64>,
        cancelled: bool,
        truncated: bool,
        full_output_path: Option<String>,
        exclude_from_context: bool,
        timestamp: i64,
    },
    Custom {
        custom_type: String,
        content: Content,
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

impl AgentMessage {
    /// pi's role name (`user`, `assistant`, `toolResult`, `bashExecution`, ...).
    pub fn role(&self) -> &'static str {
        match self {
            AgentMessage::User { .. } => "user",
            AgentMessage::Assistant { .. } => "assistant",
            AgentMessage::ToolResult { .. } => "toolResult",
            AgentMessage::BashExecution { .. } => "bashExecution",
            AgentMessage::Custom { .. } => "custom",
            AgentMessage::BranchSummary { .. } => "branchSummary",
            AgentMessage::CompactionSummary { .. } => "compactionSummary",
        }
    }
}

/// A message's content: a plain string or typed blocks (user, custom messages).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

impl Content {
    /// The text blocks joined with `separator` (pi's previews join with " ", views with "\n").
    pub fn text_joined(&self, separator: &str) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) => Some(t.head.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(separator),
        }
    }
}

/// A content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text. In tool results the text is bounded (see [`BoundedText`]); elsewhere it is whole.
    Text(BoundedText),
    Thinking(String),
    /// A tool call; `arguments` keeps key order (serde_json `preserve_order`) for pi parity.
    ToolCall {
        id: String,
        name: String,
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
    pub head: String,
    pub full_utf16_len: usize,
    pub full_bytes: usize,
}

impl BoundedText {
    pub fn whole(text: String) -> Self {
        let full_utf16_len = text.encode_utf16().count();
        let full_bytes = text.len();
        BoundedText { head: text, full_utf16_len, full_bytes }
    }

    /// True when `head` is the complete text.
    pub fn is_complete(&self) -> bool {
        self.head.len() == self.full_bytes
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
}

/// A message of the built context borrowed from the session (see
/// [`super::Session::context_refs`]): entries' messages are not copied.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRef<'a> {
    pub entry_id: &'a str,
    pub message: MessageRef<'a>,
}

/// A context message: its entry's own, or one made for the context (a
/// summary, a custom message), boxed so that a context of a million
/// messages costs 32 bytes a message, not the size of the largest role.
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
