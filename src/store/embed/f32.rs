//! Eval machinery: what the store's int8 vectors cost in recall. The store
//! keeps each passage's vector quantized to int8 (a quarter of f32's bytes);
//! `tests/search_eval` embeds a corpus keeping the encoder's f32 vectors
//! too, then ranks the same queries with either. Never for a user's store.

use std::sync::Arc;

use sentence_embed::Encoder;

use super::{blob, embed_passages, EmbedReport, PendingText};
use crate::store::vectors::F32Vectors;
use crate::store::{Store, StoreError};

impl Store {
    /// Eval only: [`Store::embed_pending`] (no budget, no progress),
    /// keeping every passage's f32 vector too, as the encoder gave it.
    #[doc(hidden)]
    pub fn embed_pending_keeping_f32(
        &mut self,
        encoder: &Encoder,
    ) -> Result<(EmbedReport, F32Vectors), StoreError> {
        let mut kept = F32Vectors::default();
        let mut keep = |texts: &[PendingText]| {
            let vectors =
                embed_passages(encoder, texts).map_err(|e| StoreError::Embed(e.to_string()))?;
            let blobs = vectors.iter().map(|v| blob(v)).collect();
            for (text, vectors) in texts.iter().zip(vectors) {
                kept.keep(text.rowid, vectors);
            }
            Ok(blobs)
        };
        let report = self.fill_pending(encoder, None, &mut keep, None)?;
        Ok((report, kept))
    }

    /// Eval only: this store's semantic queries score `f32` (kept
    /// by [`Store::embed_pending_keeping_f32`]) instead of the stored int8
    /// vectors; `None`: the int8 ones again.
    #[doc(hidden)]
    pub fn score_f32(&self, f32: Option<Arc<F32Vectors>>) {
        *self.scored_f32.borrow_mut() = f32;
    }
}
