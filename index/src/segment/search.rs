//! Search over a [`SegmentSet`]: the caller's filter by names (each segment has its own
//! dictionaries), resolved per segment into a [`RowFilter`] whose exclusions add the rows newer
//! segments shadow; the scan window placed across segments (newest rows first, by the file
//! order key); then one multi-part scan (`scan.rs`), the same code a single generation runs, so
//! the answer equals one generation freshly built from the live rows.

use std::ops::Range;

use super::{LiveRows, SegmentSet};
use crate::error::{Error, Result};
use crate::filter::{CodeSet, RowFilter, RowSet};
use crate::generation::{Generation, ScopeField};
use crate::quantize::QueryCodes;
use crate::scan::{Bounds, Part, PartsList, ScanConfig, scan_parts};

/// Which rows the scan window holds, counted across segments in file order (created_at
/// descending, then id ascending), dead rows never counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The newest `n` live rows, whatever the filter: what [`RowFilter::window`] means for one
    /// generation (its first `n` rows).
    Newest(usize),
    /// The newest `n` live rows the filter's isolation codes (agent, projects, channels,
    /// sources) and `exclude_ids` admit; the created_at range does not count. CPersona's scan
    /// window, which the engine places per scope.
    NewestInScope(usize),
    /// Every row up to and including this key in file order (`created_at` descending, then
    /// `id` ascending): for a caller that counts the window over these rows and rows it holds
    /// elsewhere (see [`SegmentSet::in_scope_newest_first`]).
    Through {
        /// The last row's creation time.
        created_at: i64,
        /// The last row's id.
        id: i64,
    },
}

/// Which rows a segmented search admits, by names rather than dictionary codes. Every field
/// narrows; the default admits every live row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetFilter {
    /// Only rows of this agent.
    pub agent: Option<String>,
    /// Only rows whose project is one of these (`""` is the global pool; add it to include it).
    pub projects: Option<Vec<String>>,
    /// Only rows whose channel is one of these (`""`: channel-less).
    pub channels: Option<Vec<String>>,
    /// Only rows whose source is one of these (`""`: no source).
    pub sources: Option<Vec<String>>,
    /// Only rows created at or after this time (UTC ms, inclusive).
    pub created_from: Option<i64>,
    /// Only rows created at or before this time (UTC ms, inclusive).
    pub created_until: Option<i64>,
    /// Ids never admitted, any order (rows the caller scores elsewhere).
    pub exclude_ids: Vec<i64>,
    /// The scan window: the near list of a near/far search, the whole of a plain search.
    pub window: Option<Window>,
}

impl SetFilter {
    /// This filter in the codes of one segment's dictionaries, with `dead` rows excluded;
    /// `None` when the segment can admit no row (its dictionary lacks the agent).
    fn resolve(&self, g: &Generation, dead: &RowSet) -> Option<RowFilter> {
        let mut filter = RowFilter {
            created_from: self.created_from,
            created_until: self.created_until,
            ..RowFilter::default()
        };
        if let Some(agent) = &self.agent {
            filter.agent = Some(g.code(ScopeField::Agent, agent)?);
        }
        let codes = |field: ScopeField, names: &Option<Vec<String>>| {
            names
                .as_ref()
                .map(|names| CodeSet::new(names.iter().filter_map(|n| g.code(field, n))))
        };
        filter.projects = codes(ScopeField::Project, &self.projects);
        filter.channels = codes(ScopeField::Channel, &self.channels);
        filter.sources = codes(ScopeField::Source, &self.sources);
        let mut exclude = RowSet::new(self.exclude_ids.iter().filter_map(|&id| g.position_of(id)));
        exclude.union_with(dead);
        filter.exclude = (!exclude.is_empty()).then_some(exclude);
        Some(filter)
    }
}

/// One hit of a segmented search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SetHit {
    /// The row's id.
    pub id: i64,
    /// Cosine estimate `dot_i8 · s_q · s_r`, the same value one generation gives.
    pub score: f32,
    /// The row's creation time, UTC ms.
    pub created_at: i64,
    /// Index of the segment in the set (oldest is 0).
    pub segment: u32,
    /// Position of the row in that segment.
    pub row: u32,
}

/// A segmented search's hits, best first (score descending, then id ascending), and what the
/// scan did. The counts are those of one generation of the live rows, except `scanned`, which
/// also counts the dead rows the scan read past.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetSearchResult {
    /// At most k hits.
    pub hits: Vec<SetHit>,
    /// Live rows that passed the filter.
    pub admitted: u64,
    /// Rows whose data the scan read, dead ones included.
    pub scanned: u64,
    /// Rows scored with int8.
    pub reranked: u64,
    /// Which bounds cut.
    pub bounds: Bounds,
}

/// The two lists of a segmented search: inside the scan window and beyond it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SetNearFar {
    /// Top-k inside the window.
    pub near: SetSearchResult,
    /// Top-k beyond it.
    pub far: SetSearchResult,
}

/// Where one segment's lists lie.
struct SegmentPlan {
    filter: Option<RowFilter>,
    range: Range<usize>,
    split: usize,
}

impl SegmentSet {
    /// Top-k of the live rows `filter` admits inside its window.
    pub fn search(
        &self,
        query: &QueryCodes,
        filter: &SetFilter,
        config: &ScanConfig,
    ) -> Result<SetSearchResult> {
        let plans = self.plan(query, filter)?;
        let window_cut = plans.iter().enumerate().any(|(s, plan)| {
            let beyond = plan.split.clamp(plan.range.start, plan.range.end)..plan.range.end;
            beyond.into_iter().any(|row| self.is_live(s, row))
        });
        let [near, _] = self.scan(query, config, &plans, false);
        let mut near = near;
        near.bounds.window = window_cut;
        Ok(near)
    }

    /// Top-k inside the window and top-k beyond it, in one pass. Without a window everything
    /// is near.
    pub fn search_near_far(
        &self,
        query: &QueryCodes,
        filter: &SetFilter,
        config: &ScanConfig,
    ) -> Result<SetNearFar> {
        let plans = self.plan(query, filter)?;
        let [near, far] = self.scan(query, config, &plans, true);
        Ok(SetNearFar { near, far })
    }

    /// The (created_at, id) of the live rows `filter`'s isolation codes and `exclude_ids` admit,
    /// newest first across segments (the created_at range and window are not applied): what a
    /// caller merges with its own rows to place a [`Window::Through`] boundary. Lazy; a caller
    /// counting to W reads W rows (plus the rows it skips).
    pub fn in_scope_newest_first<'s>(
        &'s self,
        filter: &SetFilter,
    ) -> impl Iterator<Item = (i64, i64)> + 's {
        let filters: Vec<Option<RowFilter>> = self
            .segments()
            .iter()
            .enumerate()
            .map(|(s, segment)| filter.resolve(segment.generation(), self.dead(s)))
            .collect();
        let columns: Vec<_> = self
            .segments()
            .iter()
            .map(|s| s.generation().scope_columns())
            .collect();
        let admit = move |s: usize, row: usize| {
            filters[s]
                .as_ref()
                .is_some_and(|f| columns[s].admits(f, row))
        };
        LiveRows::new(self, 0..self.segments().len(), admit).map(move |(s, row)| {
            let g = self.segments()[s].generation();
            (g.created_at()[row as usize], g.ids()[row as usize])
        })
    }

    /// Each segment's filter, created_at range and window split.
    fn plan(&self, query: &QueryCodes, filter: &SetFilter) -> Result<Vec<SegmentPlan>> {
        if query.dim() != self.dim() {
            return Err(Error::Dim {
                expected: self.dim().get(),
                found: query.dim().get(),
            });
        }
        let mut plans: Vec<SegmentPlan> = self
            .segments()
            .iter()
            .enumerate()
            .map(|(s, segment)| {
                let g = segment.generation();
                SegmentPlan {
                    filter: filter.resolve(g, self.dead(s)),
                    range: g.created_range(filter.created_from, filter.created_until),
                    split: g.len(),
                }
            })
            .collect();
        let Some(window) = filter.window else {
            return Ok(plans);
        };
        let (n, in_scope) = match window {
            Window::Newest(n) => (n, false),
            Window::NewestInScope(n) => (n, true),
            Window::Through { created_at, id } => {
                for (plan, segment) in plans.iter_mut().zip(self.segments()) {
                    plan.split = first_after(segment.generation(), (created_at, id));
                }
                return Ok(plans);
            }
        };
        if !in_scope && self.segments().len() == 1 && self.dead(0).is_empty() {
            // One segment without dead rows is one generation: the window is its prefix.
            plans[0].split = n.min(plans[0].split);
            return Ok(plans);
        }
        if n == 0 {
            // An empty window: every row is beyond it.
            for plan in &mut plans {
                plan.split = 0;
            }
            return Ok(plans);
        }
        let boundary = {
            let columns: Vec<_> = self
                .segments()
                .iter()
                .map(|s| s.generation().scope_columns())
                .collect();
            let plans_ref = &plans;
            let admit = move |s: usize, row: usize| {
                !in_scope
                    || plans_ref[s]
                        .filter
                        .as_ref()
                        .is_some_and(|f| columns[s].admits(f, row))
            };
            LiveRows::new(self, 0..self.segments().len(), admit).nth(n - 1)
        };
        let Some((s, row)) = boundary else {
            return Ok(plans);
        };
        let g = self.segments()[s].generation();
        let key = (g.created_at()[row as usize], g.ids()[row as usize]);
        for (plan, segment) in plans.iter_mut().zip(self.segments()) {
            plan.split = first_after(segment.generation(), key);
        }
        Ok(plans)
    }

    fn scan(
        &self,
        query: &QueryCodes,
        config: &ScanConfig,
        plans: &[SegmentPlan],
        with_far: bool,
    ) -> [SetSearchResult; 2] {
        let mut owners: Vec<usize> = Vec::new();
        let mut parts: Vec<Part<'_>> = Vec::new();
        for (s, plan) in plans.iter().enumerate() {
            let Some(filter) = &plan.filter else {
                continue;
            };
            let split = plan.split.clamp(plan.range.start, plan.range.end);
            let far_end = if with_far { plan.range.end } else { split };
            owners.push(s);
            parts.push(Part {
                generation: self.segments()[s].generation(),
                filter,
                lists: [plan.range.start..split, split..far_end],
            });
        }
        let lists = scan_parts(&parts, query, config, self.kernels());
        lists.map(|list| self.map_list(list, &owners))
    }

    fn map_list(&self, list: PartsList, owners: &[usize]) -> SetSearchResult {
        let hits = list
            .hits
            .into_iter()
            .map(|(part, hit)| {
                let segment = owners[part as usize];
                SetHit {
                    id: hit.id,
                    score: hit.score,
                    created_at: self.segments()[segment].generation().created_at()
                        [hit.row as usize],
                    segment: segment as u32,
                    row: hit.row,
                }
            })
            .collect();
        SetSearchResult {
            hits,
            admitted: list.admitted,
            scanned: list.scanned,
            reranked: list.reranked,
            bounds: list.bounds,
        }
    }
}

/// The first position of `g` whose row comes after `key` in file order.
fn first_after(g: &Generation, key: (i64, i64)) -> usize {
    let (created, ids) = (g.created_at(), g.ids());
    let (mut lo, mut hi) = (0usize, g.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let inside = created[mid] > key.0 || (created[mid] == key.0 && ids[mid] <= key.1);
        if inside {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
