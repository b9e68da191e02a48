//! Bench machinery: vectors for the pending rows without the encoder's
//! forward pass. A query's cost (embedding the query, scoring every stored
//! vector, fusing) depends on how many vectors there are, not on what they
//! hold, and a real backfill of the search bench's 10,000 sessions takes
//! hours; so `benches/search.rs` fills the store with deterministic
//! pseudo-random unit vectors, one per passage as the job cuts them (the
//! model's tokenizer), written by the job's own write path. Never for a
//! user's store: these vectors mean nothing.

use sentence_embed::{Embedding, Encoder};

use super::{EmbedReport, PendingText};
use crate::store::vectors::DIMS;
use crate::store::{Store, StoreError};

impl Store {
    /// Bench only: give every pending row synthetic vectors (see the
    /// module's doc), seeded by `seed`: each passage one with probability
    /// `share` (1.0: every passage; less: a store as dense as real sessions,
    /// whose passages are fewer than the generated ones'). What was written.
    #[doc(hidden)]
    pub fn fill_pending_with_synthetic_vectors(
        &mut self,
        encoder: &Encoder,
        seed: u64,
        share: f64,
    ) -> Result<EmbedReport, StoreError> {
        let mut state = seed | 1;
        let mut synthetic = |texts: &[PendingText]| {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut blob = Vec::new();
                    for _ in &text.passages {
                        if uniform(&mut state) < share {
                            blob.extend(random_unit(&mut state).quantize().to_bytes());
                        }
                    }
                    blob
                })
                .collect())
        };
        self.fill_pending(encoder, None, &mut synthetic, None)
    }
}

/// A pseudo-random unit vector of the model's width.
fn random_unit(state: &mut u64) -> Embedding {
    let values = (0..DIMS)
        .map(|_| (xorshift(state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect();
    Embedding::normalized(values)
}

/// A pseudo-random number in [0, 1).
fn uniform(state: &mut u64) -> f64 {
    (xorshift(state) >> 11) as f64 / (1u64 << 53) as f64
}

/// The next xorshift64 state.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
