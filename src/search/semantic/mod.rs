//! Sentence embeddings for hybrid search (feature `semantic`): a local sentence-transformers
//! model directory, checked against the manifest of known models and loaded for pure-Rust
//! inference on the CPU.
//!
//! Owns: [`ModelDir`] (the directory, its sha256 against [`KNOWN_MODELS`], pooling, token
//! limit, the model's identity), [`Encoder`] (the BERT forward pass), [`Embedder`] (unit
//! vectors of queries and of many texts),
//! [`VectorCache`] (vectors on disk, content-addressed per model, shared by processes) and
//! [`VectorStore`] (memory, then disk, then the embedder).
//!
//! Never does: download a model (`scripts/fetch-model.sh` does that, once, by hand or in CI),
//! fall back silently (a missing, unknown or broken model is an error naming its path), or rank.

mod cache;
mod embedder;
mod encoder;
mod kernels;
mod model;
mod store;

pub use cache::{
    CacheError, Loaded, MAX_SEGMENT_BYTES, MAX_SEGMENTS, TextKey, VectorCache, default_cache_root,
    text_key,
};
pub use embedder::{BATCH, EmbedError, Embedder};
pub use encoder::{Activation, BertConfig, Encoder, erf, gelu};
pub use kernels::query_pool;
pub use model::{
    KNOWN_MODELS, KnownModel, MODEL_FILES, ModelDir, ModelError, Pooling, Trust, sha256_hex,
};
pub use store::{Embedded, RECENT_QUERIES, STORE_CHUNK, Vector, VectorStore};

/// The cosine of two unit vectors (their dot product), summed in 16 lanes: 10–15× faster than
/// one running sum over a 10k-tool index.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    kernels::dot::<false, 16>(a, b)
}
