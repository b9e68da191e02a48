//! Semantic ranking's query side: the model, loaded once per process, and
//! the store's vectors, held in memory in one block per store and refreshed
//! incrementally (only the rows embedded since the last look are read; the
//! whole block again only after embedded rows were deleted), scored by brute
//! force (44,640 int8 vectors in ~5 ms: no approximate index is needed at
//! these sizes).
//!
//! The model is all-MiniLM-L6-v2 as `session-index model install` puts it,
//! in `<agent dir>/session-index/models/all-MiniLM-L6-v2/`. Without it (or
//! with `search.semantic` off) a store ranks lexically only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rusqlite::Connection;
use sentence_embed::{
    Embedding, Encoder, EncoderOptions, Int8Vector, ModelSpec, VectorSet, MINILM_L6_V2,
};

use super::schema::{self, SPAN};

/// The sentence encoder the store's vectors come from.
pub const MODEL: &ModelSpec = &MINILM_L6_V2;

/// Where the model is installed for an agent directory:
/// `<agent dir>/session-index/models/all-MiniLM-L6-v2`.
pub fn model_dir(agent_dir: &Path) -> PathBuf {
    MODEL.dir_in(&sentence_embed::models_dir(agent_dir))
}

/// Width of the model's vectors.
pub(super) const DIMS: usize = 384;
/// Bytes of one stored vector (scale + 384 int8).
pub(super) const VECTOR_BYTES: usize = Int8Vector::byte_len(DIMS);

/// A loaded model, by directory and thread count.
type Loaded = Vec<(PathBuf, usize, Arc<Encoder>)>;

/// The background encoder of a model directory.
type Background = Vec<(PathBuf, Arc<Encoder>)>;

/// The encoder of the model in `dir` running on `threads` threads, loaded
/// once per process; `None` when the model is not installed there. A model
/// that is there but does not load is logged and `None`.
pub(super) fn encoder(dir: &Path, threads: usize) -> Option<Arc<Encoder>> {
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    let loaded = LOADED.get_or_init(Default::default);
    let mut loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, encoder)) = loaded.iter().find(|(d, t, _)| d == dir && *t == threads) {
        return Some(encoder.clone());
    }
    if !dir.join("model.safetensors").is_file() {
        return None;
    }
    let options = EncoderOptions {
        threads,
        ..EncoderOptions::default()
    };
    match Encoder::load(dir, &options) {
        Ok(encoder) => {
            let encoder = Arc::new(encoder);
            loaded.push((dir.to_path_buf(), threads, encoder.clone()));
            Some(encoder)
        }
        Err(e) => {
            tracing::warn!("semantic search is off: {e}");
            None
        }
    }
}

/// The encoder of the model in `dir` for a backfill nobody waits for: the
/// weights of [`encoder`]`(dir, 1)`, on a one-thread pool of its own at the
/// lowest CPU priority, loaded once per process. A query's encoder is another
/// pool, so a query never waits for the backfill's batch in progress.
pub(super) fn background_encoder(dir: &Path) -> Option<Arc<Encoder>> {
    static BACKGROUND: OnceLock<Mutex<Background>> = OnceLock::new();
    let background = BACKGROUND.get_or_init(Default::default);
    let mut background = background.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, encoder)) = background.iter().find(|(d, _)| d == dir) {
        return Some(encoder.clone());
    }
    let options = EncoderOptions {
        threads: 1,
        background: true,
        ..EncoderOptions::default()
    };
    match encoder(dir, 1)?.sharing_weights(&options) {
        Ok(encoder) => {
            let encoder = Arc::new(encoder);
            background.push((dir.to_path_buf(), encoder.clone()));
            Some(encoder)
        }
        Err(e) => {
            tracing::warn!("semantic search cannot embed in the background: {e}");
            None
        }
    }
}

/// The vectors of one store, as this process last read them.
struct Block {
    /// The last `seq` read.
    seq: i64,
    /// The `dropped` counter when the block was started.
    dropped: i64,
    set: VectorSet,
    /// The row (`embeddings.rowid`) of each vector of `set`.
    rows: Vec<i64>,
    /// The session of each vector of `set`, as an index into `sids`: a
    /// query keeps each session's best passage in a plain array (hashing
    /// every passage's session was a tenth of a query at 700,000 passages).
    slots: Vec<u32>,
    /// The sessions of the block, by slot.
    sids: Vec<i64>,
    /// The slot of each session.
    slot_of: HashMap<i64, u32>,
}

impl Block {
    fn new(dropped: i64) -> Block {
        Block {
            seq: 0,
            dropped,
            set: VectorSet::new(DIMS),
            rows: Vec::new(),
            slots: Vec::new(),
            sids: Vec::new(),
            slot_of: HashMap::new(),
        }
    }

    /// The slot of session `sid`, given one when it has none yet.
    fn slot(&mut self, sid: i64) -> u32 {
        let next = self.sids.len() as u32;
        let slot = *self.slot_of.entry(sid).or_insert(next);
        if slot == next {
            self.sids.push(sid);
        }
        slot
    }

    /// Read what was embedded since the last look (everything again after
    /// embedded rows were deleted: their vectors must not rank).
    fn refresh(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let dropped: i64 = conn.query_row(schema::COUNTER, ["dropped"], |r| r.get(0))?;
        if dropped != self.dropped {
            *self = Block::new(dropped);
        }
        let mut stmt = conn.prepare_cached(schema::VECTORS_AFTER)?;
        let mut rows = stmt.query([self.seq])?;
        while let Some(r) = rows.next()? {
            let (rowid, seq): (i64, i64) = (r.get(0)?, r.get(1)?);
            let bytes = r.get_ref(2)?.as_blob_or_null()?.unwrap_or_default();
            for vector in bytes.chunks_exact(VECTOR_BYTES) {
                if self.set.push_bytes(vector).is_ok() {
                    self.rows.push(rowid);
                    let slot = self.slot(rowid / SPAN);
                    self.slots.push(slot);
                }
            }
            self.seq = self.seq.max(seq);
        }
        Ok(())
    }
}

/// The vector block of the store at `path`, shared by the process's stores of it.
fn block(path: &Path) -> Arc<Mutex<Block>> {
    static BLOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<Block>>>>> = OnceLock::new();
    let blocks = BLOCKS.get_or_init(Default::default);
    let mut blocks = blocks.lock().unwrap_or_else(|e| e.into_inner());
    blocks
        .entry(path.to_path_buf())
        .or_insert_with(|| Arc::new(Mutex::new(Block::new(-1))))
        .clone()
}

/// The vectors of one store for a query: its block, read once at the
/// query's start, then scored on whichever thread embeds the query (no
/// connection needed).
pub(super) struct Vectors {
    block: Arc<Mutex<Block>>,
    /// Eval only: the f32 vectors scored instead (see [`F32Vectors`]).
    f32: Option<Arc<F32Vectors>>,
}

/// The vectors of the store at `path`, refreshed through `conn`; `None`
/// when it holds none (a query need not load the model). Eval only: `f32`,
/// the vectors scored instead of the stored int8 ones.
pub(super) fn embedded(
    conn: &Connection,
    path: &Path,
    f32: Option<Arc<F32Vectors>>,
) -> rusqlite::Result<Option<Vectors>> {
    let shared = block(path);
    let mut block = shared.lock().unwrap_or_else(|e| e.into_inner());
    block.refresh(conn)?;
    let any = !block.rows.is_empty();
    drop(block);
    Ok(any.then_some(Vectors { block: shared, f32 }))
}

/// A session's best passage for a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct DenseHit {
    pub sid: i64,
    /// The row whose passage scored best (an entry, or the meta row).
    pub row: i64,
    pub score: f32,
}

impl Vectors {
    /// The sessions whose best passage is most similar to `query`, best
    /// first, at most `n`.
    pub(super) fn nearest_sessions(&self, query: &Embedding, n: usize) -> Vec<DenseHit> {
        let block = self.block.lock().unwrap_or_else(|e| e.into_inner());
        // Each session's best passage (the first of equals): its score and index.
        let mut best: Vec<Option<(f32, usize)>> = vec![None; block.sids.len()];
        let scores = match &self.f32 {
            Some(f32) => f32.scores(&block.rows, query),
            None => block.set.scores(query),
        };
        for (index, (&score, &slot)) in scores.iter().zip(&block.slots).enumerate() {
            let session = &mut best[slot as usize];
            if session.is_none_or(|(top, _)| score > top) {
                *session = Some((score, index));
            }
        }
        let hits = best
            .iter()
            .zip(&block.sids)
            .filter_map(|(session, &sid)| {
                let (score, index) = (*session)?;
                Some(DenseHit {
                    sid,
                    row: block.rows[index],
                    score,
                })
            })
            .collect();
        sentence_embed::top_k_by(hits, n, |hit| hit.score, |hit| hit.sid)
    }
}

/// Eval only (`tests/search_eval`: what int8 vectors cost in recall): each
/// row's passages' vectors as the encoder gave them, in f32, before they
/// were quantized for the store (see `Store::embed_pending_keeping_f32`).
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct F32Vectors {
    by_row: HashMap<i64, Vec<Embedding>>,
}

impl F32Vectors {
    pub(super) fn keep(&mut self, row: i64, vectors: Vec<Embedding>) {
        self.by_row.insert(row, vectors);
    }

    /// Passages kept.
    pub fn len(&self) -> usize {
        self.by_row.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cosine of `query` and each vector of a block whose vectors
    /// belong to `rows` (a row's passages one after the other, in order);
    /// a passage not kept scores nothing (-inf).
    fn scores(&self, rows: &[i64], query: &Embedding) -> Vec<f32> {
        let mut scores = Vec::with_capacity(rows.len());
        let mut nth = 0;
        for (i, row) in rows.iter().enumerate() {
            nth = if i > 0 && rows[i - 1] == *row {
                nth + 1
            } else {
                0
            };
            let kept = self.by_row.get(row).and_then(|v| v.get(nth));
            scores.push(kept.map_or(f32::NEG_INFINITY, |v| v.cosine(query)));
        }
        scores
    }
}

/// The vectors of a store this process holds in memory (read by its last
/// semantic query), as the search bench reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VectorMemory {
    /// Passages (one vector each).
    pub passages: usize,
    /// Their bytes: a scale and [`DIMS`] int8 each, the row and the session slot each belongs to.
    pub bytes: usize,
}

/// [`VectorMemory`] of the store at `path`.
pub(super) fn in_memory(path: &Path) -> VectorMemory {
    let block = block(path);
    let block = block.lock().unwrap_or_else(|e| e.into_inner());
    VectorMemory {
        passages: block.set.len(),
        bytes: block.set.len()
            * (VECTOR_BYTES + std::mem::size_of::<i64>() + std::mem::size_of::<u32>()),
    }
}
