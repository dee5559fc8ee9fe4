//! Sentence embeddings for hybrid search (feature `semantic`): a local sentence-transformers
//! model directory, checked against the manifest of known models and loaded for pure-Rust
//! inference on the CPU.
//!
//! Owns: [`ModelDir`] (the directory, its sha256 against [`KNOWN_MODELS`], pooling, token
//! limit, the model's identity) and [`Embedder`] (unit vectors of queries and of many texts).
//!
//! Never does: download a model (`scripts/fetch-model.sh` does that, once, by hand or in CI),
//! fall back silently (a missing, unknown or broken model is an error naming its path), or rank.

mod embedder;
mod model;

pub use embedder::{BATCH, EmbedError, Embedder};
pub use model::{
    KNOWN_MODELS, KnownModel, MODEL_FILES, ModelDir, ModelError, Pooling, Trust, sha256_hex,
};

/// The cosine of two unit vectors (their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
