//! Sentence vectors from a checked model directory: tokenize, run the BERT encoder on the CPU
//! (candle, f32), pool, normalise to unit length.
//!
//! Owns: the tokenizer settings the shipped files get wrong for this use (a `tokenizer.json`
//! that pads every input to a fixed length is read without padding; truncation is the model's
//! token limit), batching (texts sorted by token count, each batch padded to its longest, so
//! padding costs little and never changes a vector: the attention mask hides it and pooling
//! ignores it), and the order of results (the caller's).
//!
//! Never does: scoring, caching or choosing what text a tool is embedded from.

use candle_core::{D, DType, Device, Tensor};
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

impl From<candle_core::Error> for EmbedError {
    fn from(error: candle_core::Error) -> Self {
        EmbedError::Inference(error.to_string())
    }
}

/// A loaded sentence-embedding model. Inference takes `&self`; one value serves every thread.
pub struct Embedder {
    model: Encoder,
    tokenizer: Tokenizer,
    dir: ModelDir,
    device: Device,
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

        let device = Device::Cpu;
        let weights_path = dir.path.join(MODEL_FILES[2]);
        let weights = std::mem::take(&mut dir.weights);
        let invalid_weights = |message: String| ModelError::Invalid {
            path: weights_path.clone(),
            message,
        };
        let tensors = candle_core::safetensors::load_buffer(&weights, &device)
            .map_err(|e| invalid_weights(format!("not a safetensors file: {e}")))?;
        drop(weights);
        let model = Encoder::load(tensors, &dir.config).map_err(|e| {
            invalid_weights(format!("the weights do not fit config.json's BERT: {e}"))
        })?;
        Ok(Embedder {
            model,
            tokenizer,
            dir,
            device,
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
        Ok(self.forward(&[ids])?.pop().unwrap_or_default())
    }

    /// The unit vectors of `texts`, in their order, computed [`BATCH`] at a time over texts
    /// sorted by token count.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut tokenized: Vec<(usize, Vec<u32>)> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| Ok((i, self.tokens(text)?)))
            .collect::<Result<_, EmbedError>>()?;
        tokenized.sort_by_key(|(i, ids)| (ids.len(), *i));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in tokenized.chunks(BATCH) {
            let ids: Vec<Vec<u32>> = chunk.iter().map(|(_, ids)| ids.clone()).collect();
            for ((i, _), vector) in chunk.iter().zip(self.forward(&ids)?) {
                out[*i] = vector;
            }
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

    /// One forward pass over `batch` (each padded to the longest), pooled and normalised.
    fn forward(&self, batch: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows = batch.len();
        let width = batch.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let pad = u32::try_from(self.dir.config.pad_token_id).unwrap_or(0);
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for row in batch {
            ids.extend_from_slice(row);
            ids.extend(std::iter::repeat_n(pad, width - row.len()));
            mask.extend(std::iter::repeat_n(1u32, row.len()));
            mask.extend(std::iter::repeat_n(0u32, width - row.len()));
        }
        let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let hidden = self.model.forward(&ids, &mask)?;
        let pooled = match self.dir.pooling {
            Pooling::Mean => {
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
                let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                summed.broadcast_div(&counts)?
            }
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
        };
        let norms = pooled
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12, f64::MAX)?;
        Ok(pooled.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}
