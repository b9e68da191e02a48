//! Text views of a parsed branch: pi's `serializeConversation`, `truncateTail`,
//! the indexing view and the files touched.
