//! The embedding job: turns the store's pending rows (written by the update,
//! in the same transaction as the text, with no vectors yet) into int8
//! vectors of their passages. It runs after and beside the updates and the
//! queries, a batch of rows at a time, each batch written in a short
//! transaction of its own, so it can stop anywhere (a time budget, the
//! process ending) and go on later where it stopped; a query meanwhile ranks
//! with what is embedded.
//!
//! What is embedded: the text the update hashed (`rows::passage_source`:
//! user and assistant text and summaries, never tool output), redacted, cut
//! into passages of [`PASSAGE_PIECES`] word pieces between words, every
//! passage of a turn's first [`TEXT_BYTES`] (a long turn is split, not cut:
//! what a user remembers of a session is often said deep inside a long
//! answer); tiny turns ("yes", "go on") none. A text already embedded
//! elsewhere in the store is not embedded again.
//!
//! Why whole turns (measured on the search-eval tune half, 100 generated
//! distractors): when an assistant turn gave only its first 2 passages and a
//! user turn its first 4, the dense ranking found 53/60/65 of 70 targets at
//! top-1/3/10; with every passage 58/64/65, for 7% more passages (1,261
//! instead of 1,178) and 11% more embedding CPU. 256-piece passages found
//! the same top-3 (58/64/65) for 26% more CPU than the capped 128-piece ones
//! (the encoder's attention costs more per piece on longer inputs).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::{params, OptionalExtension, TransactionBehavior};
use sentence_embed::{Embedding, Encoder};

use super::rows::{passage_source, text_hash};
use super::schema::{self, SPAN};
use super::update::meta_passage;
use super::vectors::VECTOR_BYTES;
use super::{Store, StoreError};

mod f32;
mod synthetic;

/// Word pieces per passage, `[CLS]` and `[SEP]` included.
pub const PASSAGE_PIECES: usize = 128;
/// Texts shorter than this (in characters, trimmed) are not embedded.
const TINY_CHARS: usize = 12;
/// Bytes of a text embedded, at most: its beginning (~70 passages), a bound
/// on what one pasted log costs the backfill (the longest turn of the
/// search-eval targets is 8.5 KB).
const TEXT_BYTES: usize = 32 * 1024;
/// Rows read, embedded and written per batch (one short write transaction).
const BATCH_ROWS: i64 = 48;

/// How [`Store::fill_pending`] makes a batch of pending texts into vectors:
/// one blob (its passages' vectors) per text.
type Vectorize<'a> = dyn FnMut(&[PendingText]) -> Result<Vec<Vec<u8>>, StoreError> + 'a;

/// How far the embedding of a store is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedStatus {
    /// Rows (turns, summaries, metas) with their vectors.
    pub embedded: u64,
    /// Rows waiting for theirs.
    pub pending: u64,
}

/// What one run of the job did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedReport {
    /// Rows given vectors.
    pub rows: u64,
    /// Passages embedded (vectors written).
    pub passages: u64,
    /// Rows left pending (the budget ran out, or their text could not be read).
    pub pending: u64,
}

/// A pending row's text to embed, with what identifies it.
struct PendingText {
    rowid: i64,
    hash: i64,
    /// Empty: nothing worth embedding (stored with no vectors).
    passages: Vec<String>,
}

impl Store {
    /// How many rows are embedded and how many wait (kept in the
    /// `counters` table by the writes, not counted).
    pub fn embed_status(&self) -> Result<EmbedStatus, StoreError> {
        let count = |name: &str| {
            self.conn
                .query_row(schema::COUNTER, [name], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as u64)
        };
        let status = (|| {
            Ok(EmbedStatus {
                embedded: count("embedded")?,
                pending: count("pending")?,
            })
        })();
        status.map_err(|e: rusqlite::Error| self.sql(e))
    }

    /// Embed pending rows with `encoder` until none is left or `budget`
    /// runs out; `progress` is called after each batch with the rows done
    /// so far and the status.
    pub fn embed_pending(
        &mut self,
        encoder: &Encoder,
        budget: Option<Duration>,
        progress: &mut dyn FnMut(&EmbedReport),
    ) -> Result<EmbedReport, StoreError> {
        let deadline = budget.map(|b| Instant::now() + b);
        let mut embed = |texts: &[PendingText]| {
            embed_texts(encoder, texts).map_err(|e| StoreError::Embed(e.to_string()))
        };
        self.fill_pending(encoder, deadline, &mut embed, Some(progress))
    }

    /// The job's loop: the pending rows a batch at a time, their passages cut
    /// with `encoder`'s tokenizer, made into vectors by `vectorize` (one blob
    /// of a text's passages per text) and written, until none is left or the
    /// `deadline` passes. `progress`, when given, is called after each batch
    /// with the rows done so far and the rows left (counted for it).
    fn fill_pending(
        &mut self,
        encoder: &Encoder,
        deadline: Option<Instant>,
        vectorize: &mut Vectorize<'_>,
        mut progress: Option<&mut dyn FnMut(&EmbedReport)>,
    ) -> Result<EmbedReport, StoreError> {
        let mut report = EmbedReport::default();
        let mut from = 0;
        loop {
            if super::past(deadline) {
                break;
            }
            let batch = self.next_pending(from).map_err(|e| self.sql(e))?;
            let Some(last) = batch.last() else { break };
            from = last.0 + 1;
            let texts: Vec<PendingText> = batch
                .iter()
                .filter_map(|&(rowid, hash)| self.pending_text(encoder, rowid, hash))
                .collect();
            let vectors = vectorize(&texts)?;
            let written = self
                .write_vectors(&texts, &vectors)
                .map_err(|e| self.sql(e))?;
            report.rows += written;
            report.passages += vectors
                .iter()
                .map(|v| (v.len() / VECTOR_BYTES) as u64)
                .sum::<u64>();
            if let Some(progress) = progress.as_mut() {
                report.pending = self.embed_status()?.pending;
                progress(&report);
            }
        }
        report.pending = self.embed_status()?.pending;
        Ok(report)
    }

    fn next_pending(&self, from: i64) -> rusqlite::Result<Vec<(i64, i64)>> {
        let mut stmt = self.conn.prepare_cached(schema::NEXT_PENDING)?;
        let rows = stmt.query_map(params![from, BATCH_ROWS], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// The passages of pending row `rowid`, if its text is still the one
    /// hashed `hash` (a file rewritten since is left to the next update),
    /// redacted. `None`: not readable now (left pending).
    fn pending_text(&self, encoder: &Encoder, rowid: i64, hash: i64) -> Option<PendingText> {
        let text = if rowid % SPAN == 0 {
            self.meta_passage(rowid)?
        } else {
            self.entry_passage(rowid)?
        };
        if text_hash(&text) != hash {
            return None;
        }
        let text = crate::redact::redact(&text);
        let passages = if text.trim().chars().count() < TINY_CHARS {
            Vec::new()
        } else {
            passages(encoder, &text)
        };
        Some(PendingText {
            rowid,
            hash,
            passages,
        })
    }

    fn meta_passage(&self, rowid: i64) -> Option<String> {
        let row = self.meta_row(rowid).ok()??;
        let [name, tags, summary, ..] = &row.columns;
        Some(meta_passage(name, summary, tags))
    }

    /// The text an entry row is embedded from, read again from its session
    /// file (only a file the gate lets out).
    fn entry_passage(&self, rowid: i64) -> Option<String> {
        let sid = rowid / SPAN;
        let (path, cwd): (String, String) = self
            .conn
            .query_row(schema::SESSION_PATH, [sid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .ok()??;
        let path = PathBuf::from(path);
        if !self.gate.inside(&path) || self.gate.excludes(&cwd, &path) {
            return None;
        }
        let (entry_id, line): (String, i64) = self
            .conn
            .query_row(schema::ENTRY_AT, [rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .ok()??;
        let file = crate::session::open_file(&path).ok()?;
        let read = crate::session::read_lines(&path, file, line as u64, line as u64 + 1).ok()?;
        let entry = read.entries.first().filter(|e| e.id.as_str() == entry_id)?;
        passage_source(entry)
    }

    /// Store the vectors of `texts` (one blob each, in order) in one write
    /// transaction, each with the next `seq`; rows replaced meanwhile (their
    /// hash changed) are left alone. Returns the rows written.
    fn write_vectors(
        &mut self,
        texts: &[PendingText],
        vectors: &[Vec<u8>],
    ) -> rusqlite::Result<u64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut seq: i64 = tx.query_row(schema::COUNTER, ["vectors"], |r| r.get(0))?;
        let mut written = 0;
        {
            let mut set = tx.prepare_cached(schema::SET_VECTORS)?;
            for (text, blob) in texts.iter().zip(vectors) {
                let n = set.execute(params![text.rowid, text.hash, blob, seq + 1])?;
                if n > 0 {
                    seq += 1;
                    written += 1;
                }
            }
        }
        tx.execute(schema::SET_COUNTER, params!["vectors", seq])?;
        tx.execute(
            schema::ADD_TO_COUNTER,
            params!["pending", -(written as i64)],
        )?;
        tx.execute(schema::ADD_TO_COUNTER, params!["embedded", written as i64])?;
        tx.commit()?;
        Ok(written)
    }
}

/// The passages of `text`'s first [`TEXT_BYTES`], cut at [`PASSAGE_PIECES`]
/// word pieces between words (a text the tokenizer cannot take has none).
fn passages(encoder: &Encoder, text: &str) -> Vec<String> {
    let text = crate::text::byte_head(text, TEXT_BYTES);
    let ranges = encoder.passages(text, PASSAGE_PIECES).unwrap_or_default();
    ranges.into_iter().map(|r| text[r].to_string()).collect()
}

/// The vectors of each text's passages, back to back, one blob per text.
fn embed_texts(
    encoder: &Encoder,
    texts: &[PendingText],
) -> Result<Vec<Vec<u8>>, sentence_embed::EncoderError> {
    let vectors = embed_passages(encoder, texts)?;
    Ok(vectors.iter().map(|v| blob(v)).collect())
}

/// The vectors of each text's passages, in f32 as the encoder gives them.
fn embed_passages(
    encoder: &Encoder,
    texts: &[PendingText],
) -> Result<Vec<Vec<Embedding>>, sentence_embed::EncoderError> {
    let all: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.passages.iter().map(String::as_str))
        .collect();
    let mut vectors = encoder.embed(&all)?.into_iter();
    Ok(texts
        .iter()
        .map(|t| vectors.by_ref().take(t.passages.len()).collect())
        .collect())
}

/// A text's passages' vectors as stored: int8, back to back.
fn blob(vectors: &[Embedding]) -> Vec<u8> {
    vectors
        .iter()
        .flat_map(|v| v.quantize().to_bytes())
        .collect()
}
