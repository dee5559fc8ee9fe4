//! The on-disk cache of text vectors, so a catalog is embedded once per model, not per process.
//!
//! Owns: content addressing (a vector is found by the sha256 of its text, under a directory
//! per model identity, [`super::ModelDir::id`]), the segment files (each run that embeds
//! something writes one new file, whole, by write-then-rename, so several processes may share a
//! directory: a reader sees a segment entirely or not at all, and no two writers touch one
//! file), checking a segment before trusting it (header, length, checksum; a bad one is
//! skipped and reported), and compaction (past [`MAX_SEGMENTS`] files, the vectors are merged
//! into one new segment and the merged files removed).
//!
//! Never does: embed (it stores what [`super::Embedder`] computed) or decide which text a tool
//! is embedded from. Entries are never evicted: the directory grows by about 1.6 KB per
//! distinct text (384 dimensions), for every catalog version seen.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

/// The key of a text: its sha256.
pub type TextKey = [u8; 32];

/// Segments in one model's directory before a load merges them.
pub const MAX_SEGMENTS: usize = 8;

/// A segment larger than this is not read (a cache directory is shared, and not ours alone).
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;

const MAGIC: &[u8; 8] = b"TSVEC01\n";
const HEADER_BYTES: usize = 8 + 4 + 8;
const CHECKSUM_BYTES: usize = 8;

/// The key of `text` (the sha256 of its UTF-8 bytes).
pub fn text_key(text: &str) -> TextKey {
    Sha256::digest(text.as_bytes()).into()
}

/// One model's vectors on disk: `<root>/vectors/<model id>/*.seg`.
#[derive(Debug, Clone)]
pub struct VectorCache {
    dir: PathBuf,
    dimension: usize,
}

/// What [`VectorCache::load`] found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every valid vector by its text's key.
    pub vectors: HashMap<TextKey, Vec<f32>>,
    /// The segments read.
    pub segments: usize,
    /// Segments skipped as damaged or foreign, with why (for a warning).
    pub skipped: Vec<String>,
}

/// The cache directory cannot be created or written.
#[derive(Debug, thiserror::Error)]
#[error("vector cache {path}: {source}")]
pub struct CacheError {
    /// The directory or file.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

impl VectorCache {
    /// The cache of the model `model_id` (vectors of `dimension` floats) under `root`; creates
    /// the directory.
    pub fn open(root: &Path, model_id: &str, dimension: usize) -> Result<Self, CacheError> {
        let dir = root.join("vectors").join(model_id);
        std::fs::create_dir_all(&dir).map_err(|source| CacheError {
            path: dir.clone(),
            source,
        })?;
        Ok(VectorCache { dir, dimension })
    }

    /// The model's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads every segment; with more than [`MAX_SEGMENTS`], merges them into one (best effort:
    /// a failed merge leaves the segments as they were).
    pub fn load(&self) -> Result<Loaded, CacheError> {
        let mut loaded = Loaded::default();
        let mut read = Vec::new();
        let entries = std::fs::read_dir(&self.dir).map_err(|source| CacheError {
            path: self.dir.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("seg") {
                continue;
            }
            match self.read_segment(&path) {
                Ok(Some(records)) => {
                    loaded.segments += 1;
                    loaded.vectors.extend(records);
                    read.push(path);
                }
                // Removed by another process's merge between listing and reading.
                Ok(None) => {}
                Err(why) => loaded.skipped.push(format!("{}: {why}", path.display())),
            }
        }
        if read.len() > MAX_SEGMENTS {
            let all: Vec<(&TextKey, &[f32])> = loaded
                .vectors
                .iter()
                .map(|(k, v)| (k, v.as_slice()))
                .collect();
            if self.store(&all).is_ok() {
                for path in read {
                    let _ = std::fs::remove_file(path);
                }
                loaded.segments = 1;
            }
        }
        Ok(loaded)
    }

    /// Writes `entries` as one new segment (nothing when empty).
    pub fn store(&self, entries: &[(&TextKey, &[f32])]) -> Result<(), CacheError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut body = Vec::with_capacity(entries.len() * (32 + 4 * self.dimension));
        let mut count = 0u64;
        for (key, vector) in entries {
            if vector.len() != self.dimension {
                continue;
            }
            body.extend_from_slice(&key[..]);
            for x in *vector {
                body.extend_from_slice(&x.to_le_bytes());
            }
            count += 1;
        }
        let mut bytes = Vec::with_capacity(HEADER_BYTES + body.len() + CHECKSUM_BYTES);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.dimension as u32).to_le_bytes());
        bytes.extend_from_slice(&count.to_le_bytes());
        bytes.extend_from_slice(&body);
        let checksum = xxhash_rust::xxh3::xxh3_64(&bytes);
        bytes.extend_from_slice(&checksum.to_le_bytes());

        let name = unique_name();
        let temp = self.dir.join(format!(".{name}.tmp"));
        let done = self.dir.join(format!("{name}.seg"));
        let failed = |source| CacheError {
            path: temp.clone(),
            source,
        };
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, &done)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            failed(e)
        })
    }

    /// One segment's records; `Ok(None)` when it vanished; `Err` with why it is not trusted.
    #[allow(clippy::type_complexity)]
    fn read_segment(&self, path: &Path) -> Result<Option<Vec<(TextKey, Vec<f32>)>>, String> {
        let size = match std::fs::metadata(path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        if size > MAX_SEGMENT_BYTES {
            return Err(format!(
                "{size} bytes, over the {MAX_SEGMENT_BYTES}-byte bound"
            ));
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        if bytes.len() < HEADER_BYTES + CHECKSUM_BYTES || &bytes[..8] != MAGIC {
            return Err("not a vector segment".into());
        }
        let (content, tail) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
        let stored = u64::from_le_bytes(tail.try_into().map_err(|_| "short")?);
        if xxhash_rust::xxh3::xxh3_64(content) != stored {
            return Err("checksum mismatch (damaged)".into());
        }
        let dimension = u32::from_le_bytes(content[8..12].try_into().map_err(|_| "short")?);
        let count = u64::from_le_bytes(content[12..20].try_into().map_err(|_| "short")?);
        if dimension as usize != self.dimension {
            return Err(format!(
                "vectors of {dimension} dimensions, the model's have {}",
                self.dimension
            ));
        }
        let record = 32 + 4 * self.dimension;
        let body = &content[HEADER_BYTES..];
        if body.len() as u64 != count.saturating_mul(record as u64) {
            return Err(format!("{count} records do not fill {} bytes", body.len()));
        }
        let records = body
            .chunks_exact(record)
            .map(|chunk| {
                let mut key = [0u8; 32];
                key.copy_from_slice(&chunk[..32]);
                let vector = chunk[32..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                (key, vector)
            })
            .collect();
        Ok(Some(records))
    }
}

/// A file name no other writer picks: time, process id and a per-process counter.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{nanos:x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The user's cache directory for toolsearch: `$XDG_CACHE_HOME/toolsearch`, else
/// `$HOME/.cache/toolsearch`; `None` when neither variable is set.
pub fn default_cache_root() -> Option<PathBuf> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    from("XDG_CACHE_HOME")
        .or_else(|| from("HOME").map(|home| home.join(".cache")))
        .map(|base| base.join("toolsearch"))
}
