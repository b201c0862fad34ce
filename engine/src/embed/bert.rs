//! The builtin embedder's BERT encoder: a forward pass over *packed* token sequences.
//!
//! candle's `BertModel` pads every batch to its longest text, masks the padding, and runs three
//! projections (Q, K, V) where one does. Here the texts of a batch lie back to back as rows of
//! one matrix, so every linear layer is one matrix product over real tokens only, Q, K and V
//! come from one fused product, and attention runs per text (no mask: a text only ever sees
//! its own tokens). The numerics are the same operations as candle's model (its matmul,
//! layer norm and softmax kernels), so the vectors match the reference to 1e-5.
//! It never pools or normalises: the embedder does that.

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};

/// A layer norm's scale and shift.
struct Norm {
    weight: Tensor,
    bias: Tensor,
}

impl Norm {
    fn load(vb: &VarBuilder, size: usize) -> Result<Self> {
        // BERT checkpoints name them weight/bias; old TensorFlow exports gamma/beta.
        let (weight, bias) = if vb.contains_tensor("weight") {
            (vb.get(size, "weight")?, vb.get(size, "bias")?)
        } else {
            (vb.get(size, "gamma")?, vb.get(size, "beta")?)
        };
        Ok(Self { weight, bias })
    }

    fn forward(&self, xs: &Tensor, eps: f32) -> Result<Tensor> {
        candle_nn::ops::layer_norm(xs, &self.weight, &self.bias, eps)
    }
}

/// A linear layer stored transposed and contiguous (`in × out`), so the product needs no
/// copy of the weight.
struct Dense {
    weight_t: Tensor,
    bias: Tensor,
}

impl Dense {
    fn from_parts(weight: &Tensor, bias: Tensor) -> Result<Self> {
        Ok(Self {
            weight_t: weight.t()?.contiguous()?,
            bias,
        })
    }

    fn load(vb: &VarBuilder, input: usize, output: usize) -> Result<Self> {
        Self::from_parts(&vb.get((output, input), "weight")?, vb.get(output, "bias")?)
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        xs.matmul(&self.weight_t)?.broadcast_add(&self.bias)
    }
}

struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

impl Layer {
    fn load(vb: &VarBuilder, config: &BertConfig) -> Result<Self> {
        let h = config.hidden_size;
        let attention = vb.pp("attention");
        let this = attention.pp("self");
        let part = |name: &str| -> Result<(Tensor, Tensor)> {
            let vb = this.pp(name);
            Ok((vb.get((h, h), "weight")?, vb.get(h, "bias")?))
        };
        let (q_w, q_b) = part("query")?;
        let (k_w, k_b) = part("key")?;
        let (v_w, v_b) = part("value")?;
        // One product gives [Q | K | V] per token.
        let qkv = Dense::from_parts(
            &Tensor::cat(&[&q_w, &k_w, &v_w], 0)?,
            Tensor::cat(&[&q_b, &k_b, &v_b], 0)?,
        )?;
        Ok(Self {
            qkv,
            attention_out: Dense::load(&attention.pp("output").pp("dense"), h, h)?,
            attention_norm: Norm::load(&attention.pp("output").pp("LayerNorm"), h)?,
            intermediate: Dense::load(
                &vb.pp("intermediate").pp("dense"),
                h,
                config.intermediate_size,
            )?,
            output: Dense::load(&vb.pp("output").pp("dense"), config.intermediate_size, h)?,
            output_norm: Norm::load(&vb.pp("output").pp("LayerNorm"), h)?,
        })
    }
}

/// The encoder: embeddings, then `num_hidden_layers` transformer layers.
pub(crate) struct Encoder {
    word: Tensor,
    position: Tensor,
    /// Token type 0's row: sentence embedding never uses a second segment.
    token_type: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    eps: f32,
    act: HiddenAct,
    max_positions: usize,
    device: Device,
}

impl Encoder {
    /// Loads the weights (with or without a `bert.` / `<model_type>.` prefix, as candle does).
    pub(crate) fn load(vb: VarBuilder, config: &BertConfig) -> Result<Self> {
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else if let Some(model_type) = &config.model_type {
            vb.pp(model_type)
        } else {
            vb
        };
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden size {h} is not a multiple of {} attention heads",
                config.num_attention_heads
            );
        }
        let embeddings = vb.pp("embeddings");
        let token_types =
            embeddings.get((config.type_vocab_size, h), "token_type_embeddings.weight")?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(&vb.pp("encoder").pp("layer").pp(i.to_string()), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word: embeddings.get((config.vocab_size, h), "word_embeddings.weight")?,
            position: embeddings.get(
                (config.max_position_embeddings, h),
                "position_embeddings.weight",
            )?,
            token_type: token_types.get(0)?,
            embedding_norm: Norm::load(&embeddings.pp("LayerNorm"), h)?,
            layers,
            heads: config.num_attention_heads,
            head_dim: h / config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            act: config.hidden_act,
            max_positions: config.max_position_embeddings,
            device: vb.device().clone(),
        })
    }

    /// The last hidden states of `sequences` (token ids, already truncated to the window),
    /// packed: rows `offsets[i]..offsets[i] + sequences[i].len()` belong to text `i`.
    pub(crate) fn forward(&self, sequences: &[&[u32]]) -> Result<(Tensor, Vec<usize>)> {
        let mut ids = Vec::new();
        let mut positions = Vec::new();
        let mut offsets = Vec::with_capacity(sequences.len());
        for seq in sequences {
            if seq.len() > self.max_positions {
                candle_core::bail!(
                    "{} tokens exceed the model's {} positions",
                    seq.len(),
                    self.max_positions
                );
            }
            offsets.push(ids.len());
            ids.extend_from_slice(seq);
            positions.extend(0..seq.len() as u32);
        }
        let total = ids.len();
        let ids = Tensor::from_vec(ids, total, &self.device)?;
        let positions = Tensor::from_vec(positions, total, &self.device)?;
        let embedded = (self.word.index_select(&ids, 0)?
            + self.position.index_select(&positions, 0)?)?
        .broadcast_add(&self.token_type)?;
        let mut hidden = self.embedding_norm.forward(&embedded, self.eps)?;
        for layer in &self.layers {
            hidden = self.layer(layer, &hidden, sequences, &offsets)?;
        }
        Ok((hidden, offsets))
    }

    fn layer(
        &self,
        layer: &Layer,
        hidden: &Tensor,
        sequences: &[&[u32]],
        offsets: &[usize],
    ) -> Result<Tensor> {
        let qkv = layer.qkv.forward(hidden)?;
        let context = sequences
            .iter()
            .zip(offsets)
            .map(|(seq, &offset)| self.attention(&qkv.narrow(0, offset, seq.len())?))
            .collect::<Result<Vec<_>>>()?;
        let context = Tensor::cat(&context, 0)?;
        let attended = (layer.attention_out.forward(&context)? + hidden)?;
        let attended = layer.attention_norm.forward(&attended, self.eps)?;
        let inner = layer.intermediate.forward(&attended)?;
        let inner = match self.act {
            HiddenAct::Gelu => inner.gelu_erf()?,
            HiddenAct::GeluApproximate => inner.gelu()?,
            HiddenAct::Relu => inner.relu()?,
        };
        let out = (layer.output.forward(&inner)? + attended)?;
        layer.output_norm.forward(&out, self.eps)
    }

    /// Scaled dot-product attention of one text: `qkv` is `len × 3h`; returns `len × h`.
    fn attention(&self, qkv: &Tensor) -> Result<Tensor> {
        let len = qkv.dim(0)?;
        let h = self.heads * self.head_dim;
        let split = |index: usize| -> Result<Tensor> {
            qkv.narrow(1, index * h, h)?
                .reshape((len, self.heads, self.head_dim))?
                .transpose(0, 1)?
                .contiguous()
        };
        let (q, k, v) = (split(0)?, split(1)?, split(2)?);
        let scores = (q.matmul(&k.t()?.contiguous()?)? / (self.head_dim as f64).sqrt())?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        probs
            .matmul(&v)?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((len, h))
    }
}

/// Mean (or CLS) pools each text's rows of `hidden` into one vector.
pub(crate) fn pool(
    hidden: &Tensor,
    offsets: &[usize],
    lengths: &[usize],
    cls: bool,
) -> Result<Vec<Vec<f32>>> {
    let rows = hidden.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    Ok(offsets
        .iter()
        .zip(lengths)
        .map(|(&offset, &len)| {
            if cls || len == 0 {
                return rows.get(offset).cloned().unwrap_or_default();
            }
            let mut sum = vec![0f32; rows[offset].len()];
            for row in &rows[offset..offset + len] {
                for (s, x) in sum.iter_mut().zip(row) {
                    *s += x;
                }
            }
            let n = len as f32;
            sum.iter_mut().for_each(|s| *s /= n);
            sum
        })
        .collect())
}
