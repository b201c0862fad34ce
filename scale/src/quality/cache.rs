//! The embedding cache: one append-only file per model under a folder (`target/quality/cache`),
//! records of `(fnv1a64(model id, NUL, text) as u64 LE, dim × f32 LE)`. Embedding a corpus with
//! the builtin model takes minutes on a small machine; a rerun reads it back in milliseconds.
//! It must never return a vector of another model, role or width: the key holds the model id
//! (with the role, for a model that embeds queries and passages apart, as e5 does) and the file
//! name the width.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cpersona_engine::embed::Embedder;

use super::Error;

/// FNV-1a 64 of the model id, a NUL, and the text: stable across runs and Rust versions.
pub fn key(model_id: &str, text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in model_id.bytes().chain([0]).chain(text.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// L2-normalises `v` in place (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// One model's cached vectors.
pub struct EmbeddingCache {
    path: PathBuf,
    model_id: String,
    dim: usize,
    map: HashMap<u64, Vec<f32>>,
    /// Vectors read from the file.
    pub loaded: usize,
    /// Vectors computed by this process.
    pub computed: usize,
    /// Seconds spent in the embedder by this process.
    pub embed_s: f64,
}

impl EmbeddingCache {
    /// Opens (or starts) the cache file of `embedder`'s model under `dir`.
    pub fn open(dir: &Path, embedder: &dyn Embedder) -> Result<EmbeddingCache, Error> {
        Self::open_role(dir, embedder, None)
    }

    /// [`EmbeddingCache::open`] for one role of a model whose vectors depend on it (e5's
    /// `query: ` / `passage: ` prefixes): the role joins the model id in every key and the
    /// file name, so a text embedded as a query is never served as a passage.
    pub fn open_role(
        dir: &Path,
        embedder: &dyn Embedder,
        role: Option<&str>,
    ) -> Result<EmbeddingCache, Error> {
        let identity = embedder.identity();
        let model_id = match role {
            Some(role) => format!("{}|{role}", identity.model_id),
            None => identity.model_id.clone(),
        };
        let safe: String = model_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let path = dir.join(format!("{safe}-{}.f32cache", identity.dim));
        let mut cache = EmbeddingCache {
            path,
            model_id,
            dim: identity.dim,
            map: HashMap::new(),
            loaded: 0,
            computed: 0,
            embed_s: 0.0,
        };
        if let Ok(bytes) = std::fs::read(&cache.path) {
            let record = 8 + 4 * cache.dim;
            // A torn last record (an interrupted run) is ignored.
            for chunk in bytes.chunks_exact(record) {
                let (k, v) = chunk.split_at(8);
                let k = u64::from_le_bytes(k.try_into().unwrap_or_default());
                let v: Vec<f32> = v
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap_or_default()))
                    .collect();
                cache.map.insert(k, v);
            }
            cache.loaded = cache.map.len();
        }
        Ok(cache)
    }

    /// The normalised vectors of `texts`, embedding (in batches of `batch`) only those not
    /// cached, appending each batch to the file as it lands; `progress(done, missing)`.
    pub fn embed_all(
        &mut self,
        embedder: &dyn Embedder,
        texts: &[&str],
        batch: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<Vec<f32>>, Error> {
        let mut missing: Vec<&str> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for t in texts {
            let k = key(&self.model_id, t);
            if !self.map.contains_key(&k) && queued.insert(k) {
                missing.push(t);
            }
        }
        if !missing.is_empty() {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| Error::io(&self.path, e))?;
            let mut done = 0;
            for chunk in missing.chunks(batch.max(1)) {
                let started = Instant::now();
                let vectors = embedder.embed(chunk)?;
                self.embed_s += started.elapsed().as_secs_f64();
                let mut buf = Vec::with_capacity(chunk.len() * (8 + 4 * self.dim));
                for (t, mut v) in chunk.iter().zip(vectors) {
                    if v.len() != self.dim {
                        return Err(cpersona_engine::embed::EmbedError::WrongDimension {
                            expected: self.dim,
                            received: v.len(),
                        }
                        .into());
                    }
                    normalise(&mut v);
                    let k = key(&self.model_id, t);
                    buf.extend_from_slice(&k.to_le_bytes());
                    v.iter()
                        .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
                    self.map.insert(k, v);
                }
                file.write_all(&buf).map_err(|e| Error::io(&self.path, e))?;
                self.computed += chunk.len();
                done += chunk.len();
                progress(done, missing.len());
            }
        }
        texts
            .iter()
            .map(|t| {
                self.map
                    .get(&key(&self.model_id, t))
                    .cloned()
                    .ok_or_else(|| Error::Regime(format!("cache lost a vector for {t:?}")))
            })
            .collect()
    }
}
