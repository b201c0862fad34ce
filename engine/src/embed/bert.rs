//! The builtin embedder's BERT encoder: a forward pass over *packed* token sequences.
//!
//! candle's `BertModel` pads every batch to its longest text, masks the padding, and runs three
//! projections (Q, K, V) where one does. Here the texts of a batch lie back to back as rows of
//! one matrix, so every linear layer is one matrix product over real tokens only, Q, K and V
//! come from one fused product, and attention runs per text (no mask: a text only ever sees
//! its own tokens). The linear products are `cpersona_index::nn::linear` for a few rows (one
//! short text: each weight row read once, no packing) and candle's (gemm) for more;
//! everything between them runs in
//! `cpersona_index::nn`'s fused kernels over plain `Vec<f32>` rows: bias + GELU in one pass,
//! bias + residual + layer norm in one pass, attention per text and head in parallel with its
//! softmax inline. candle's element-wise ops would each allocate a tensor, run a libm call per
//! element, and wake a second spinning thread pool beside the rayon one gemm uses. The
//! vectors match the reference to 1e-5 (engine embed tests).
//! It never normalises: the embedder does that.

use candle_core::{Device, Result, Storage, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use cpersona_index::nn::{self, AttentionShape};

/// A 1-D weight as a plain vector.
fn vector(tensor: &Tensor) -> Result<Vec<f32>> {
    tensor.to_vec1::<f32>()
}

/// A layer norm's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

impl Norm {
    fn load(vb: &VarBuilder, size: usize) -> Result<Self> {
        // BERT checkpoints name them weight/bias; old TensorFlow exports gamma/beta.
        let (weight, bias) = if vb.contains_tensor("weight") {
            (vb.get(size, "weight")?, vb.get(size, "bias")?)
        } else {
            (vb.get(size, "gamma")?, vb.get(size, "beta")?)
        };
        Ok(Self {
            weight: vector(&weight)?,
            bias: vector(&bias)?,
        })
    }

    /// `x = norm(x + bias + residual)` in place, rows of the norm's width.
    fn add_norm(&self, x: &mut [f32], residual: Option<&[f32]>, bias: &[f32], eps: f32) {
        nn::add_norm(x, residual, bias, &self.weight, &self.bias, eps);
    }
}

/// Input rows up to which a linear layer runs `nn::linear` (weight rows streamed once, no
/// packing) rather than candle's matmul (gemm, which packs the whole weight matrix per call
/// and wins only when many rows share each packed panel). Measured with `embed linear`.
const SMALL_ROWS: usize = 32;

/// A linear layer in the checkpoint's `out × in` layout, one copy used by both products:
/// `nn::linear` reads its rows, gemm a transposed view of it. The product leaves the bias
/// out: the fused kernel after it adds it.
struct Dense {
    weight: Tensor,
    bias: Vec<f32>,
}

impl Dense {
    fn from_parts(weight: &Tensor, bias: &Tensor) -> Result<Self> {
        Ok(Self {
            weight: weight.contiguous()?,
            bias: vector(bias)?,
        })
    }

    fn load(vb: &VarBuilder, input: usize, output: usize) -> Result<Self> {
        Self::from_parts(
            &vb.get((output, input), "weight")?,
            &vb.get(output, "bias")?,
        )
    }

    /// `x · Wᵀ` without the bias, for `x` of rows of the layer's input width.
    fn product(&self, x: &[f32], device: &Device) -> Result<Vec<f32>> {
        let (output, input) = self.weight.dims2()?;
        let rows = x.len() / input;
        if rows <= SMALL_ROWS {
            let (storage, layout) = self.weight.storage_and_layout();
            let Storage::Cpu(cpu) = &*storage else {
                candle_core::bail!("the builtin encoder runs on the CPU only");
            };
            let start = layout.start_offset();
            let Some(weight) = cpu.as_slice::<f32>()?.get(start..start + output * input) else {
                candle_core::bail!("a linear weight is shorter than its shape");
            };
            return Ok(nn::linear(x, weight, input));
        }
        let x = Tensor::from_slice(x, (rows, input), device)?;
        x.matmul(&self.weight.t()?)?.flatten_all()?.to_vec1::<f32>()
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
            &Tensor::cat(&[&q_b, &k_b, &v_b], 0)?,
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
    /// Rows of `hidden` floats, one per vocabulary entry.
    word: Vec<f32>,
    /// Rows of `hidden` floats, one per position.
    position: Vec<f32>,
    /// Token type 0's row: sentence embedding never uses a second segment.
    token_type: Vec<f32>,
    hidden: usize,
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
            word: embeddings
                .get((config.vocab_size, h), "word_embeddings.weight")?
                .flatten_all()?
                .to_vec1::<f32>()?,
            position: embeddings
                .get(
                    (config.max_position_embeddings, h),
                    "position_embeddings.weight",
                )?
                .flatten_all()?
                .to_vec1::<f32>()?,
            token_type: vector(&token_types.get(0)?)?,
            hidden: h,
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
    /// packed as rows of `hidden` floats: text `i` owns rows
    /// `offsets[i]..offsets[i] + sequences[i].len()`.
    pub(crate) fn forward(&self, sequences: &[&[u32]]) -> Result<(Vec<f32>, Vec<usize>)> {
        // The whole pass runs on one rayon worker: every parallel step inside (about eight a
        // layer) then forks from inside the pool, where an idle sibling steals the other half
        // or the worker runs it itself. Called from outside, each step would hand its work to
        // the pool and wait for a worker to wake: on a loaded machine that wait cost more
        // than the step.
        rayon::scope(|_| self.forward_in_pool(sequences))
    }

    fn forward_in_pool(&self, sequences: &[&[u32]]) -> Result<(Vec<f32>, Vec<usize>)> {
        let h = self.hidden;
        let total: usize = sequences.iter().map(|s| s.len()).sum();
        let mut hidden = Vec::with_capacity(total * h);
        let mut offsets = Vec::with_capacity(sequences.len());
        let mut spans = Vec::with_capacity(sequences.len());
        for seq in sequences {
            if seq.len() > self.max_positions {
                candle_core::bail!(
                    "{} tokens exceed the model's {} positions",
                    seq.len(),
                    self.max_positions
                );
            }
            let offset = hidden.len() / h;
            offsets.push(offset);
            spans.push((offset, seq.len()));
            for (position, &id) in seq.iter().enumerate() {
                let id = id as usize;
                let Some(word) = self.word.get(id * h..(id + 1) * h) else {
                    candle_core::bail!("token id {id} is outside the vocabulary");
                };
                let position = &self.position[position * h..(position + 1) * h];
                hidden.extend(word.iter().zip(position).map(|(w, p)| w + p));
            }
        }
        self.embedding_norm
            .add_norm(&mut hidden, None, &self.token_type, self.eps);
        let shape = AttentionShape {
            heads: self.heads,
            head_dim: self.head_dim,
        };
        for layer in &self.layers {
            hidden = self.layer(layer, &hidden, &spans, shape)?;
        }
        Ok((hidden, offsets))
    }

    fn layer(
        &self,
        layer: &Layer,
        hidden: &[f32],
        spans: &[(usize, usize)],
        shape: AttentionShape,
    ) -> Result<Vec<f32>> {
        let device = &self.device;
        let qkv = layer.qkv.product(hidden, device)?;
        let context = nn::attention(&qkv, &layer.qkv.bias, spans, shape);
        let mut attended = layer.attention_out.product(&context, device)?;
        layer.attention_norm.add_norm(
            &mut attended,
            Some(hidden),
            &layer.attention_out.bias,
            self.eps,
        );
        let mut inner = layer.intermediate.product(&attended, device)?;
        let bias = &layer.intermediate.bias;
        match self.act {
            HiddenAct::Gelu => nn::bias_gelu(&mut inner, bias),
            HiddenAct::GeluApproximate => {
                for row in inner.chunks_exact_mut(bias.len()) {
                    for (v, b) in row.iter_mut().zip(bias) {
                        *v = gelu_tanh(*v + b);
                    }
                }
            }
            HiddenAct::Relu => {
                for row in inner.chunks_exact_mut(bias.len()) {
                    for (v, b) in row.iter_mut().zip(bias) {
                        *v = (*v + b).max(0.0);
                    }
                }
            }
        }
        let mut out = layer.output.product(&inner, device)?;
        layer
            .output_norm
            .add_norm(&mut out, Some(&attended), &layer.output.bias, self.eps);
        Ok(out)
    }
}

/// GELU's tanh approximation, as candle's `gelu`.
fn gelu_tanh(x: f32) -> f32 {
    let inner = (2.0 / std::f32::consts::PI).sqrt() * (x + 0.044_715 * x * x * x);
    0.5 * x * (1.0 + inner.tanh())
}

/// Mean (or CLS) pools each text's rows of `hidden` (rows of `width` floats) into one vector.
pub(crate) fn pool(
    hidden: &[f32],
    width: usize,
    offsets: &[usize],
    lengths: &[usize],
    cls: bool,
) -> Vec<Vec<f32>> {
    offsets
        .iter()
        .zip(lengths)
        .map(|(&offset, &len)| {
            let row = |i: usize| hidden.get(i * width..(i + 1) * width).unwrap_or_default();
            if cls || len == 0 {
                return row(offset).to_vec();
            }
            let mut sum = vec![0f32; width];
            for i in offset..offset + len {
                for (s, x) in sum.iter_mut().zip(row(i)) {
                    *s += x;
                }
            }
            let n = len as f32;
            sum.iter_mut().for_each(|s| *s /= n);
            sum
        })
        .collect()
}
