//! The BERT encoder's forward pass on the CPU in f32: token, position and type embeddings,
//! then self-attention and feed-forward layers, each followed by a residual layer norm.
//!
//! Owns: reading the weights from a safetensors file (f32, f16, bf16 or f64, with or without a
//! `bert.` prefix) into [`Linear`] layers packed once at load — each layer's query, key and
//! value projections fused into one — and the pass itself over sequences laid end to end, with
//! no padding: attention runs within each sequence, so sequences of any lengths share every
//! matrix product and no position is computed only to be masked out. The activation is
//! computed here rather than through a scalar `erf` per element (a polynomial ratio accurate to
//! about 1e-7, which the compiler vectorises).
//!
//! Never does: tokenize, pool or normalise (the embedder does), read files, or spawn threads
//! (a split pass runs on the query pool, [`kernels::query_pool`]).

use safetensors::{Dtype, SafeTensors};

use super::kernels::{self, Linear, PORTABLE_FMA, Simd, layer_norm, softmax};

/// What the encoder needs from `config.json`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct BertConfig {
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Width of every token vector.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// The feed-forward activation.
    #[serde(default)]
    pub hidden_act: Activation,
    /// Positions the model has embeddings for.
    pub max_position_embeddings: usize,
    /// Token types the model has embeddings for.
    #[serde(default = "one")]
    pub type_vocab_size: usize,
    /// Layer norm epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// The padding token.
    #[serde(default)]
    pub pad_token_id: usize,
}

fn one() -> usize {
    1
}

fn default_eps() -> f64 {
    1e-12
}

/// The feed-forward activation (`hidden_act`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub enum Activation {
    /// `x · Φ(x)` with the exact normal CDF (`"gelu"`).
    #[default]
    #[serde(rename = "gelu")]
    Gelu,
    /// The tanh approximation (`"gelu_new"`, `"gelu_pytorch_tanh"`).
    #[serde(alias = "gelu_new", rename = "gelu_pytorch_tanh")]
    GeluTanh,
    /// `max(0, x)`.
    #[serde(rename = "relu")]
    Relu,
}

/// One encoder layer: packed projections and the two layer norms' scale and shift.
struct Layer {
    qkv: Linear,
    attention_out: Linear,
    attention_norm: (Vec<f32>, Vec<f32>),
    up: Linear,
    down: Linear,
    output_norm: (Vec<f32>, Vec<f32>),
}

/// A loaded BERT encoder. The forward pass takes `&self`; one value serves every thread.
pub struct Encoder {
    hidden: usize,
    vocab: usize,
    positions: usize,
    /// `vocab × hidden`.
    word: Vec<f32>,
    /// `positions × hidden`.
    position: Vec<f32>,
    /// The first token type's embedding (BERT sentence embeddings use only type 0).
    token_type: Vec<f32>,
    embedding_norm: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    heads: usize,
    activation: Activation,
    eps: f32,
    simd: Simd,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("hidden", &self.hidden)
            .field("layers", &self.layers.len())
            .field("heads", &self.heads)
            .field("simd", &self.simd)
            .finish()
    }
}

/// A safetensors file's tensors, read to f32 one at a time as the encoder asks for them.
struct Tensors<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
}

impl Tensors<'_> {
    /// The tensor `name` as f32, checked against `shape`; missing or misshapen, an error
    /// naming it.
    fn take(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let key = format!("{}{name}", self.prefix);
        let view = self
            .file
            .tensor(&key)
            .map_err(|_| format!("no tensor {key}"))?;
        if view.shape() != shape {
            return Err(format!(
                "{key} has shape {:?}, config.json needs {shape:?}",
                view.shape()
            ));
        }
        to_f32(view.dtype(), view.data()).map_err(|e| format!("{key}: {e}"))
    }
}

/// Little-endian floats of `dtype` as f32.
fn to_f32(dtype: Dtype, bytes: &[u8]) -> Result<Vec<f32>, String> {
    fn read<const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> f32) -> Vec<f32> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    Ok(match dtype {
        Dtype::F32 => read(bytes, f32::from_le_bytes),
        Dtype::F64 => read(bytes, |b| f64::from_le_bytes(b) as f32),
        Dtype::F16 => read(bytes, |b| half::f16::from_le_bytes(b).to_f32()),
        Dtype::BF16 => read(bytes, |b| half::bf16::from_le_bytes(b).to_f32()),
        other => {
            return Err(format!(
                "its type is {other:?}; the encoder reads F32, F16, BF16 or F64"
            ));
        }
    })
}

impl Encoder {
    /// The encoder from the bytes of a safetensors file (tensor names as Hugging Face's
    /// `BertModel` writes them, with or without a `bert.` prefix). A file that is not
    /// safetensors, or whose tensors do not fit `config`, is an error naming what is wrong.
    pub fn load(weights: &[u8], config: &BertConfig) -> Result<Self, String> {
        let file = SafeTensors::deserialize(weights)
            .map_err(|e| format!("not a safetensors file: {e}"))?;
        let prefix = if file.names().iter().any(|k| k.starts_with("bert.")) {
            "bert."
        } else {
            ""
        };
        let t = Tensors { file, prefix };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        if config.num_attention_heads == 0 || h % config.num_attention_heads != 0 {
            return Err(format!(
                "hidden_size {h} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            ));
        }
        let word = t.take("embeddings.word_embeddings.weight", &[config.vocab_size, h])?;
        let position = t.take(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let mut token_type = t.take(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        token_type.truncate(h);
        if token_type.len() != h {
            return Err("embeddings.token_type_embeddings.weight has no type 0".into());
        }
        let embedding_norm = (
            t.take("embeddings.LayerNorm.weight", &[h])?,
            t.take("embeddings.LayerNorm.bias", &[h])?,
        );
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for n in 0..config.num_hidden_layers {
            let weight =
                |name: &str, shape: &[usize]| t.take(&format!("encoder.layer.{n}.{name}"), shape);
            let linear = |name: &str, outputs: usize, inputs: usize| {
                let w = weight(&format!("{name}.weight"), &[outputs, inputs])?;
                let b = weight(&format!("{name}.bias"), &[outputs])?;
                Linear::new(&w, &b, outputs, inputs)
            };
            let q = weight("attention.self.query.weight", &[h, h])?;
            let k = weight("attention.self.key.weight", &[h, h])?;
            let v = weight("attention.self.value.weight", &[h, h])?;
            let qb = weight("attention.self.query.bias", &[h])?;
            let kb = weight("attention.self.key.bias", &[h])?;
            let vb = weight("attention.self.value.bias", &[h])?;
            layers.push(Layer {
                qkv: Linear::fused(&[(&q, &qb), (&k, &kb), (&v, &vb)], h, h)?,
                attention_out: linear("attention.output.dense", h, h)?,
                attention_norm: (
                    weight("attention.output.LayerNorm.weight", &[h])?,
                    weight("attention.output.LayerNorm.bias", &[h])?,
                ),
                up: linear("intermediate.dense", i, h)?,
                down: linear("output.dense", h, i)?,
                output_norm: (
                    weight("output.LayerNorm.weight", &[h])?,
                    weight("output.LayerNorm.bias", &[h])?,
                ),
            });
        }
        Ok(Encoder {
            hidden: h,
            vocab: config.vocab_size,
            positions: config.max_position_embeddings,
            word,
            position,
            token_type,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
            eps: config.layer_norm_eps as f32,
            simd: Simd::detect(),
        })
    }

    /// Width of every token vector.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The last layer's token vectors of each sequence of token ids, laid end to end:
    /// `Σ len × hidden`, row `offset(s) + t` the vector of sequence `s`'s token `t`. A
    /// sequence longer than the model's positions, or an id outside its vocabulary, is an
    /// error. With `split`, the pass runs on the query pool and each large product in two halves
    /// (a query: the cores' memory bandwidth adds up); without, on the calling thread (batches
    /// of many texts, which a caller spreads itself).
    pub fn forward(&self, sequences: &[&[u32]], split: bool) -> Result<Vec<f32>, String> {
        for ids in sequences {
            if ids.len() > self.positions {
                return Err(format!(
                    "{} tokens, the model has {} positions",
                    ids.len(),
                    self.positions
                ));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(format!(
                    "token id {id} is outside the vocabulary of {}",
                    self.vocab
                ));
            }
        }
        let run = || match self.simd {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Simd::detect` chose this build only on a CPU with AVX2 and FMA.
            Simd::Avx2Fma => unsafe { self.forward_avx2_fma(sequences, split) },
            // SAFETY: the portable build needs nothing of the CPU.
            _ => unsafe { self.pass::<PORTABLE_FMA>(sequences, split) },
        };
        Ok(match split.then(kernels::query_pool).flatten() {
            Some(pool) => pool.install(run),
            None => run(),
        })
    }

    /// [`Encoder::pass`] compiled for AVX2 and FMA.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_avx2_fma(&self, sequences: &[&[u32]], split: bool) -> Vec<f32> {
        // SAFETY: as this function's.
        unsafe { self.pass::<true>(sequences, split) }
    }

    /// The pass itself, over checked ids.
    ///
    /// # Safety
    /// On x86-64, `FMA` means the CPU has AVX2 and FMA ([`Linear::apply`]).
    #[inline(always)]
    unsafe fn pass<const FMA: bool>(&self, sequences: &[&[u32]], split: bool) -> Vec<f32> {
        let h = self.hidden;
        let rows: usize = sequences.iter().map(|s| s.len()).sum();
        let mut x = Vec::with_capacity(rows * h);
        for ids in sequences {
            for (t, &id) in ids.iter().enumerate() {
                let id = id as usize;
                let word = &self.word[id * h..(id + 1) * h];
                let position = &self.position[t * h..(t + 1) * h];
                x.extend(
                    word.iter()
                        .zip(position)
                        .zip(&self.token_type)
                        .map(|((w, p), k)| w + p + k),
                );
            }
        }
        let (gamma, beta) = &self.embedding_norm;
        layer_norm::<FMA>(&mut x, gamma, beta, self.eps);

        let lengths: Vec<usize> = sequences.iter().map(|s| s.len()).collect();
        let longest = lengths.iter().copied().max().unwrap_or(0);
        let mut qkv = vec![0.0; rows * 3 * h];
        let mut context = vec![0.0; rows * h];
        let mut attended = vec![0.0; rows * h];
        let intermediate = self.layers.first().map_or(0, |l| l.up.outputs());
        let mut up = vec![0.0; rows * intermediate];
        let mut scores = vec![0.0; longest];
        for layer in &self.layers {
            // SAFETY: as this function's.
            unsafe { layer.qkv.apply::<FMA>(&x, &mut qkv, split) };
            self.attention::<FMA>(&qkv, &lengths, &mut context, &mut scores);
            // SAFETY: as this function's.
            unsafe {
                layer
                    .attention_out
                    .apply::<FMA>(&context, &mut attended, split)
            };
            attended.iter_mut().zip(&x).for_each(|(a, x)| *a += x);
            let (gamma, beta) = &layer.attention_norm;
            layer_norm::<FMA>(&mut attended, gamma, beta, self.eps);
            // SAFETY: as this function's.
            unsafe { layer.up.apply::<FMA>(&attended, &mut up, split) };
            activate(&mut up, self.activation);
            // SAFETY: as this function's.
            unsafe { layer.down.apply::<FMA>(&up, &mut x, split) };
            x.iter_mut().zip(&attended).for_each(|(x, a)| *x += a);
            let (gamma, beta) = &layer.output_norm;
            layer_norm::<FMA>(&mut x, gamma, beta, self.eps);
        }
        x
    }

    /// Scaled dot-product attention of every head within each sequence: `qkv` holds each
    /// token's query, key and value side by side (`rows × 3·hidden`), `context` receives each
    /// token's heads side by side (`rows × hidden`).
    #[inline(always)]
    fn attention<const FMA: bool>(
        &self,
        qkv: &[f32],
        lengths: &[usize],
        context: &mut [f32],
        scores: &mut [f32],
    ) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let width = 3 * h;
        let mut start = 0;
        for &len in lengths {
            let sequence = &qkv[start * width..(start + len) * width];
            for head in 0..self.heads {
                let (q_at, k_at, v_at) = (head * d, h + head * d, 2 * h + head * d);
                for i in 0..len {
                    let q = &sequence[i * width + q_at..i * width + q_at + d];
                    let scores = &mut scores[..len];
                    for (j, score) in scores.iter_mut().enumerate() {
                        let k = &sequence[j * width + k_at..j * width + k_at + d];
                        *score = kernels::dot::<FMA, 8>(q, k) * scale;
                    }
                    softmax(scores);
                    let row = start + i;
                    let out = &mut context[row * h + head * d..row * h + (head + 1) * d];
                    out.fill(0.0);
                    for (j, &p) in scores.iter().enumerate() {
                        let v = &sequence[j * width + v_at..j * width + v_at + d];
                        kernels::axpy::<FMA>(p, v, out);
                    }
                }
            }
            start += len;
        }
    }
}

/// The activation applied to every element of `x`, in place.
#[inline(always)]
fn activate(x: &mut [f32], activation: Activation) {
    match activation {
        Activation::Gelu => x.iter_mut().for_each(|v| *v = gelu(*v)),
        Activation::GeluTanh => x.iter_mut().for_each(|v| *v = gelu_tanh(*v)),
        Activation::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// `x · Φ(x) = x/2 · (1 + erf(x/√2))`.
#[inline]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`.
#[inline]
fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function in f32: an odd polynomial over an even one in `x` clamped to ±4 (where
/// erf is ±1 in f32), the rational approximation of Eigen and XLA; absolute error about 1e-7.
/// Branch-free, so a loop over it vectorises.
#[inline]
pub fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    x * p / q
}
