//! Filtered top-k search over a generation: the row range from the created_at bounds and the
//! window, a rayon split into chunks, per-chunk best-k (exact int8, or sign-bit prefilter then
//! int8 re-rank), and a deterministic merge. Every bound that cuts says so in the result.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::filter::{RowFilter, ScopeColumns, compact_positions};
use crate::generation::{Generation, ScopeField};
use crate::kernels::Kernels;
use crate::prefilter::{Candidate, Selection, SharedThreshold, SignColumns};
use crate::quantize::QueryCodes;
use crate::rerank::{BLOCK_ROWS, CodeColumns};
use crate::topk::{Hit, TopHits};

/// Default number of prefilter candidates re-ranked with int8.
///
/// Chosen by measurement: `CPERSONA_BENCH_ROWS=1000000 CPERSONA_BENCH_CANDIDATES=250,500,750,
/// 1000,2000 cargo bench --workspace --bench search` on the clustered corpus
/// (`CorpusConfig::default()`, 1M × 384, k = 10, 50 queries; December 2026, after the shared
/// threshold) gave recall@10 against exact f32 of 0.924 (C = 250), 0.974 (500), 0.984 (750),
/// 0.988 (1000) and 0.988 (2000); exact int8 itself reaches 0.988. 750 is the smallest C tried
/// with recall@10 >= 0.98; 1000 is the smallest that reaches the int8 ceiling, for 0.1-0.3 ms
/// more (p50, two threads: 1.51-1.94 ms at 750, 1.57-1.58 ms at 1000, 2.14-2.18 ms at 2000;
/// one thread: 2.14 vs 2.29-2.54 ms), so the default keeps the ceiling. At 1000 the scan
/// streams 48 MB of sign bits plus 0.4 MB of gathered codes at 87-90% of the bandwidth the
/// bench measures on two threads (1.11-1.15× the sign-bit floor; 58-66% on one thread). Its
/// re-rank gathers 1000 × 384 bytes, under 1% of what is streamed.
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
        self.check_query(query)?;
        let range = self.created_range(filter.created_from, filter.created_until);
        let near_end = filter
            .window
            .map_or(range.end, |w| w.clamp(range.start, range.end));
        let part = Part {
            generation: self,
            filter,
            lists: [range.start..near_end, near_end..near_end],
        };
        let [near, _] = scan_parts(&[part], query, config, self.kernels());
        let mut near = near.into_result();
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
        self.check_query(query)?;
        let range = self.created_range(filter.created_from, filter.created_until);
        let split = filter
            .window
            .map_or(range.end, |w| w.clamp(range.start, range.end));
        let part = Part {
            generation: self,
            filter,
            lists: [range.start..split, split..range.end],
        };
        let [near, far] = scan_parts(&[part], query, config, self.kernels());
        Ok(NearFar {
            near: near.into_result(),
            far: far.into_result(),
        })
    }

    /// Refuses a query of another dimension.
    pub(crate) fn check_query(&self, query: &QueryCodes) -> Result<()> {
        if query.dim() != self.dim() {
            return Err(Error::Dim {
                expected: self.dim().get(),
                found: query.dim().get(),
            });
        }
        Ok(())
    }

    /// The rows inside the created_at bounds, contiguous because rows are sorted created_at
    /// descending.
    pub(crate) fn created_range(&self, from: Option<i64>, until: Option<i64>) -> Range<usize> {
        let created = self.created_at();
        let start = until.map_or(0, |until| created.partition_point(|&c| c > until));
        let end = from.map_or(created.len(), |from| {
            created.partition_point(|&c| c >= from)
        });
        start..end.max(start)
    }

    pub(crate) fn scope_columns(&self) -> ScopeColumns<'_> {
        ScopeColumns {
            agent: self.scope_codes(ScopeField::Agent),
            project: self.scope_codes(ScopeField::Project),
            channel: self.scope_codes(ScopeField::Channel),
            source: self.scope_codes(ScopeField::Source),
        }
    }

    pub(crate) fn code_columns(&self) -> CodeColumns<'_> {
        CodeColumns {
            ids: self.ids(),
            scales: self.scales(),
            codes: self.codes(),
            stride: self.dim().code_stride(),
        }
    }
}

/// One generation's share of a search: the rows of each of the two lists it scans, and its
/// filter (codes of its own dictionaries, exclusions as its own row positions; the filter's
/// `window` is not read: the lists already say where the window ends).
pub(crate) struct Part<'a> {
    pub(crate) generation: &'a Generation,
    pub(crate) filter: &'a RowFilter,
    pub(crate) lists: [Range<usize>; 2],
}

/// A hit of a multi-part scan: the part's index and the hit among that part's rows.
pub(crate) type PartHit = (u32, Hit);

/// One list of a multi-part scan, before the caller maps its hits.
#[derive(Debug, Default)]
pub(crate) struct PartsList {
    /// At most k hits, best first.
    pub(crate) hits: Vec<PartHit>,
    pub(crate) admitted: u64,
    pub(crate) scanned: u64,
    pub(crate) reranked: u64,
    pub(crate) bounds: Bounds,
}

impl PartsList {
    fn into_result(self) -> SearchResult {
        SearchResult {
            hits: self.hits.into_iter().map(|(_, h)| h).collect(),
            admitted: self.admitted,
            scanned: self.scanned,
            reranked: self.reranked,
            bounds: self.bounds,
        }
    }
}

/// A run of one part's rows of one list.
#[derive(Clone, Debug)]
struct Piece {
    part: usize,
    rows: Range<usize>,
}

/// The work of one rayon task: pieces of one list, about `chunk_rows` rows in all. PERF: small
/// parts (segments) are packed together, so one selection sees enough rows to reach a tight
/// threshold and the task count does not grow with the segment count.
#[derive(Clone, Debug)]
struct Task {
    list: usize,
    pieces: Vec<Piece>,
}

/// Cuts every part's lists into tasks of about `chunk_rows` rows, in part order.
fn tasks_of(parts: &[Part<'_>], chunk_rows: usize) -> Vec<Task> {
    let mut tasks = Vec::new();
    for list in 0..2 {
        let mut task = Task {
            list,
            pieces: Vec::new(),
        };
        let mut rows = 0usize;
        for (part, p) in parts.iter().enumerate() {
            let range = p.lists[list].clone();
            let mut start = range.start;
            while start < range.end {
                let end = (start + chunk_rows - rows).min(range.end);
                task.pieces.push(Piece {
                    part,
                    rows: start..end,
                });
                rows += end - start;
                start = end;
                if rows >= chunk_rows {
                    let full = std::mem::take(&mut task.pieces);
                    tasks.push(Task { list, pieces: full });
                    rows = 0;
                }
            }
        }
        if !task.pieces.is_empty() {
            tasks.push(task);
        }
    }
    tasks
}

/// Scans every part's two lists on `config`'s pool and merges them into one top-k per list:
/// exact int8, or the `candidates` best by Hamming distance across all parts re-ranked with
/// int8. The merge is by the written total order (score, id), so a row set split over parts
/// answers exactly like the same rows in one generation.
pub(crate) fn scan_parts(
    parts: &[Part<'_>],
    query: &QueryCodes,
    config: &ScanConfig,
    kernels: Kernels,
) -> [PartsList; 2] {
    let work = || scan_parts_here(parts, query, config, kernels);
    match &config.pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

fn scan_parts_here(
    parts: &[Part<'_>],
    query: &QueryCodes,
    config: &ScanConfig,
    kernels: Kernels,
) -> [PartsList; 2] {
    let threads = rayon::current_num_threads().max(1);
    let total: usize = parts
        .iter()
        .flat_map(|p| p.lists.iter())
        .map(|r| r.len())
        .sum();
    let chunk_rows = total.div_ceil(threads * 4).max(MIN_CHUNK_ROWS);
    let tasks = tasks_of(parts, chunk_rows);
    let mut results: [PartsList; 2] = Default::default();
    for part in parts {
        for (result, range) in results.iter_mut().zip(&part.lists) {
            result.scanned += range.len() as u64;
        }
    }
    let k = config.k;
    match config.mode {
        SearchMode::Exact => {
            let outputs: Vec<(usize, Vec<PartHit>, u64)> = tasks
                .into_par_iter()
                .map(|task| {
                    let mut hits = Vec::new();
                    let mut admitted = 0;
                    for piece in &task.pieces {
                        let part = &parts[piece.part];
                        let g = part.generation;
                        let scopes = part.filter.has_row_checks().then(|| g.scope_columns());
                        let mut top = TopHits::new(k);
                        admitted += exact_chunk(
                            &kernels,
                            &g.code_columns(),
                            query,
                            piece.rows.clone(),
                            part.filter,
                            scopes.as_ref(),
                            &mut top,
                        );
                        let tag = piece.part as u32;
                        hits.extend(top.into_hits().into_iter().map(|h| (tag, h)));
                    }
                    cut_hits(&mut hits, k);
                    (task.list, hits, admitted)
                })
                .collect();
            for (list, hits, admitted) in outputs {
                results[list].admitted += admitted;
                results[list].hits.extend(hits);
            }
            for result in &mut results {
                result.reranked = result.admitted;
                cut_hits(&mut result.hits, k);
            }
        }
        SearchMode::Prefiltered { candidates } => {
            let n_candidates = candidates.max(k);
            let shared = [SharedThreshold::new(), SharedThreshold::new()];
            let ids: Vec<&[i64]> = parts.iter().map(|p| p.generation.ids()).collect();
            let bits = query.dim().sign_words() * 64;
            let outputs: Vec<(usize, Vec<Candidate>, u64)> = tasks
                .into_par_iter()
                .map(|task| {
                    let mut best = Selection::new(&ids, n_candidates, bits);
                    let mut admitted = 0;
                    for piece in &task.pieces {
                        let part = &parts[piece.part];
                        let g = part.generation;
                        let scopes = part.filter.has_row_checks().then(|| g.scope_columns());
                        let signs = SignColumns {
                            part: piece.part as u32,
                            signs: g.signs(),
                            words: g.dim().sign_words(),
                        };
                        admitted += signs
                            .select(
                                &kernels,
                                query,
                                piece.rows.clone(),
                                part.filter,
                                scopes.as_ref(),
                                &mut best,
                                &shared[task.list],
                            )
                            .admitted;
                    }
                    (task.list, best.into_candidates(), admitted)
                })
                .collect();
            let mut pools: [Vec<Candidate>; 2] = Default::default();
            for (list, kept, admitted) in outputs {
                results[list].admitted += admitted;
                pools[list].extend(kept);
            }
            for (result, mut pool) in results.iter_mut().zip(pools) {
                if pool.len() > n_candidates {
                    pool.select_nth_unstable(n_candidates - 1);
                    pool.truncate(n_candidates);
                }
                result.reranked = pool.len() as u64;
                result.bounds.candidates = result.admitted > result.reranked;
                result.hits = rerank(parts, &kernels, query, pool, k);
            }
        }
    }
    for result in &mut results {
        result.bounds.limit = result.reranked > result.hits.len() as u64;
    }
    results
}

/// Int8-scores the candidates (in part then row order, so each gather walks the codes
/// forward) and keeps the best `k`.
fn rerank(
    parts: &[Part<'_>],
    kernels: &Kernels,
    query: &QueryCodes,
    mut pool: Vec<Candidate>,
    k: usize,
) -> Vec<PartHit> {
    pool.sort_unstable_by_key(|c| (c.2, c.3));
    let mut blocks: Vec<(u32, Vec<u32>)> = Vec::new();
    for c in &pool {
        match blocks.last_mut() {
            Some((part, rows)) if *part == c.2 && rows.len() < BLOCK_ROWS => rows.push(c.3),
            _ => blocks.push((c.2, vec![c.3])),
        }
    }
    let mut hits: Vec<PartHit> = blocks
        .into_par_iter()
        .flat_map_iter(|(part, rows)| {
            let mut top = TopHits::new(k);
            parts[part as usize]
                .generation
                .code_columns()
                .score_gathered(kernels, query, &rows, &mut top);
            top.into_hits().into_iter().map(move |h| (part, h))
        })
        .collect();
    cut_hits(&mut hits, k);
    hits
}

/// Sorts hits of several parts into the result order and keeps the first `k`.
fn cut_hits(hits: &mut Vec<PartHit>, k: usize) {
    hits.sort_unstable_by(|a, b| a.1.rank_cmp(&b.1).then(a.0.cmp(&b.0)));
    hits.truncate(k);
}

/// Int8-scores the admitted rows of `rows` into `top`; returns how many were admitted.
fn exact_chunk(
    kernels: &Kernels,
    codes: &CodeColumns<'_>,
    query: &QueryCodes,
    rows: Range<usize>,
    filter: &RowFilter,
    scopes: Option<&ScopeColumns<'_>>,
    top: &mut TopHits,
) -> u64 {
    let mut admitted = 0u64;
    let mut positions = [0u32; BLOCK_ROWS];
    let mut mask = [0u8; BLOCK_ROWS];
    let mut start = rows.start;
    while start < rows.end {
        let n = (rows.end - start).min(BLOCK_ROWS);
        match scopes {
            None => {
                codes.score_block(kernels, query, start, n, top);
                admitted += n as u64;
            }
            Some(scopes) => {
                let passed = scopes.admit_mask(filter, start, &mut mask[..n]);
                admitted += passed as u64;
                if passed == n {
                    codes.score_block(kernels, query, start, n, top);
                } else if passed * 2 >= n {
                    // PERF: most rows pass: stream the whole block, offer the passed ones.
                    codes.score_block_masked(kernels, query, start, &mask[..n], top);
                } else if passed > 0 {
                    let len = compact_positions(start, &mask[..n], &mut positions);
                    codes.score_gathered(kernels, query, &positions[..len], top);
                }
            }
        }
        start += n;
    }
    admitted
}
