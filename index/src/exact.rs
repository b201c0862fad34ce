//! Exact scans of rows handed in memory: the engine's live tail (rows newer than, or changed
//! since, the generation), quantised exactly like generation rows so their scores compare, and
//! an f32 reference scan. Never touches a file.

use crate::error::{Error, Result};
use crate::format::Dim;
use crate::kernels::Kernels;
use crate::quantize::{QueryCodes, check_vector, quantize_into};
use crate::rerank::{BLOCK_ROWS, CodeColumns};
use crate::scan::SearchResult;
use crate::topk::{BestK, Hit, Ranked, TopHits};

/// Rows held in memory as int8 codes with per-row scales, in the order they were pushed.
#[derive(Clone, Debug)]
pub struct TailRows {
    dim: Dim,
    ids: Vec<i64>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    sign_scratch: Vec<u64>,
}

impl TailRows {
    /// No rows yet, for vectors of `dim`.
    pub fn new(dim: Dim) -> Self {
        Self {
            dim,
            ids: Vec::new(),
            scales: Vec::new(),
            codes: Vec::new(),
            sign_scratch: vec![0; dim.sign_words()],
        }
    }

    /// Quantises and appends one row; its position is the `row` of its hits.
    pub fn push(&mut self, id: i64, vector: &[f32]) -> Result<()> {
        let position = self.ids.len();
        if position >= u32::MAX as usize {
            return Err(Error::TooMany { what: "rows" });
        }
        check_vector(vector, self.dim, position as u64)?;
        let stride = self.dim.code_stride();
        self.codes.resize(self.codes.len() + stride, 0);
        self.sign_scratch.fill(0);
        let scale = quantize_into(
            vector,
            &mut self.codes[position * stride..],
            &mut self.sign_scratch,
        );
        self.ids.push(id);
        self.scales.push(scale);
        Ok(())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Top-`k` of the rows `admit(position)` accepts, int8-scored by the same kernels and the
    /// same score expression as a generation scan.
    pub fn search(
        &self,
        query: &QueryCodes,
        k: usize,
        kernels: &Kernels,
        admit: impl Fn(usize) -> bool,
    ) -> Result<SearchResult> {
        if query.dim() != self.dim {
            return Err(Error::Dim {
                expected: self.dim.get(),
                found: query.dim().get(),
            });
        }
        let columns = CodeColumns {
            ids: &self.ids,
            scales: &self.scales,
            codes: &self.codes,
            stride: self.dim.code_stride(),
        };
        let mut top = TopHits::new(k);
        let mut positions: Vec<u32> = Vec::with_capacity(BLOCK_ROWS);
        let mut admitted = 0u64;
        for start in (0..self.len()).step_by(BLOCK_ROWS) {
            let n = (self.len() - start).min(BLOCK_ROWS);
            positions.clear();
            positions.extend((start..start + n).filter(|&r| admit(r)).map(|r| r as u32));
            admitted += positions.len() as u64;
            if positions.len() == n {
                columns.score_block(kernels, query, start, n, &mut top);
            } else {
                columns.score_gathered(kernels, query, &positions, &mut top);
            }
        }
        let hits = top.into_hits();
        let mut result = SearchResult {
            hits,
            admitted,
            scanned: self.len() as u64,
            reranked: admitted,
            ..Default::default()
        };
        result.bounds.limit = admitted > result.hits.len() as u64;
        Ok(result)
    }
}

/// The f32 reference: exact dot products of `query` with each `(id, vector)` (cosine for unit
/// vectors), top-`k` in the result order. `row` is the position in the iterator. For tests,
/// benches (recall against exact f32) and tiny tails.
pub fn search_f32<'a>(
    query: &[f32],
    rows: impl IntoIterator<Item = (i64, &'a [f32])>,
    k: usize,
) -> Vec<Hit> {
    let mut top: BestK<Ranked> = BestK::new(k);
    for (row, (id, vector)) in rows.into_iter().enumerate() {
        let score: f32 = query.iter().zip(vector).map(|(a, b)| a * b).sum();
        top.push(Ranked(Hit {
            id,
            row: row as u32,
            score,
        }));
    }
    top.into_hits()
}
