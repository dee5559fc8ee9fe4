//! Vectors for texts, computed once: from memory, else from the on-disk cache, else embedded
//! (and then written to the cache).
//!
//! Owns: the in-memory map of every vector this process has seen (so a new catalog snapshot
//! embeds only new or changed texts), embedding what is missing in length-sorted batches and
//! storing it a chunk at a time (an interrupted run keeps what it finished), the counts
//! of cached and computed texts that telemetry reports, and the vectors of the
//! [`RECENT_QUERIES`] most recent queries (in memory only: an agent that repeats or retries a
//! search, or several sessions asking the same, pay the embedding once).
//!
//! Never does: decide what text stands for a tool, or rank. A cache that cannot be written
//! costs speed, never an answer: the vectors are still returned, and the failure is counted.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::cache::{CacheError, TextKey, VectorCache, text_key};
use super::embedder::{EmbedError, Embedder};
use crate::sync::Locked;

/// Texts embedded and written to the cache as one segment.
pub const STORE_CHUNK: usize = 512;

/// Query vectors kept, least recently used first out (1,024 × 384 floats: 1.5 MiB).
pub const RECENT_QUERIES: usize = 1024;

/// A shared vector: one allocation per distinct text.
pub type Vector = Arc<[f32]>;

/// The vectors of a list of texts.
#[derive(Debug, Default)]
pub struct Embedded {
    /// One vector per text, in the texts' order.
    pub vectors: Vec<Vector>,
    /// Distinct texts found in memory or in the cache.
    pub cached: usize,
    /// Distinct texts embedded now.
    pub computed: usize,
}

/// An embedder with its caches.
pub struct VectorStore {
    embedder: Arc<Embedder>,
    cache: Option<VectorCache>,
    memory: Mutex<HashMap<TextKey, Vector>>,
    skipped: Vec<String>,
    store_failures: AtomicUsize,
    recent: Mutex<lru::LruCache<String, Vector>>,
    query_hits: AtomicUsize,
}

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("embedder", &self.embedder)
            .field("cache", &self.cache.as_ref().map(VectorCache::dir))
            .finish()
    }
}

impl VectorStore {
    /// A store for `embedder`'s vectors, reading and writing the cache under `cache_root`
    /// (`None`: memory only). Reads the model's cached vectors now.
    pub fn open(embedder: Arc<Embedder>, cache_root: Option<&Path>) -> Result<Self, CacheError> {
        let (cache, memory, skipped) = match cache_root {
            None => (None, HashMap::new(), Vec::new()),
            Some(root) => {
                let cache = VectorCache::open(root, &embedder.model().id, embedder.dimension())?;
                let loaded = cache.load()?;
                let memory = loaded
                    .vectors
                    .into_iter()
                    .map(|(key, vector)| (key, Vector::from(vector)))
                    .collect();
                (Some(cache), memory, loaded.skipped)
            }
        };
        Ok(VectorStore {
            embedder,
            cache,
            memory: Mutex::new(memory),
            skipped,
            store_failures: AtomicUsize::new(0),
            recent: Mutex::new(lru::LruCache::new(
                std::num::NonZeroUsize::new(RECENT_QUERIES).unwrap_or(std::num::NonZeroUsize::MIN),
            )),
            query_hits: AtomicUsize::new(0),
        })
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<Embedder> {
        &self.embedder
    }

    /// The cache's directory for this model, when there is a cache.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(VectorCache::dir)
    }

    /// Cache segments that were not trusted when the store opened, with why.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Chunks that could not be written to the cache so far.
    pub fn store_failures(&self) -> usize {
        self.store_failures.load(Ordering::Relaxed)
    }

    /// Vectors known (in memory) for this many distinct texts.
    pub fn known(&self) -> usize {
        self.memory.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// The vector of one query: one of the [`RECENT_QUERIES`] most recent, else embedded now
    /// (never written to disk: queries are not worth it). The lock is not held while embedding,
    /// so two threads asking a new query at once may both embed it.
    pub fn query(&self, text: &str) -> Result<Vector, EmbedError> {
        if let Some(vector) = self.recent.locked().get(text).cloned() {
            self.query_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(vector);
        }
        let vector = Vector::from(self.embedder.embed_one(text)?);
        self.recent.locked().put(text.to_string(), vector.clone());
        Ok(vector)
    }

    /// Queries answered from the recent query vectors so far.
    pub fn query_hits(&self) -> usize {
        self.query_hits.load(Ordering::Relaxed)
    }

    /// The vectors of `texts`, computing only those never seen.
    pub fn vectors(&self, texts: &[&str]) -> Result<Embedded, EmbedError> {
        let keys: Vec<TextKey> = texts.iter().map(|t| text_key(t)).collect();
        let mut missing: Vec<(TextKey, &str)> = Vec::new();
        let mut cached = 0;
        {
            let memory = self.memory.locked();
            let mut seen = std::collections::HashSet::new();
            for (key, text) in keys.iter().zip(texts) {
                if !seen.insert(*key) {
                    continue;
                }
                if memory.contains_key(key) {
                    cached += 1;
                } else {
                    missing.push((*key, text));
                }
            }
        }
        let computed = missing.len();
        for chunk in missing.chunks(STORE_CHUNK) {
            let chunk_texts: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
            let vectors = self.embedder.embed(&chunk_texts)?;
            if let Some(cache) = &self.cache {
                let entries: Vec<(&TextKey, &[f32])> = chunk
                    .iter()
                    .zip(&vectors)
                    .map(|((key, _), v)| (key, v.as_slice()))
                    .collect();
                if let Err(error) = cache.store(&entries) {
                    self.store_failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%error, "vector cache not written");
                }
            }
            let mut memory = self.memory.locked();
            for ((key, _), vector) in chunk.iter().zip(vectors) {
                memory.insert(*key, Vector::from(vector));
            }
        }
        let memory = self.memory.locked();
        let vectors =
            keys.iter()
                .map(|key| {
                    memory.get(key).cloned().ok_or_else(|| {
                        EmbedError::Inference("a computed vector went missing".into())
                    })
                })
                .collect::<Result<_, _>>()?;
        Ok(Embedded {
            vectors,
            cached,
            computed,
        })
    }
}
