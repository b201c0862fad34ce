//! Filtered top-k search over a generation: the row range from the created_at bounds and the
//! window, a rayon split into chunks, per-chunk best-k (exact int8, or sign-bit prefilter then
//! int8 re-rank), and a deterministic merge. Every bound that cuts says so in the result.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::filter::{RowFilter, ScopeColumns, compact_positions};
use crate::generation::{Generation, ScopeField};
use crate::prefilter::{Selection, SignColumns};
use crate::quantize::QueryCodes;
use crate::rerank::{BLOCK_ROWS, CodeColumns};
use crate::topk::{Hit, TopHits};

/// Default number of prefilter candidates re-ranked with int8.
///
/// Chosen by measurement: `CPERSONA_BENCH_ROWS=1000000 cargo bench -p cpersona-benches
/// --bench search` on the clustered corpus (`CorpusConfig::default()`, 1M × 384, k = 10,
/// 50 queries) gave recall@10 against exact f32 of 0.664 (C = 100), 0.924 (250), 0.974
/// (500), 0.988 (1000) and 0.988 (2000); exact int8 itself reaches 0.988. 1000 is the smallest
/// C tried that reaches the int8 ceiling at a million rows (at 100K rows, 250 already does).
/// Its re-rank gathers 1000 × 384 bytes, under 1% of the 48 MB of sign bits streamed.
pub const DEFAULT_CANDIDATES: usize = 1000;

/// Rows per rayon task at least. PERF: large enough that a task's fixed cost (a candidate list
/// of up to 2C entries, the merge) stays small next to its scan.
const MIN_CHUNK_ROWS: usize = 16 * 1024;

/// How rows are scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// Int8 dot over every admitted row.
    Exact,
    /// Hamming over sign bits picks the best `candidates` admitted rows (at least k), int8
    /// re-ranks them.
    Prefiltered {
        /// Number of candidates re-ranked.
        candidates: usize,
    },
}

impl Default for SearchMode {
    fn default() -> Self {
        SearchMode::Prefiltered {
            candidates: DEFAULT_CANDIDATES,
        }
    }
}

/// A search's knobs: result count, mode, and the thread pool the scan runs on.
#[derive(Clone, Debug, Default)]
pub struct ScanConfig {
    /// Hits returned per list at most.
    pub k: usize,
    /// Exact or prefiltered.
    pub mode: SearchMode,
    /// The pool to scan on; `None` scans on the current rayon pool (the global one by default).
    pub pool: Option<Arc<rayon::ThreadPool>>,
}

impl ScanConfig {
    /// Top-`k` with the default mode on the current pool.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            mode: SearchMode::default(),
            pool: None,
        }
    }

    /// The same search in `mode`.
    pub fn with_mode(mut self, mode: SearchMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same search on a dedicated pool of `threads` threads (build once, reuse).
    pub fn with_threads(mut self, threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| Error::Io(std::io::Error::other(e)))?;
        self.pool = Some(Arc::new(pool));
        Ok(self)
    }
}

/// Which bounds cut rows from a result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Rows past the scan window were not considered.
    pub window: bool,
    /// The prefilter dropped admitted rows before the int8 re-rank (admitted > candidates).
    pub candidates: bool,
    /// More rows were scored than the k returned.
    pub limit: bool,
}

impl Bounds {
    /// Whether any bound cut.
    pub fn any(&self) -> bool {
        self.window || self.candidates || self.limit
    }
}

/// A search's hits, best first, with what the scan did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchResult {
    /// At most k hits: score descending, then id ascending.
    pub hits: Vec<Hit>,
    /// Rows that passed the filter.
    pub admitted: u64,
    /// Rows whose data the scan read (the row range after the created_at bounds and window).
    pub scanned: u64,
    /// Rows scored with int8 (all admitted rows in exact mode, the candidates when prefiltered).
    pub reranked: u64,
    /// Which bounds cut.
    pub bounds: Bounds,
}

/// The two lists of one pass: inside the scan window and beyond it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NearFar {
    /// Top-k among the first `window` rows.
    pub near: SearchResult,
    /// Top-k among the rows after them.
    pub far: SearchResult,
}

impl Generation {
    /// Top-k of the rows `filter` admits (inside its window, if any).
    pub fn search(
        &self,
        query: &QueryCodes,
        filter: &RowFilter,
        config: &ScanConfig,
    ) -> Result<SearchResult> {
        let range = self.check_and_range(query, filter)?;
        let near_end = filter
            .window
            .map_or(range.end, |w| w.clamp(range.start, range.end));
        let [near, _] = self.run(
            query,
            filter,
            config,
            [range.start..near_end, near_end..near_end],
        );
        let mut near = near;
        near.bounds.window = near_end < range.end;
        Ok(near)
    }

    /// Top-k inside the window (`filter.window`, the first W rows) and top-k beyond it, in one
    /// pass. Without a window everything is near.
    pub fn search_near_far(
        &self,
        query: &QueryCodes,
        filter: &RowFilter,
        config: &ScanConfig,
    ) -> Result<NearFar> {
        let range = self.check_and_range(query, filter)?;
        let split = filter
            .window
            .map_or(range.end, |w| w.clamp(range.start, range.end));
        let [near, far] = self.run(
            query,
            filter,
            config,
            [range.start..split, split..range.end],
        );
        Ok(NearFar { near, far })
    }

    /// Checks the query's dimension; returns the rows inside the created_at bounds, which are
    /// contiguous because rows are sorted created_at descending.
    fn check_and_range(&self, query: &QueryCodes, filter: &RowFilter) -> Result<Range<usize>> {
        if query.dim() != self.dim() {
            return Err(Error::Dim {
                expected: self.dim().get(),
                found: query.dim().get(),
            });
        }
        let created = self.created_at();
        let start = filter
            .created_until
            .map_or(0, |until| created.partition_point(|&c| c > until));
        let end = filter.created_from.map_or(created.len(), |from| {
            created.partition_point(|&c| c >= from)
        });
        Ok(start..end.max(start))
    }

    fn run(
        &self,
        query: &QueryCodes,
        filter: &RowFilter,
        config: &ScanConfig,
        lists: [Range<usize>; 2],
    ) -> [SearchResult; 2] {
        let work = || self.scan_lists(query, filter, config, lists);
        match &config.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    fn scan_lists(
        &self,
        query: &QueryCodes,
        filter: &RowFilter,
        config: &ScanConfig,
        lists: [Range<usize>; 2],
    ) -> [SearchResult; 2] {
        let threads = rayon::current_num_threads().max(1);
        let total: usize = lists.iter().map(|r| r.len()).sum();
        let chunk_rows = total.div_ceil(threads * 4).max(MIN_CHUNK_ROWS);
        let chunks: Vec<(usize, Range<usize>)> = lists
            .iter()
            .enumerate()
            .flat_map(|(list, range)| {
                range
                    .clone()
                    .step_by(chunk_rows)
                    .map(move |s| (list, s..(s + chunk_rows).min(range.end)))
            })
            .collect();
        let scopes = ScopeColumns {
            agent: self.scope_codes(ScopeField::Agent),
            project: self.scope_codes(ScopeField::Project),
            channel: self.scope_codes(ScopeField::Channel),
            source: self.scope_codes(ScopeField::Source),
        };
        let scopes = filter.has_row_checks().then_some(scopes);
        let codes = CodeColumns {
            ids: self.ids(),
            scales: self.scales(),
            codes: self.codes(),
            stride: self.dim().code_stride(),
        };
        let mut results: [SearchResult; 2] = Default::default();
        for (result, range) in results.iter_mut().zip(&lists) {
            result.scanned = range.len() as u64;
        }
        match config.mode {
            SearchMode::Exact => {
                let parts: Vec<(usize, TopHits, u64)> = chunks
                    .into_par_iter()
                    .map(|(list, rows)| {
                        let mut top = TopHits::new(config.k);
                        let admitted = self.exact_chunk(
                            &codes,
                            query,
                            rows,
                            filter,
                            scopes.as_ref(),
                            &mut top,
                        );
                        (list, top, admitted)
                    })
                    .collect();
                let mut tops = [TopHits::new(config.k), TopHits::new(config.k)];
                for (list, top, admitted) in parts {
                    tops[list].merge(top);
                    results[list].admitted += admitted;
                }
                for (result, top) in results.iter_mut().zip(tops) {
                    result.reranked = result.admitted;
                    result.hits = top.into_hits();
                }
            }
            SearchMode::Prefiltered { candidates } => {
                let n_candidates = candidates.max(config.k);
                let signs = SignColumns {
                    ids: self.ids(),
                    signs: self.signs(),
                    words: self.dim().sign_words(),
                };
                let bits = signs.words * 64;
                let parts: Vec<(usize, Selection, u64)> = chunks
                    .into_par_iter()
                    .map(|(list, rows)| {
                        let mut best = Selection::new(signs.ids, n_candidates, bits);
                        let counts = signs.select(
                            &self.kernels(),
                            query,
                            rows,
                            filter,
                            scopes.as_ref(),
                            &mut best,
                        );
                        (list, best, counts.admitted)
                    })
                    .collect();
                let mut bests = [
                    Selection::new(signs.ids, n_candidates, bits),
                    Selection::new(signs.ids, n_candidates, bits),
                ];
                for (list, best, admitted) in parts {
                    bests[list].merge(best);
                    results[list].admitted += admitted;
                }
                for (result, best) in results.iter_mut().zip(bests) {
                    // PERF: re-rank in row order so the gather walks the codes forward.
                    let mut positions: Vec<u32> =
                        best.into_candidates().into_iter().map(|c| c.2).collect();
                    positions.sort_unstable();
                    let mut top = TopHits::new(config.k);
                    for block in positions.chunks(BLOCK_ROWS) {
                        codes.score_gathered(&self.kernels(), query, block, &mut top);
                    }
                    result.reranked = positions.len() as u64;
                    result.bounds.candidates = result.admitted > result.reranked;
                    result.hits = top.into_hits();
                }
            }
        }
        for result in &mut results {
            result.bounds.limit = result.reranked > result.hits.len() as u64;
        }
        results
    }

    /// Int8-scores the admitted rows of `rows` into `top`; returns how many were admitted.
    fn exact_chunk(
        &self,
        codes: &CodeColumns<'_>,
        query: &QueryCodes,
        rows: Range<usize>,
        filter: &RowFilter,
        scopes: Option<&ScopeColumns<'_>>,
        top: &mut TopHits,
    ) -> u64 {
        let kernels = self.kernels();
        let mut admitted = 0u64;
        let mut positions = [0u32; BLOCK_ROWS];
        let mut mask = [0u8; BLOCK_ROWS];
        let mut start = rows.start;
        while start < rows.end {
            let n = (rows.end - start).min(BLOCK_ROWS);
            match scopes {
                None => {
                    codes.score_block(&kernels, query, start, n, top);
                    admitted += n as u64;
                }
                Some(scopes) => {
                    let passed = scopes.admit_mask(filter, start, &mut mask[..n]);
                    admitted += passed as u64;
                    if passed == n {
                        codes.score_block(&kernels, query, start, n, top);
                    } else if passed * 2 >= n {
                        // PERF: most rows pass: stream the whole block, offer the passed ones.
                        codes.score_block_masked(&kernels, query, start, &mask[..n], top);
                    } else if passed > 0 {
                        let len = compact_positions(start, &mask[..n], &mut positions);
                        codes.score_gathered(&kernels, query, &positions[..len], top);
                    }
                }
            }
            start += n;
        }
        admitted
    }
}
