//! Sentence vectors: the encoder's unit-length `f32` output ([`Embedding`]), its
//! stored int8 form ([`Int8Vector`]), and the brute-force scorer over many stored
//! vectors ([`VectorSet`]).
//!
//! Why int8 with one scale per vector: a unit vector of 384 dimensions has
//! components well inside ±0.5, spread unevenly between vectors, so a scale per
//! vector (its largest magnitude maps to ±127) keeps ~7 bits for every vector.
//! A vector is then 384 bytes plus a 4-byte scale (388 bytes; 17 MB for 45k
//! passages, a quarter of `f32`), and the cosine of a query with a stored vector is
//! `scale × Σ qᵢ·vᵢ`: one integer dot product per stored vector. The figures for
//! what the rounding costs are in the crate's README. The dot products run on the
//! widest kernel the CPU has ([`dot`]).

use std::fmt;

mod dot;

use dot::{DotQuery, Kernel};

/// A unit-length (L2-normalized) sentence vector, as the encoder returns it.
#[derive(Clone, PartialEq)]
pub struct Embedding(Box<[f32]>);

impl Embedding {
    /// Wraps `values`, scaling them to unit length (a zero vector stays zero).
    pub fn normalized(mut values: Vec<f32>) -> Self {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            values.iter_mut().for_each(|v| *v /= norm);
        }
        Self(values.into_boxed_slice())
    }

    pub fn values(&self) -> &[f32] {
        &self.0
    }

    pub fn dims(&self) -> usize {
        self.0.len()
    }

    /// The cosine similarity with `other` (both are unit length: the dot product).
    pub fn cosine(&self, other: &Embedding) -> f32 {
        self.0.iter().zip(other.0.iter()).map(|(a, b)| a * b).sum()
    }

    /// This vector in its stored int8 form.
    pub fn quantize(&self) -> Int8Vector {
        let max = self.0.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let values = self.0.iter().map(|v| (v / scale).round() as i8).collect();
        Int8Vector { scale, values }
    }
}

impl fmt::Debug for Embedding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Embedding({} dims, {:?}…)",
            self.0.len(),
            &self.0[..self.0.len().min(4)]
        )
    }
}

/// A sentence vector stored as int8: `value ≈ scale × i8`.
#[derive(Clone, Debug, PartialEq)]
pub struct Int8Vector {
    scale: f32,
    values: Box<[i8]>,
}

/// Why bytes could not be read back as an [`Int8Vector`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "a stored vector has {found} bytes, expected {expected} (4-byte scale + 1 byte per dimension)"
)]
pub struct VectorBytesError {
    pub expected: usize,
    pub found: usize,
}

impl Int8Vector {
    /// Bytes of a stored vector of `dims` dimensions (see [`Int8Vector::to_bytes`]).
    pub const fn byte_len(dims: usize) -> usize {
        4 + dims
    }

    pub fn dims(&self) -> usize {
        self.values.len()
    }

    pub fn scale(&self) -> f32 {
        self.scale
    }

    pub fn values(&self) -> &[i8] {
        &self.values
    }

    /// The stored form: the scale as little-endian `f32`, then one byte per dimension.
    /// Stable across platforms; this is what goes into the store.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(Self::byte_len(self.dims()));
        bytes.extend_from_slice(&self.scale.to_le_bytes());
        bytes.extend(self.values.iter().map(|&v| v as u8));
        bytes
    }

    /// Reads [`Int8Vector::to_bytes`] back; `dims` is what the caller's model produces,
    /// so a row written by another model (or torn) is an error, not a wrong score.
    pub fn from_bytes(bytes: &[u8], dims: usize) -> Result<Self, VectorBytesError> {
        let expected = Self::byte_len(dims);
        if bytes.len() != expected {
            return Err(VectorBytesError {
                expected,
                found: bytes.len(),
            });
        }
        let (scale, values) = bytes.split_at(4);
        let scale = f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]);
        Ok(Self {
            scale,
            values: values.iter().map(|&b| b as i8).collect(),
        })
    }

    /// Back to `f32` (not unit length exactly: what the int8 rounding left).
    pub fn dequantize(&self) -> Vec<f32> {
        self.values
            .iter()
            .map(|&v| f32::from(v) * self.scale)
            .collect()
    }
}

/// One result of [`VectorSet::top_k`]: the position of a stored vector (in the order
/// pushed) and its cosine with the query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    pub index: usize,
    pub score: f32,
}

/// Many int8 vectors of one width in one contiguous block, scored by brute force.
///
/// Brute force on purpose: 45k passages × 384 bytes is 17 MB, one pass of integer
/// dot products (a few ms, see the README's bench); an approximate index would add
/// recall loss and a second structure to keep in sync with the store.
#[derive(Clone, Debug, Default)]
pub struct VectorSet {
    dims: usize,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl VectorSet {
    pub fn new(dims: usize) -> Self {
        Self {
            dims,
            scales: Vec::new(),
            values: Vec::new(),
        }
    }

    pub fn with_capacity(dims: usize, vectors: usize) -> Self {
        Self {
            dims,
            scales: Vec::with_capacity(vectors),
            values: Vec::with_capacity(vectors * dims),
        }
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Appends `vector`; its index is the previous [`VectorSet::len`]. Panics if its
    /// width differs (a programming error: bytes from the store go through
    /// [`VectorSet::push_bytes`]).
    pub fn push(&mut self, vector: &Int8Vector) {
        assert_eq!(
            vector.dims(),
            self.dims,
            "vector width differs from the set's"
        );
        self.scales.push(vector.scale);
        self.values.extend_from_slice(&vector.values);
    }

    /// Appends a vector in its stored form ([`Int8Vector::to_bytes`]) without an
    /// intermediate allocation.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), VectorBytesError> {
        let expected = Int8Vector::byte_len(self.dims);
        if bytes.len() != expected {
            return Err(VectorBytesError {
                expected,
                found: bytes.len(),
            });
        }
        let (scale, values) = bytes.split_at(4);
        self.scales
            .push(f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]));
        self.values.extend(values.iter().map(|&b| b as i8));
        Ok(())
    }

    /// The cosine of `query` with every stored vector, in push order.
    pub fn scores(&self, query: &Embedding) -> Vec<f32> {
        assert_eq!(
            query.dims(),
            self.dims,
            "query width differs from the set's"
        );
        let query = query.quantize();
        let dot_query = DotQuery::new(query.values.into_vec());
        let kernel = Kernel::best();
        // The dot products a chunk of vectors at a time, into a buffer that stays in
        // the CPU's cache, each then scaled to a cosine.
        let mut dots = [0i32; CHUNK];
        let mut scores = Vec::with_capacity(self.len());
        for (stored, scales) in self
            .values
            .chunks(CHUNK * self.dims.max(1))
            .zip(self.scales.chunks(CHUNK))
        {
            let dots = &mut dots[..scales.len()];
            kernel.dots(&dot_query, stored, dots);
            scores.extend(
                dots.iter()
                    .zip(scales)
                    .map(|(&dot, &scale)| dot as f32 * query.scale * scale),
            );
        }
        scores
    }

    /// The `k` stored vectors most similar to `query`, best first (ties: lower index
    /// first).
    pub fn top_k(&self, query: &Embedding, k: usize) -> Vec<Hit> {
        let hits = self
            .scores(query)
            .into_iter()
            .enumerate()
            .map(|(index, score)| Hit { index, score })
            .collect();
        top_k_by(hits, k, |hit| hit.score, |hit| hit.index)
    }
}

/// The `k` best of `items`, best first: higher `score` first, equal scores in
/// the order of `tie` (lower first). The `k` are selected before they are
/// sorted, so picking a few of many costs about one pass over them.
pub fn top_k_by<T, K: Ord>(
    mut items: Vec<T>,
    k: usize,
    score: impl Fn(&T) -> f32,
    tie: impl Fn(&T) -> K,
) -> Vec<T> {
    let order = |a: &T, b: &T| {
        score(b)
            .total_cmp(&score(a))
            .then_with(|| tie(a).cmp(&tie(b)))
    };
    if k < items.len() {
        items.select_nth_unstable_by(k, order);
        items.truncate(k);
    }
    items.sort_unstable_by(order);
    items
}

/// Vectors scored per call of the dot-product kernel (a 4 KiB buffer of dots).
const CHUNK: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(values: &[f32]) -> Embedding {
        Embedding::normalized(values.to_vec())
    }

    #[test]
    fn quantized_cosine_is_close_to_the_float_one() {
        let a = unit(
            &(0..384)
                .map(|i| ((i * 7919) % 101) as f32 - 50.0)
                .collect::<Vec<_>>(),
        );
        let b = unit(
            &(0..384)
                .map(|i| ((i * 104_729) % 89) as f32 - 44.0)
                .collect::<Vec<_>>(),
        );
        let mut set = VectorSet::new(384);
        set.push(&a.quantize());
        set.push(&b.quantize());
        let scores = set.scores(&a);
        assert!((scores[0] - 1.0).abs() < 0.01, "{scores:?}");
        assert!(
            (scores[1] - a.cosine(&b)).abs() < 0.01,
            "{scores:?} vs {}",
            a.cosine(&b)
        );
    }

    #[test]
    fn bytes_round_trip_and_wrong_lengths_are_errors() {
        let v = unit(&[0.5, -0.25, 0.0, 1.0]).quantize();
        let bytes = v.to_bytes();
        assert_eq!(bytes.len(), Int8Vector::byte_len(4));
        assert_eq!(Int8Vector::from_bytes(&bytes, 4), Ok(v.clone()));
        assert_eq!(
            Int8Vector::from_bytes(&bytes[..7], 4),
            Err(VectorBytesError {
                expected: 8,
                found: 7
            })
        );
        let mut set = VectorSet::new(4);
        set.push_bytes(&bytes).unwrap();
        assert!(set.push_bytes(&bytes[1..]).is_err());
        assert_eq!(set.len(), 1);
        assert_eq!(v.values()[3], 127, "the largest component maps to 127");
    }

    #[test]
    fn top_k_orders_best_first_and_breaks_ties_by_index() {
        let mut set = VectorSet::new(2);
        for v in [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [-1.0, 0.0]] {
            set.push(&unit(&v).quantize());
        }
        let hits = set.top_k(&unit(&[1.0, 0.0]), 3);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [0, 3, 2]);
        assert!(set.top_k(&unit(&[1.0, 0.0]), 10).len() == 5);
        assert!(VectorSet::new(2).top_k(&unit(&[1.0, 0.0]), 3).is_empty());
    }

    #[test]
    fn top_k_by_keeps_the_best_and_orders_ties() {
        let items = vec![(0.5, 'c'), (0.9, 'b'), (0.5, 'a'), (-1.0, 'd'), (0.9, 'a')];
        let best = |k| top_k_by(items.clone(), k, |item| item.0, |item| item.1);
        assert_eq!(best(3), [(0.9, 'a'), (0.9, 'b'), (0.5, 'a')]);
        assert_eq!(best(9).len(), 5);
        assert_eq!(best(9)[4], (-1.0, 'd'));
        assert!(best(0).is_empty());
    }

    #[test]
    fn a_zero_vector_quantizes_without_dividing_by_zero() {
        let zero = Embedding::normalized(vec![0.0; 8]);
        let q = zero.quantize();
        assert!(q.values().iter().all(|&v| v == 0));
        assert!(q.scale().is_finite());
    }
}
