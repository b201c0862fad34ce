//! The default in-process embedder: a BERT-family sentence-transformer (all-MiniLM-L6-v2 and
//! kin) run with candle from a model folder, mean (or CLS) pooling and L2 normalisation.
//! It reads only the folder it is handed: never the environment, never the network.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config as BertConfig;
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{Encoder, pool};
use super::{EmbedError, Embedder, EmbedderIdentity, TokenInfo, l2_normalize};

/// Files a model folder must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Files copied when present: they set the window and the pooling.
pub const OPTIONAL_FILES: [&str; 3] = [
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "modules.json",
];

/// sha256 of the all-MiniLM-L6-v2 weights, so that model gets its well-known id.
const MINILM_L6_V2_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
const MINILM_L6_V2_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Texts per forward pass at most.
const MAX_BATCH_TEXTS: usize = 32;
/// Padded tokens per forward pass at most; bounds the attention scores' memory.
const MAX_BATCH_TOKENS: usize = 4096;

/// How token vectors become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
}

/// A sentence-transformer loaded from a folder and run on the CPU.
pub struct BuiltinEmbedder {
    model: Encoder,
    /// Truncates at the window; used to embed.
    tokenizer: Tokenizer,
    /// Never truncates; used to count.
    counter: Tokenizer,
    pooling: Pooling,
    identity: EmbedderIdentity,
    fingerprint: String,
}

impl std::fmt::Debug for BuiltinEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinEmbedder")
            .field("identity", &self.identity)
            .field("pooling", &self.pooling)
            .finish_non_exhaustive()
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|err| EmbedError::ModelFile {
        path: path.to_path_buf(),
        reason: if err.kind() == std::io::ErrorKind::NotFound {
            "not found (run `cpersona model install`, or set CPERSONA_MODEL_DIR)".to_owned()
        } else {
            err.to_string()
        },
    })
}

fn read_json(path: &Path) -> Result<serde_json::Value, EmbedError> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|err| EmbedError::ModelFile {
        path: path.to_path_buf(),
        reason: format!("invalid json: {err}"),
    })
}

fn model_error(model: &str, err: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model {
        model: model.to_owned(),
        reason: err.to_string(),
    }
}

impl BuiltinEmbedder {
    /// Loads the model in `dir`; the error names the first missing or broken file.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        if !dir.is_dir() {
            return Err(EmbedError::ModelFile {
                path: dir.to_path_buf(),
                reason: "not a folder (run `cpersona model install`, or set CPERSONA_MODEL_DIR)"
                    .to_owned(),
            });
        }
        let config_bytes = read_file(&dir.join("config.json"))?;
        let tokenizer_bytes = read_file(&dir.join("tokenizer.json"))?;
        let weights = read_file(&dir.join("model.safetensors"))?;
        let config: BertConfig =
            serde_json::from_slice(&config_bytes).map_err(|err| EmbedError::ModelFile {
                path: dir.join("config.json"),
                reason: format!("not a BERT config: {err}"),
            })?;
        let max_positions = config.max_position_embeddings;

        let st_config = dir.join("sentence_bert_config.json");
        let max_seq_length = if st_config.is_file() {
            read_json(&st_config)?
                .get("max_seq_length")
                .and_then(serde_json::Value::as_u64)
                .map_or(max_positions, |n| n as usize)
        } else {
            max_positions
        }
        .min(max_positions);
        if max_seq_length < 2 {
            return Err(EmbedError::ModelFile {
                path: st_config,
                reason: format!("max_seq_length {max_seq_length} leaves no room for text"),
            });
        }
        let pooling = read_pooling(dir)?;

        let weights_sha = hex(&Sha256::digest(&weights));
        let model_id = if weights_sha == MINILM_L6_V2_SHA256 {
            MINILM_L6_V2_ID.to_owned()
        } else {
            format!("builtin-bert-{}", &weights_sha[..12])
        };
        let mut hasher = Sha256::new();
        for part in [
            &config_bytes[..],
            &tokenizer_bytes[..],
            weights_sha.as_bytes(),
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        hasher.update(format!("{pooling:?}/{max_seq_length}/l2").as_bytes());
        let fingerprint = format!("1:{}", &hex(&hasher.finalize())[..32]);

        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|err| model_error(&model_id, err))?;
        let model = Encoder::load(vb, &config).map_err(|err| model_error(&model_id, err))?;

        let mut counter =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|err| EmbedError::ModelFile {
                path: dir.join("tokenizer.json"),
                reason: err.to_string(),
            })?;
        counter
            .with_truncation(None)
            .map_err(|err| model_error(&model_id, err))?;
        counter.with_padding(None);
        let mut tokenizer = counter.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(|err| model_error(&model_id, err))?;

        let identity = EmbedderIdentity {
            model_id,
            dim: config.hidden_size,
            window_tokens: max_seq_length,
        };
        Ok(Self {
            model,
            tokenizer,
            counter,
            pooling,
            identity,
            fingerprint,
        })
    }

    /// Runs one batch, packed without padding; `encodings` are already truncated.
    fn embed_batch(
        &self,
        encodings: &[&tokenizers::Encoding],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let model = &self.identity.model_id;
        let sequences: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let lengths: Vec<usize> = sequences.iter().map(|s| s.len()).collect();
        let (hidden, offsets) = self
            .model
            .forward(&sequences)
            .map_err(|err| model_error(model, err))?;
        let mut vectors = pool(
            &hidden,
            self.identity.dim,
            &offsets,
            &lengths,
            self.pooling == Pooling::Cls,
        );
        for (index, vector) in vectors.iter_mut().enumerate() {
            l2_normalize(vector, index)?;
        }
        Ok(vectors)
    }
}

fn read_pooling(dir: &Path) -> Result<Pooling, EmbedError> {
    let path = dir.join("1_Pooling").join("config.json");
    if !path.is_file() {
        return Ok(Pooling::Mean);
    }
    let config = read_json(&path)?;
    let flag = |name: &str| config.get(name).and_then(serde_json::Value::as_bool) == Some(true);
    if flag("pooling_mode_mean_tokens") {
        Ok(Pooling::Mean)
    } else if flag("pooling_mode_cls_token") {
        Ok(Pooling::Cls)
    } else {
        Err(EmbedError::ModelFile {
            path,
            reason: "only mean and cls pooling are supported".to_owned(),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Threads candle's matrix products use (all physical cores unless `RAYON_NUM_THREADS`
/// says otherwise; candle reads that, not this crate).
pub fn compute_threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// Groups text positions, sorted by token count, into batches that pad little.
pub(crate) fn plan_batches(lengths: &[usize]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    // Longest first, ties by position: a total order, so the plan is deterministic.
    order.sort_by(|&a, &b| lengths[b].cmp(&lengths[a]).then(a.cmp(&b)));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for idx in order {
        // The first text of a batch is its longest, so it sets the padded width.
        let width = current
            .first()
            .map_or(lengths[idx], |&first| lengths[first]);
        if !current.is_empty()
            && (current.len() == MAX_BATCH_TEXTS || (current.len() + 1) * width > MAX_BATCH_TOKENS)
        {
            batches.push(std::mem::take(&mut current));
        }
        current.push(idx);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

impl Embedder for BuiltinEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = &self.identity.model_id;
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|err| model_error(model, err))?;
        let lengths: Vec<usize> = encodings.iter().map(tokenizers::Encoding::len).collect();
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in plan_batches(&lengths) {
            let batch_encodings: Vec<&tokenizers::Encoding> =
                batch.iter().map(|&i| &encodings[i]).collect();
            let vectors = self.embed_batch(&batch_encodings)?;
            for (idx, vector) in batch.into_iter().zip(vectors) {
                out[idx] = vector;
            }
        }
        Ok(out)
    }

    fn count_tokens(&self, texts: &[&str]) -> Result<Option<Vec<TokenInfo>>, EmbedError> {
        let window = self.identity.window_tokens;
        let model = &self.identity.model_id;
        let mut infos = Vec::with_capacity(texts.len());
        for text in texts {
            let enc = self
                .counter
                .encode_char_offsets(*text, true)
                .map_err(|err| model_error(model, err))?;
            let count = enc.len();
            let truncated = count > window;
            // The window keeps [CLS], window - 2 text tokens and [SEP]; the last kept text
            // token sits at position window - 2.
            let window_end_char = if truncated {
                enc.get_offsets().get(window - 2).map_or(0, |&(_, end)| end)
            } else {
                text.chars().count()
            };
            infos.push(TokenInfo {
                count,
                window,
                truncated,
                window_end_char,
            });
        }
        Ok(Some(infos))
    }

    fn fingerprint(&self) -> Option<String> {
        Some(self.fingerprint.clone())
    }
}

/// Copies a model folder's needed files from `src_dir` into `dest_dir` and checks they load;
/// what `cpersona model install --from DIR` runs (into a staging folder the server renames into
/// place). Returns the installed model's identity.
pub fn install_model(src_dir: &Path, dest_dir: &Path) -> Result<EmbedderIdentity, EmbedError> {
    // Load first: a folder that does not work is refused before anything is copied.
    BuiltinEmbedder::load(src_dir)?;
    let io_err = |path: PathBuf| {
        move |err: std::io::Error| EmbedError::ModelFile {
            path,
            reason: err.to_string(),
        }
    };
    let optional = OPTIONAL_FILES
        .iter()
        .filter(|name| src_dir.join(name).is_file());
    for name in REQUIRED_FILES.iter().chain(optional) {
        let from = src_dir.join(name);
        let to = dest_dir.join(name);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(parent.to_path_buf()))?;
        }
        // Copy to a temporary name and rename, so a cut copy never looks installed.
        let tmp = to.with_extension("partial");
        std::fs::copy(&from, &tmp).map_err(io_err(from.clone()))?;
        std::fs::rename(&tmp, &to).map_err(io_err(to.clone()))?;
    }
    Ok(BuiltinEmbedder::load(dest_dir)?.identity.clone())
}
