//! A sentence-transformers model directory, opened and checked before anything is loaded.
//!
//! Owns: finding `config.json`, `tokenizer.json` and `model.safetensors` (plus the optional
//! `1_Pooling/config.json` and `sentence_bert_config.json`); their sha256 against the manifest
//! of known models ([`KNOWN_MODELS`]), failing closed — a known model whose files differ from
//! the published hashes, or a model the manifest does not know, is refused unless the caller
//! asked for [`Trust::Unverified`]; the pooling mode and the token limit; the model's identity
//! ([`ModelDir::id`]) that caches of its vectors are keyed by.
//!
//! Never does: inference (that is [`super::Embedder`]) or any download.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::encoder::BertConfig;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The files every model directory must hold, in the order of [`ModelDir::hashes`].
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// A model the product knows, with the sha256 of each file in [`MODEL_FILES`] as its upstream
/// publishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The upstream name (`owner/model`).
    pub name: &'static str,
    /// The sha256 of `config.json`, `tokenizer.json` and `model.safetensors`, lowercase hex.
    pub sha256: [&'static str; 3],
}

/// The manifest of known models. all-MiniLM-L6-v2 at revision 1110a243 (Apache-2.0): the hashes
/// the upstream publishes for its files; `scripts/fetch-model.sh` fetches those exact bytes.
pub const KNOWN_MODELS: &[KnownModel] = &[KnownModel {
    name: "sentence-transformers/all-MiniLM-L6-v2",
    sha256: [
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ],
}];

/// Whether a model's files must match the manifest of known models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trust {
    /// Only a known model with exactly its published files (the default).
    #[default]
    Verified,
    /// Any well-formed model directory (`--semantic-unverified`): the user vouches for it.
    Unverified,
}

/// How token vectors become one sentence vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the token vectors the attention mask keeps (sentence-transformers' default).
    Mean,
    /// The first token's vector (`[CLS]`).
    Cls,
}

/// Why a model directory cannot be used. Every message names the path and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The path is not a directory.
    #[error(
        "semantic model {path}: no such directory (scripts/fetch-model.sh fetches all-MiniLM-L6-v2 into models/all-MiniLM-L6-v2)"
    )]
    NotADirectory {
        /// The directory given.
        path: PathBuf,
    },
    /// A required file is missing.
    #[error(
        "semantic model {path} has no {file}: a sentence-transformers directory holds config.json, tokenizer.json and model.safetensors"
    )]
    MissingFile {
        /// The directory.
        path: PathBuf,
        /// The missing file's name.
        file: &'static str,
    },
    /// A file could not be read.
    #[error("semantic model: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A known model's file differs from the published bytes.
    #[error(
        "semantic model {path}: {file} does not match {model}'s published sha256 (expected {expected}, got {got}); fetch it again (scripts/fetch-model.sh) or pass --semantic-unverified to use these files anyway"
    )]
    Mismatch {
        /// The directory.
        path: PathBuf,
        /// The known model the other files identify.
        model: &'static str,
        /// The file that differs.
        file: &'static str,
        /// Its published sha256.
        expected: &'static str,
        /// Its sha256 here.
        got: String,
    },
    /// The files match no known model.
    #[error(
        "semantic model {path} is not a known model (its files match none of: {known}); pass --semantic-unverified to use it anyway"
    )]
    Unknown {
        /// The directory.
        path: PathBuf,
        /// The names of the known models.
        known: String,
    },
    /// A file is there but unusable (bad JSON, an unsupported architecture or pooling, weights
    /// that do not fit the config, a tokenizer that does not load).
    #[error("semantic model: {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what is supported.
        message: String,
    },
}

/// An opened, checked model directory. Holds the weights' bytes until the embedder loads them.
#[derive(Debug)]
pub struct ModelDir {
    /// The directory.
    pub path: PathBuf,
    /// The known model its files are, when they match the manifest exactly.
    pub known: Option<&'static str>,
    /// The sha256 of each file of [`MODEL_FILES`], lowercase hex.
    pub hashes: [String; 3],
    /// The model's identity: the sha256 of its files' hashes, pooling and token limit, 16 hex
    /// digits. Two directories with the same id give the same vectors.
    pub id: String,
    /// The BERT configuration (`config.json`).
    pub config: BertConfig,
    /// How token vectors are pooled.
    pub pooling: Pooling,
    /// The most tokens of one text, `[CLS]` and `[SEP]` included; longer texts are truncated.
    pub max_tokens: usize,
    pub(super) tokenizer_json: Vec<u8>,
    pub(super) weights: Vec<u8>,
}

impl ModelDir {
    /// Opens `path` and checks it against [`KNOWN_MODELS`].
    pub fn open(path: &Path, trust: Trust) -> Result<Self, ModelError> {
        Self::open_with(path, trust, KNOWN_MODELS)
    }

    /// Opens `path` and checks it against the manifest `known`.
    pub fn open_with(path: &Path, trust: Trust, known: &[KnownModel]) -> Result<Self, ModelError> {
        if !path.is_dir() {
            return Err(ModelError::NotADirectory {
                path: path.to_path_buf(),
            });
        }
        let mut bytes: Vec<Vec<u8>> = Vec::with_capacity(3);
        for file in MODEL_FILES {
            let file_path = path.join(file);
            if !file_path.is_file() {
                return Err(ModelError::MissingFile {
                    path: path.to_path_buf(),
                    file,
                });
            }
            bytes.push(read(&file_path)?);
        }
        let hashes: [String; 3] = std::array::from_fn(|i| sha256_hex(&bytes[i]));
        let identified = identify(path, &hashes, known);
        let known_name = match (identified, trust) {
            (Ok(name), _) => Some(name),
            (Err(_), Trust::Unverified) => None,
            (Err(error), Trust::Verified) => return Err(error),
        };

        let config_path = path.join(MODEL_FILES[0]);
        let config_json: Value = parse_json(&config_path, &bytes[0])?;
        check_architecture(&config_path, &config_json)?;
        let config: BertConfig =
            serde_json::from_value(config_json).map_err(|e| ModelError::Invalid {
                path: config_path.clone(),
                message: format!("not a BERT configuration: {e}"),
            })?;
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(ModelError::Invalid {
                path: config_path,
                message: format!(
                    "hidden_size {} is not a multiple of num_attention_heads {}",
                    config.hidden_size, config.num_attention_heads
                ),
            });
        }
        let pooling = read_pooling(path)?;
        let max_tokens = read_max_tokens(path)?
            .unwrap_or(512)
            .min(config.max_position_embeddings)
            .max(2);

        let mut identity = Sha256::new();
        for (file, hash) in MODEL_FILES.iter().zip(&hashes) {
            identity.update(format!("{file} {hash}\n"));
        }
        identity.update(format!("pooling {pooling:?}\nmax_tokens {max_tokens}\n"));
        let mut id = hex(&identity.finalize());
        id.truncate(16);

        let weights = bytes.pop().unwrap_or_default();
        let tokenizer_json = bytes.pop().unwrap_or_default();
        Ok(ModelDir {
            path: path.to_path_buf(),
            known: known_name,
            hashes,
            id,
            config,
            pooling,
            max_tokens,
            tokenizer_json,
            weights,
        })
    }
}

/// The known model whose three hashes all equal `hashes`; otherwise the error for a model
/// that one file identifies but another contradicts, or for an unknown model.
fn identify(
    path: &Path,
    hashes: &[String; 3],
    known: &[KnownModel],
) -> Result<&'static str, ModelError> {
    let mut partial: Option<(usize, &KnownModel)> = None;
    for model in known {
        let matching = (0..3).filter(|&i| hashes[i] == model.sha256[i]).count();
        if matching == 3 {
            return Ok(model.name);
        }
        if matching > 0 && partial.is_none_or(|(best, _)| matching > best) {
            partial = Some((matching, model));
        }
    }
    match partial {
        Some((_, model)) => {
            let i = (0..3).find(|&i| hashes[i] != model.sha256[i]).unwrap_or(0);
            Err(ModelError::Mismatch {
                path: path.to_path_buf(),
                model: model.name,
                file: MODEL_FILES[i],
                expected: model.sha256[i],
                got: hashes[i].clone(),
            })
        }
        None => Err(ModelError::Unknown {
            path: path.to_path_buf(),
            known: known.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }),
    }
}

fn check_architecture(path: &Path, config: &Value) -> Result<(), ModelError> {
    let model_type = config.get("model_type").and_then(Value::as_str);
    let architectures: Vec<&str> = config
        .get("architectures")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let bert = model_type.is_none_or(|t| t == "bert")
        && architectures.iter().all(|a| a.starts_with("Bert"));
    if bert {
        Ok(())
    } else {
        Err(ModelError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "model_type {} / architectures {architectures:?} is not supported: only BERT encoders (model_type \"bert\") are",
                model_type.unwrap_or("(none)")
            ),
        })
    }
}

/// `1_Pooling/config.json`: mean (also when the file is absent) or CLS; other modes are refused.
fn read_pooling(dir: &Path) -> Result<Pooling, ModelError> {
    let path = dir.join("1_Pooling").join("config.json");
    if !path.is_file() {
        return Ok(Pooling::Mean);
    }
    let value = parse_json(&path, &read(&path)?)?;
    let on = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
    let modes = [
        ("pooling_mode_mean_tokens", Some(Pooling::Mean)),
        ("pooling_mode_cls_token", Some(Pooling::Cls)),
        ("pooling_mode_max_tokens", None),
        ("pooling_mode_mean_sqrt_len_tokens", None),
        ("pooling_mode_weightedmean_tokens", None),
        ("pooling_mode_lasttoken", None),
    ];
    let chosen: Vec<_> = modes.iter().filter(|(key, _)| on(key)).collect();
    match chosen.as_slice() {
        [(_, Some(pooling))] => Ok(*pooling),
        _ => Err(ModelError::Invalid {
            path,
            message: format!(
                "pooling {:?} is not supported: exactly one of pooling_mode_mean_tokens or pooling_mode_cls_token",
                chosen.iter().map(|(key, _)| *key).collect::<Vec<_>>()
            ),
        }),
    }
}

/// `sentence_bert_config.json`'s `max_seq_length`, when the file is there.
fn read_max_tokens(dir: &Path) -> Result<Option<usize>, ModelError> {
    let path = dir.join("sentence_bert_config.json");
    if !path.is_file() {
        return Ok(None);
    }
    let value = parse_json(&path, &read(&path)?)?;
    match value.get("max_seq_length") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 2 => Ok(Some(n.min(1 << 20) as usize)),
            _ => Err(ModelError::Invalid {
                path,
                message: format!("max_seq_length must be an integer of at least 2 (got {v})"),
            }),
        },
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ModelError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|source| ModelError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(bytes)
}

fn parse_json(path: &Path, bytes: &[u8]) -> Result<Value, ModelError> {
    serde_json::from_slice(bytes).map_err(|e| ModelError::Invalid {
        path: path.to_path_buf(),
        message: format!("not JSON: {e}"),
    })
}

/// The sha256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}
