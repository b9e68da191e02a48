//! The encoder against an independent implementation: vectors written by
//! `tools/minilm-reference/reference.py` (numpy, float64, its own word-piece
//! tokenizer) for the 40 texts of `tests/reference/sentences.json`.

use std::path::Path;

use sentence_embed::{Embedding, Encoder, EncoderOptions, VectorSet, MAX_PIECES};
use serde::Deserialize;

use crate::support::model_dir;

#[derive(Deserialize)]
struct Reference {
    max_seq_len: usize,
    sentences: Vec<Sentence>,
}

#[derive(Deserialize)]
struct Sentence {
    text: String,
    ids: Vec<u32>,
}

fn reference_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference"))
}

fn reference() -> (Reference, Vec<Embedding>) {
    let json = std::fs::read(reference_dir().join("reference.json")).unwrap();
    let reference: Reference = serde_json::from_slice(&json).unwrap();
    let raw = std::fs::read(reference_dir().join("vectors.f32")).unwrap();
    let floats: Vec<f32> = raw
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let vectors: Vec<Embedding> = floats
        .chunks_exact(384)
        .map(|v| Embedding::normalized(v.to_vec()))
        .collect();
    assert_eq!(vectors.len(), reference.sentences.len());
    assert_eq!(reference.max_seq_len, MAX_PIECES);
    (reference, vectors)
}

fn encoder(dir: &Path) -> Encoder {
    Encoder::load(dir, &EncoderOptions::default()).unwrap()
}

/// An encoder on 2 threads whose batches hold up to 4096 word pieces.
fn large_batch_encoder(dir: &Path) -> Encoder {
    Encoder::load(
        dir,
        &EncoderOptions {
            threads: 2,
            batch_pieces: 4096,
            ..EncoderOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn word_pieces_match_the_reference_tokenizer() {
    let Some(dir) = model_dir() else { return };
    let encoder = encoder(dir);
    let (reference, _) = reference();
    for sentence in &reference.sentences {
        assert_eq!(
            encoder.word_pieces(&sentence.text).unwrap(),
            sentence.ids,
            "{:?}",
            sentence.text
        );
    }
    assert!(
        reference
            .sentences
            .iter()
            .any(|s| s.ids.len() == MAX_PIECES),
        "one text is long enough to be truncated"
    );
}

/// Both precisions of the dense layers (bfloat16 is the default where the CPU
/// multiplies it; elsewhere both runs are f32).
#[test]
fn vectors_match_the_reference_per_sentence() {
    let Some(dir) = model_dir() else { return };
    let (reference, expected) = reference();
    let texts: Vec<&str> = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    for bf16 in [true, false] {
        let options = EncoderOptions {
            bf16,
            ..EncoderOptions::default()
        };
        let vectors = Encoder::load(dir, &options).unwrap().embed(&texts).unwrap();
        let mut worst_f32 = f32::MAX;
        let mut worst_int8 = f32::MAX;
        for ((text, got), want) in texts.iter().zip(&vectors).zip(&expected) {
            let cosine = got.cosine(want);
            let int8 = Embedding::normalized(got.quantize().dequantize()).cosine(want);
            assert!(
                cosine >= 0.999,
                "{text:?} (bf16: {bf16}): cosine {cosine} with the reference"
            );
            assert!(
                int8 >= 0.99,
                "{text:?} (bf16: {bf16}): int8 cosine {int8} with the reference"
            );
            worst_f32 = worst_f32.min(cosine);
            worst_int8 = worst_int8.min(int8);
        }
        eprintln!(
            "lowest cosine with the reference over {} texts (bf16 {bf16}): vector {worst_f32:.7}, int8 {worst_int8:.7}",
            texts.len()
        );
    }
}

/// What int8 storage does to scores and rankings: every text as the query against
/// all 40, int8 stored vectors vs the reference's float64 vectors.
#[test]
fn int8_scores_keep_the_reference_ranking() {
    let Some(dir) = model_dir() else { return };
    let encoder = encoder(dir);
    let (reference, expected) = reference();
    let texts: Vec<&str> = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    let vectors = encoder.embed(&texts).unwrap();
    let mut stored = VectorSet::new(encoder.dims());
    vectors.iter().for_each(|v| stored.push(&v.quantize()));
    let (mut max_error, mut same_top3) = (0.0f32, 0);
    for (q, query) in vectors.iter().enumerate() {
        let scores = stored.scores(query);
        let exact: Vec<f32> = expected.iter().map(|e| expected[q].cosine(e)).collect();
        for (got, want) in scores.iter().zip(&exact) {
            max_error = max_error.max((got - want).abs());
        }
        let top3 = |s: &[f32]| {
            let mut order: Vec<usize> = (0..s.len()).collect();
            order.sort_by(|&a, &b| s[b].total_cmp(&s[a]));
            order.truncate(3);
            order
        };
        same_top3 += usize::from(top3(&scores) == top3(&exact));
    }
    eprintln!("int8 scoring: largest cosine error {max_error:.4}; same top-3 as float64 for {same_top3}/{}", texts.len());
    assert!(max_error < 0.02, "int8 cosine error {max_error}");
    assert!(
        same_top3 >= texts.len() - 2,
        "top-3 changed for {} queries",
        texts.len() - same_top3
    );
}

#[test]
fn a_text_gets_the_same_vector_alone_or_in_any_batch() {
    let Some(dir) = model_dir() else { return };
    let (reference, _) = reference();
    let texts: Vec<&str> = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    let large_batches = large_batch_encoder(dir);
    let batched = large_batches.embed(&texts).unwrap();
    let small_batches = Encoder::load(
        dir,
        &EncoderOptions {
            threads: 1,
            batch_pieces: MAX_PIECES,
            ..EncoderOptions::default()
        },
    )
    .unwrap();
    for (text, in_batch) in texts.iter().zip(&batched) {
        let alone = small_batches.embed_query(text).unwrap();
        let cosine = alone.cosine(in_batch);
        assert!(
            cosine > 0.99999,
            "{text:?}: alone vs batched cosine {cosine}"
        );
    }
    assert!(encoder(dir).embed(&[]).unwrap().is_empty());
}

#[test]
fn passages_cover_a_long_text_between_words_within_the_budget() {
    let Some(dir) = model_dir() else { return };
    let encoder = encoder(dir);
    let (reference, _) = reference();
    let long = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for max in [16, 64, 128, MAX_PIECES] {
        let passages = encoder.passages(&long, max).unwrap();
        assert!(passages.len() > 1, "{max}");
        let mut previous_end = 0;
        for range in &passages {
            let passage = &long[range.clone()];
            assert!(
                encoder.word_pieces(passage).unwrap().len() <= max,
                "{max}: {passage:?}"
            );
            let gap = &long[previous_end..range.start];
            assert!(
                !gap.contains(char::is_alphanumeric),
                "{max}: {gap:?} is in no passage"
            );
            // (A word of more pieces than the budget is cut inside: only with 16, where
            // "pneumonoultramicroscopicsilicovolcanoconiosis" does not fit.)
            assert!(
                max < 64
                    || !long[..range.start].ends_with(|c: char| c.is_ascii_alphanumeric())
                    || !passage.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{max}: a word was split before {passage:?}"
            );
            previous_end = range.end;
        }
        assert!(
            !long[previous_end..].contains(char::is_alphanumeric),
            "{max}: the end is covered"
        );
    }
    assert!(encoder.passages("   \n", 64).unwrap().is_empty());
    assert_eq!(encoder.passages("hello world", 64).unwrap(), vec![0..11]);
}

#[test]
fn a_missing_or_damaged_model_is_a_one_line_error() {
    let Some(dir) = model_dir() else { return };
    let empty = tempfile::tempdir().unwrap();
    let error = Encoder::load(empty.path(), &EncoderOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("config.json") && !error.contains('\n'),
        "{error}"
    );

    let damaged = tempfile::tempdir().unwrap();
    for name in ["config.json", "tokenizer.json"] {
        std::fs::copy(dir.join(name), damaged.path().join(name)).unwrap();
    }
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    std::fs::write(
        damaged.path().join("model.safetensors"),
        &weights[..weights.len() / 2],
    )
    .unwrap();
    let error = Encoder::load(damaged.path(), &EncoderOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("model.safetensors") && error.contains("expected 90868376"),
        "{error}"
    );
}

/// The point of it all: a paraphrase finds its passage with no word in common.
#[test]
fn a_paraphrase_finds_its_passage() {
    let Some(dir) = model_dir() else { return };
    let encoder = encoder(dir);
    let (reference, _) = reference();
    let texts: Vec<&str> = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect();
    let mut stored = VectorSet::new(encoder.dims());
    for vector in encoder.embed(&texts).unwrap() {
        stored.push(&vector.quantize());
    }
    let query = encoder
        .embed_query("the API kept refusing us for sending too many calls")
        .unwrap();
    let best: Vec<&str> = stored
        .top_k(&query, 2)
        .iter()
        .map(|hit| texts[hit.index])
        .collect();
    assert!(best.iter().any(|t| t.contains("429")), "{best:?}");
}

/// A backfill's encoder: the same weights on a pool of its own whose threads
/// run at the lowest priority, giving the same vectors; the encoder it shares
/// with keeps its priority.
#[test]
fn an_encoder_sharing_weights_runs_on_its_own_pool_at_the_lowest_priority() {
    let Some(dir) = model_dir() else { return };
    let (reference, expected) = reference();
    let foreground = encoder(dir);
    let background = foreground
        .sharing_weights(&EncoderOptions {
            threads: 1,
            background: true,
            ..EncoderOptions::default()
        })
        .unwrap();
    for (sentence, expected) in reference.sentences.iter().zip(&expected).take(5) {
        let cosine = background
            .embed_query(&sentence.text)
            .unwrap()
            .cosine(expected);
        assert!(cosine > 0.999, "{:?}: cosine {cosine}", sentence.text);
    }
    let before = foreground.pool_priority();
    if cfg!(target_os = "linux") {
        assert_eq!(background.pool_priority(), 19);
        assert!(
            before < 19,
            "the foreground pool keeps its priority: {before}"
        );
    }
}

/// Every thread that encodes is the encoder's (so a background encoder's work
/// runs at its low priority): none of candle's global barrier pool, which its
/// own add starts for a tensor of 64k values or more and whose thread runs at
/// normal priority and spins (see `bert.rs`). The batch here is 2 texts of
/// 256 word pieces: every addition in it is above that size (512 × 384).
#[test]
fn encoding_starts_no_thread_outside_the_encoders_pool() {
    let Some(dir) = model_dir() else { return };
    let (reference, _) = reference();
    let long: String = reference
        .sentences
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let texts: Vec<String> = (0..2).map(|i| format!("{i} {long}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let encoder = large_batch_encoder(dir);
    let vectors = encoder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    if cfg!(target_os = "linux") {
        let names: Vec<String> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .map(|name| name.trim().to_string())
            .collect();
        assert!(
            !names.iter().any(|name| name.starts_with("candle-bp")),
            "threads of this process: {names:?}"
        );
    }
}
