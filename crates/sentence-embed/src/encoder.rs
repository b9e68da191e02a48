//! The sentence encoder: word pieces in, one unit vector per text out, on CPU.
//!
//! all-MiniLM-L6-v2 as sentence-transformers runs it: BERT word pieces (uncased,
//! `[CLS] … [SEP]`, at most 256 of them), a 6-layer BERT ([`crate::bert`], on
//! candle's tensors), the mean of
//! the last layer over the real (unpadded) pieces, then L2 normalization.
//!
//! Texts are encoded in batches sorted by length, so a batch pads little; a batch
//! holds at most [`EncoderOptions::batch_pieces`] word pieces (padding included),
//! which bounds the activations (batch × len × 1536 in the feed-forward layers,
//! batch × 12 heads × len² in attention) and so the memory. Small batches are
//! also the fast ones on CPU: a batch's activations then stay in the caches (see
//! [`EncoderOptions::batch_pieces`] for the figures).
//! The work runs on the encoder's own thread pool of [`EncoderOptions::threads`]
//! threads, so a background backfill can use one core while a query uses another.
//! A backfill takes its own encoder ([`Encoder::sharing_weights`]: the same
//! weights, another pool, at the lowest CPU priority with
//! [`EncoderOptions::background`]): on a shared pool a query would wait for the
//! backfill's batch in progress (seconds), and the backfill would compete with
//! the user's own work at full priority.

use std::sync::Arc;

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::config::BertConfig;
use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{LayerNorm, VarBuilder};
use safetensors::{Dtype, SafeTensors};
use tokenizers::Tokenizer;

use crate::bert::{Add, Layers};
use crate::model::ModelFiles;
use crate::vector::Embedding;

/// How many word pieces a text keeps, `[CLS]` and `[SEP]` included
/// (sentence-transformers' `max_seq_length` for this model).
pub const MAX_PIECES: usize = 256;

/// How an [`Encoder`] runs.
#[derive(Clone, Debug)]
pub struct EncoderOptions {
    /// Threads of the encoder's pool (matrix products and the rest).
    pub threads: usize,
    /// The most word pieces one batch holds, padding included (at least
    /// [`MAX_PIECES`]: a batch always takes one text whole).
    ///
    /// Default [`MAX_PIECES`] (256): two passages of 128 pieces, or more shorter
    /// ones. Measured with `session-index embed --budget 40` on 1 thread over the
    /// search bench's 3,000 generated sessions (load 6–8): 22–24 passages per
    /// CPU-s and a peak RSS of 136 MB, against 16 passages per CPU-s and 349 MB
    /// with 4,096 pieces per batch (1,024: 17 and 172 MB; 512: 19–21 and 148 MB;
    /// 128: 20–22 and 130 MB). A 4,096-piece batch's activations are 25 MB a
    /// tensor and live in memory, not the caches, and their pages are mapped and
    /// faulted in again batch after batch.
    pub batch_pieces: usize,
    /// The pool's threads run at the lowest CPU priority (nice 19 on Linux,
    /// background QoS on macOS), for work nobody waits for.
    pub background: bool,
    /// The dense layers (nine tenths of the arithmetic) in bfloat16 where the
    /// CPU multiplies it natively (AVX-512 BF16), each product summed in f32:
    /// twice the products per instruction. Default `true`; `false` keeps f32
    /// everywhere. Where the CPU cannot, f32 either way. An encoder made with
    /// [`Encoder::sharing_weights`] runs as the one it shares with.
    pub bf16: bool,
}

impl Default for EncoderOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            threads,
            batch_pieces: MAX_PIECES,
            background: false,
            bf16: true,
        }
    }
}

/// Why a model could not be loaded or a text not encoded. Each names the problem in
/// one line.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    #[error("model file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("model file {path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("tokenizing failed: {0}")]
    Tokenize(String),
    #[error("the encoder failed: {0}")]
    Inference(#[from] candle_core::Error),
    #[error("cannot start the encoder's {threads} threads: {message}")]
    Threads { threads: usize, message: String },
}

/// A text as word pieces, ready for the model.
struct Pieces {
    ids: Vec<u32>,
}

/// all-MiniLM-L6-v2, loaded. `Send + Sync`: one can serve queries from several
/// threads (each call runs on the encoder's pool).
pub struct Encoder {
    tokenizer: Tokenizer,
    weights: Arc<Weights>,
    cls: u32,
    sep: u32,
    pool: rayon::ThreadPool,
    batch_pieces: usize,
    dims: usize,
}

impl Encoder {
    /// Loads the model from `dir` (as installed by [`crate::install`]: the files of
    /// [`crate::MINILM_L6_V2`]). Sizes are checked, not checksums (those were checked
    /// at install, and hashing 90 MB would cost more than the load itself).
    pub fn load(dir: &Path, options: &EncoderOptions) -> Result<Self, EncoderError> {
        let files = ModelFiles::open(dir)?;
        let config: BertConfig =
            serde_json::from_slice(&files.config_bytes).map_err(|e| invalid(&files.config, e))?;
        let mut tokenizer = Tokenizer::from_bytes(&files.tokenizer_bytes)
            .map_err(|e| invalid(&files.tokenizer, e))?;
        // The file pads and truncates to 128 for another use; batches pad themselves.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| invalid(&files.tokenizer, e))?;
        let special = |token: &str| {
            tokenizer
                .token_to_id(token)
                .ok_or_else(|| EncoderError::Invalid {
                    path: files.tokenizer.clone(),
                    message: format!("no {token} in the vocabulary"),
                })
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let (embeddings, layers) = load_weights(&files.weights, &config, options.bf16)?;
        Ok(Self {
            tokenizer,
            weights: Arc::new(Weights { embeddings, layers }),
            cls,
            sep,
            pool: thread_pool(options)?,
            batch_pieces: options.batch_pieces.max(MAX_PIECES),
            dims: config.hidden_size,
        })
    }

    /// Another encoder of the same model, sharing this one's weights (nothing
    /// is loaded or copied but the tokenizer), on a pool of its own as
    /// `options` say.
    pub fn sharing_weights(&self, options: &EncoderOptions) -> Result<Self, EncoderError> {
        Ok(Self {
            tokenizer: self.tokenizer.clone(),
            weights: self.weights.clone(),
            cls: self.cls,
            sep: self.sep,
            pool: thread_pool(options)?,
            batch_pieces: options.batch_pieces.max(MAX_PIECES),
            dims: self.dims,
        })
    }

    /// The CPU priority (nice value) of the pool's threads, as the system
    /// reports it; 0 where it cannot be asked.
    pub fn pool_priority(&self) -> i32 {
        self.pool.install(priority::current)
    }

    /// Width of the vectors (384).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// One unit vector per text, in order. Texts longer than [`MAX_PIECES`] word
    /// pieces are truncated (split them first with [`Encoder::passages`] to embed
    /// all of a long text).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EncoderError> {
        let pieces = texts
            .iter()
            .map(|t| self.pieces(t))
            .collect::<Result<Vec<_>, _>>()?;
        self.pool.install(|| self.embed_pieces(&pieces))
    }

    /// The vector of one text (a search query).
    pub fn embed_query(&self, text: &str) -> Result<Embedding, EncoderError> {
        let mut vectors = self.embed(&[text])?;
        Ok(vectors.pop().expect("one vector per text"))
    }

    /// The model's input for `text`: `[CLS]`, its word pieces (truncated to
    /// [`MAX_PIECES`] in all), `[SEP]`.
    pub fn word_pieces(&self, text: &str) -> Result<Vec<u32>, EncoderError> {
        Ok(self.pieces(text)?.ids)
    }

    /// How many word pieces `text` becomes (without `[CLS]` and `[SEP]`, untruncated).
    pub fn count_pieces(&self, text: &str) -> Result<usize, EncoderError> {
        Ok(self.encode_plain(text)?.get_ids().len())
    }

    /// Splits `text` into consecutive passages of at most `max_pieces` word pieces
    /// each, `[CLS]` and `[SEP]` included (so `max_pieces` ≤ [`MAX_PIECES`] embeds
    /// each passage whole), cut between words. Returns byte ranges of `text`,
    /// covering every word once; whitespace-only text has no passage.
    pub fn passages(
        &self,
        text: &str,
        max_pieces: usize,
    ) -> Result<Vec<Range<usize>>, EncoderError> {
        let encoding = self.encode_plain(text)?;
        let budget = max_pieces.clamp(3, MAX_PIECES) - 2;
        let offsets = encoding.get_offsets();
        let words = encoding.get_word_ids();
        let mut ranges = Vec::new();
        let mut start = 0;
        while start < offsets.len() {
            let mut end = (start + budget).min(offsets.len());
            if end < offsets.len() {
                // Back off to the start of the word the cut would split.
                let word_start = (start + 1..=end).rev().find(|&i| words[i] != words[i - 1]);
                end = word_start.unwrap_or(end);
            }
            ranges.push(offsets[start].0..offsets[end - 1].1);
            start = end;
        }
        Ok(ranges)
    }

    fn encode_plain(&self, text: &str) -> Result<tokenizers::Encoding, EncoderError> {
        self.tokenizer
            .encode(text, false)
            .map_err(|e| EncoderError::Tokenize(e.to_string()))
    }

    fn pieces(&self, text: &str) -> Result<Pieces, EncoderError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| EncoderError::Tokenize(e.to_string()))?;
        let body = &encoding.get_ids()[..encoding.get_ids().len().min(MAX_PIECES - 2)];
        let mut ids = Vec::with_capacity(body.len() + 2);
        ids.push(self.cls);
        ids.extend_from_slice(body);
        ids.push(self.sep);
        Ok(Pieces { ids })
    }

    fn embed_pieces(&self, texts: &[Pieces]) -> Result<Vec<Embedding>, EncoderError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].ids.len());
        let mut vectors: Vec<Option<Embedding>> = vec![None; texts.len()];
        let mut rest = &order[..];
        while !rest.is_empty() {
            let batch = self.next_batch(texts, rest);
            let (now, later) = rest.split_at(batch);
            let batch: Vec<&Pieces> = now.iter().map(|&i| &texts[i]).collect();
            for (&i, vector) in now.iter().zip(self.forward(&batch)?) {
                vectors[i] = Some(vector);
            }
            rest = later;
        }
        Ok(vectors
            .into_iter()
            .map(|v| v.expect("every text was in a batch"))
            .collect())
    }

    /// How many of `rest` (sorted by length) fit in one batch.
    fn next_batch(&self, texts: &[Pieces], rest: &[usize]) -> usize {
        let fits = rest
            .iter()
            .enumerate()
            .take_while(|(n, &i)| (n + 1) * texts[i].ids.len() <= self.batch_pieces)
            .count();
        fits.max(1)
    }

    fn forward(&self, batch: &[&Pieces]) -> Result<Vec<Embedding>, EncoderError> {
        let len = batch.iter().map(|p| p.ids.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        for pieces in batch {
            let padding = len - pieces.ids.len();
            ids.extend_from_slice(&pieces.ids);
            ids.extend(std::iter::repeat_n(0u32, padding));
            mask.extend(std::iter::repeat_n(1u32, pieces.ids.len()));
            mask.extend(std::iter::repeat_n(0u32, padding));
        }
        let device = Device::Cpu;
        let shape = (batch.len(), len);
        let input = self.weights.embeddings.forward(&ids, shape)?;
        // Attention ignores padding: f32::MIN is added to the scores of padded keys.
        let blocked: Vec<f32> = mask
            .iter()
            .map(|&m| if m == 1 { 0.0 } else { f32::MIN })
            .collect();
        let blocked = Tensor::from_vec(blocked, (batch.len(), 1, 1, len), &device)?;
        let hidden = self.weights.layers.forward(&input, &blocked)?;
        let hidden = hidden.flatten_all()?.to_vec1::<f32>()?;
        Ok(batch
            .iter()
            .zip(hidden.chunks_exact(len * self.dims))
            .map(|(pieces, states)| {
                Embedding::normalized(mean_state(states, self.dims, pieces.ids.len()))
            })
            .collect())
    }
}

/// The mean of a text's states over its `real` word pieces: `states` are its
/// rows of `hidden` values, one per piece, the padding after the real ones.
fn mean_state(states: &[f32], hidden: usize, real: usize) -> Vec<f32> {
    let mut sum = vec![0.0f32; hidden];
    for row in states.chunks_exact(hidden).take(real) {
        for (total, x) in sum.iter_mut().zip(row) {
            *total += x;
        }
    }
    let count = real.max(1) as f32;
    for total in &mut sum {
        *total /= count;
    }
    sum
}

/// The model's weights, shared by the encoders of one load.
struct Weights {
    embeddings: Embeddings,
    layers: Layers,
}

/// The pool `options` ask for.
fn thread_pool(options: &EncoderOptions) -> Result<rayon::ThreadPool, EncoderError> {
    let threads = options.threads.max(1);
    let background = options.background;
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("sentence-embed-{i}"))
        .start_handler(move |_| {
            if background {
                priority::lowest();
            }
        })
        .build()
        .map_err(|e| EncoderError::Threads {
            threads,
            message: e.to_string(),
        })
}

/// The calling thread's CPU priority. Best effort: a system that refuses
/// leaves the thread as it was.
mod priority {
    /// Moves the calling thread (not the process) to the lowest priority.
    pub fn lowest() {
        // SAFETY: plain system calls on the calling thread, no pointers.
        #[cfg(target_os = "linux")]
        unsafe {
            // On Linux a thread id names that thread alone.
            let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, thread, 19);
        }
        #[cfg(target_os = "macos")]
        unsafe {
            libc::setpriority(libc::PRIO_DARWIN_THREAD, 0, libc::PRIO_DARWIN_BG);
        }
    }

    /// The calling thread's nice value (0 where it cannot be asked).
    pub fn current() -> i32 {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: as above.
            unsafe {
                let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::getpriority(libc::PRIO_PROCESS, thread)
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    }
}

/// BERT's input layer, with the word-embedding table left in the mapped file: it is
/// half the weights (30,522 × 384 `f32`, 47 MB) and a batch uses a few hundred of
/// its rows, so copying it on every load (one per CLI search) would be waste.
struct Embeddings {
    file: memmap2::Mmap,
    /// Byte range of the word-embedding table in `file`.
    words: Range<usize>,
    vocabulary: usize,
    hidden: usize,
    positions: Tensor,
    token_type: Tensor,
    layer_norm: LayerNorm,
}

impl Embeddings {
    /// Word + position + token-type embeddings, normalized: `(batch, len, hidden)`.
    fn forward(&self, ids: &[u32], (batch, len): (usize, usize)) -> Result<Tensor, EncoderError> {
        let table = &self.file[self.words.clone()];
        let row_bytes = self.hidden * 4;
        let mut values = Vec::with_capacity(ids.len() * self.hidden);
        for &id in ids {
            let id = (id as usize).min(self.vocabulary - 1);
            let row = &table[id * row_bytes..(id + 1) * row_bytes];
            values.extend(
                row.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        let words = Tensor::from_vec(values, (batch, len, self.hidden), &Device::Cpu)?;
        let positions = self.positions.narrow(0, 0, len)?;
        let summed = words
            .apply_op2_no_bwd(&positions, &Add)?
            .apply_op2_no_bwd(&self.token_type, &Add)?;
        Ok(self.layer_norm.forward(&summed)?)
    }
}

/// Maps the weights and loads what is copied: the encoder layers, the position and
/// token-type tables (the word table stays mapped, see [`Embeddings`]).
fn load_weights(
    path: &Path,
    config: &BertConfig,
    bf16: bool,
) -> Result<(Embeddings, Layers), EncoderError> {
    let file = regular_files::open_regular(path).map_err(|source| EncoderError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // SAFETY: the model directory is written once by `install` (into a fresh
    // directory renamed into place) and never modified in place, so the mapped
    // bytes do not change under the mapping.
    let mapped = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| EncoderError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let hidden = config.hidden_size;
    let words = {
        let tensors = SafeTensors::deserialize(&mapped).map_err(|e| invalid(path, e))?;
        let table = tensors
            .tensor("embeddings.word_embeddings.weight")
            .map_err(|e| invalid(path, e))?;
        if table.dtype() != Dtype::F32 || table.shape() != [config.vocab_size, hidden] {
            return Err(invalid(
                path,
                format!(
                    "word embeddings are {:?} {:?}",
                    table.dtype(),
                    table.shape()
                ),
            ));
        }
        let start = table.data().as_ptr() as usize - mapped.as_ptr() as usize;
        start..start + table.data().len()
    };
    let loaded = {
        let weights = VarBuilder::from_slice_safetensors(&mapped, DType::F32, &Device::Cpu)
            .map_err(|e| invalid(path, e))?;
        load_copied(&weights, config, bf16).map_err(|e| invalid(path, e))?
    };
    let (positions, token_type, layer_norm, layers) = loaded;
    let embeddings = Embeddings {
        file: mapped,
        words,
        vocabulary: config.vocab_size,
        hidden,
        positions,
        token_type,
        layer_norm,
    };
    Ok((embeddings, layers))
}

type Copied = (Tensor, Tensor, LayerNorm, Layers);

fn load_copied(
    weights: &VarBuilder<'_>,
    config: &BertConfig,
    bf16: bool,
) -> candle_core::Result<Copied> {
    let hidden = config.hidden_size;
    {
        let embeddings = weights.pp("embeddings");
        let positions = embeddings.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let token_type = embeddings
            .get(
                (config.type_vocab_size, hidden),
                "token_type_embeddings.weight",
            )?
            .get(0)?;
        let layer_norm =
            candle_nn::layer_norm(hidden, config.layer_norm_eps, embeddings.pp("LayerNorm"))?;
        let layers = Layers::load(weights.pp("encoder"), config, bf16)?;
        Ok((positions, token_type, layer_norm, layers))
    }
}

fn invalid(path: &Path, error: impl std::fmt::Display) -> EncoderError {
    EncoderError::Invalid {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}
