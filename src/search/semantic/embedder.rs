//! Sentence vectors from a checked model directory: tokenize, run the BERT encoder on the CPU
//! (f32), pool, normalise to unit length.
//!
//! Owns: the tokenizer settings the shipped files get wrong for this use (a `tokenizer.json`
//! that pads every input to a fixed length is read without padding; truncation is the model's
//! token limit), batching (texts sorted by token count and run [`BATCH`] at a time, with no
//! padding: the encoder lays a batch's sequences end to end), and the order of results (the
//! caller's).
//!
//! Never does: scoring, caching or choosing what text a tool is embedded from.

use tokenizers::Tokenizer;

use super::encoder::Encoder;
use super::model::{MODEL_FILES, ModelDir, ModelError, Pooling, Trust};

/// Texts per forward pass when embedding many. Measured with all-MiniLM-L6-v2 here: 16–32
/// texts sorted by length give the most texts per CPU-second.
pub const BATCH: usize = 32;

/// Inference failed for a text (the model loaded, so this is not the user's configuration).
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The tokenizer rejected the text.
    #[error("semantic model: cannot tokenize a text: {0}")]
    Tokenize(String),
    /// The forward pass failed.
    #[error("semantic model: inference failed: {0}")]
    Inference(String),
}

/// A loaded sentence-embedding model. Inference takes `&self`; one value serves every thread.
pub struct Embedder {
    model: Encoder,
    tokenizer: Tokenizer,
    dir: ModelDir,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("path", &self.dir.path)
            .field("known", &self.dir.known)
            .field("id", &self.dir.id)
            .field("dimension", &self.dimension())
            .finish()
    }
}

impl Embedder {
    /// Opens, checks ([`ModelDir::open`]) and loads the model in `path`.
    pub fn open(path: &std::path::Path, trust: Trust) -> Result<Self, ModelError> {
        Self::load(ModelDir::open(path, trust)?)
    }

    /// Loads an opened model directory: the tokenizer and the weights into RAM.
    pub fn load(mut dir: ModelDir) -> Result<Self, ModelError> {
        let tokenizer_path = dir.path.join(MODEL_FILES[1]);
        let invalid_tokenizer = |message: String| ModelError::Invalid {
            path: tokenizer_path.clone(),
            message,
        };
        let mut tokenizer = Tokenizer::from_bytes(&dir.tokenizer_json)
            .map_err(|e| invalid_tokenizer(format!("not a tokenizers file: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: dir.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| {
                invalid_tokenizer(format!("cannot truncate at {}: {e}", dir.max_tokens))
            })?;
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > dir.config.vocab_size {
            return Err(invalid_tokenizer(format!(
                "its vocabulary has {vocab} tokens but config.json's vocab_size is {}",
                dir.config.vocab_size
            )));
        }
        dir.tokenizer_json = Vec::new();

        let weights_path = dir.path.join(MODEL_FILES[2]);
        let weights = std::mem::take(&mut dir.weights);
        let invalid_weights = |message: String| ModelError::Invalid {
            path: weights_path.clone(),
            message,
        };
        let model = Encoder::load(&weights, &dir.config).map_err(|e| {
            invalid_weights(if e.starts_with("not a safetensors file") {
                e
            } else {
                format!("the weights do not fit config.json's BERT: {e}")
            })
        })?;
        drop(weights);
        Ok(Embedder {
            model,
            tokenizer,
            dir,
        })
    }

    /// The checked directory the model came from (its path, identity, known name).
    pub fn model(&self) -> &ModelDir {
        &self.dir
    }

    /// The length of every vector.
    pub fn dimension(&self) -> usize {
        self.dir.config.hidden_size
    }

    /// The unit vector of one text (a query): no padding at all.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let ids = self.tokens(text)?;
        Ok(self.forward(&[ids], true)?.pop().unwrap_or_default())
    }

    /// The unit vectors of `texts`, in their order, computed [`BATCH`] at a time over texts
    /// sorted by token count, the batches spread over rayon's pool (one core each).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        use rayon::prelude::*;
        let mut tokenized: Vec<(usize, Vec<u32>)> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| Ok((i, self.tokens(text)?)))
            .collect::<Result<_, EmbedError>>()?;
        tokenized.sort_by_key(|(i, ids)| (ids.len(), *i));
        let batches: Vec<Vec<Vec<f32>>> = tokenized
            .par_chunks(BATCH)
            .map(|chunk| {
                let ids: Vec<Vec<u32>> = chunk.iter().map(|(_, ids)| ids.clone()).collect();
                self.forward(&ids, false)
            })
            .collect::<Result<_, EmbedError>>()?;
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for ((i, _), vector) in tokenized.iter().zip(batches.into_iter().flatten()) {
            out[*i] = vector;
        }
        Ok(out)
    }

    /// The token ids of `text` with the model's special tokens, truncated to its limit.
    pub fn tokens(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// One forward pass over `batch`, each sequence pooled and normalised; `split` as
    /// [`Encoder::forward`]'s.
    fn forward(&self, batch: &[Vec<u32>], split: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        let sequences: Vec<&[u32]> = batch.iter().map(Vec::as_slice).collect();
        let hidden = self.model.hidden();
        let states = self
            .model
            .forward(&sequences, split)
            .map_err(EmbedError::Inference)?;
        let mut rows = states.chunks_exact(hidden.max(1));
        let mut out = Vec::with_capacity(batch.len());
        for ids in &sequences {
            let tokens: Vec<&[f32]> = rows.by_ref().take(ids.len()).collect();
            let mut pooled = vec![0.0f32; hidden];
            match self.dir.pooling {
                Pooling::Mean => {
                    for row in &tokens {
                        pooled.iter_mut().zip(*row).for_each(|(p, v)| *p += v);
                    }
                    let count = tokens.len().max(1) as f32;
                    pooled.iter_mut().for_each(|p| *p /= count);
                }
                Pooling::Cls => {
                    if let Some(first) = tokens.first() {
                        pooled.copy_from_slice(first);
                    }
                }
            }
            let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            pooled.iter_mut().for_each(|v| *v /= norm);
            out.push(pooled);
        }
        Ok(out)
    }
}
