//! The row filter of a search: isolation codes, a created_at range, rows the live tail
//! replaces, and a scan window. It holds dictionary codes and row positions only; turning
//! agent or project names into codes (and the "plus the global pool" rule) is the caller's.

/// A set of dictionary codes, as a bitset indexed by code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodeSet {
    words: Vec<u64>,
}

impl CodeSet {
    /// The set of the given codes.
    pub fn new(codes: impl IntoIterator<Item = u32>) -> Self {
        let mut set = Self::default();
        for code in codes {
            set.insert(code);
        }
        set
    }

    /// Adds `code`.
    pub fn insert(&mut self, code: u32) {
        let word = code as usize / 64;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1u64 << (code % 64);
    }

    /// Whether `code` is in the set.
    #[inline]
    pub fn contains(&self, code: u32) -> bool {
        self.words
            .get(code as usize / 64)
            .is_some_and(|w| w & (1u64 << (code % 64)) != 0)
    }
}

/// A set of row positions of one generation, as a bitset (for rows the live tail replaces).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowSet {
    words: Vec<u64>,
    len: usize,
}

impl RowSet {
    /// The set of the given row positions.
    pub fn new(rows: impl IntoIterator<Item = u32>) -> Self {
        let mut set = Self::default();
        for row in rows {
            set.insert(row);
        }
        set
    }

    /// Adds row position `row`.
    pub fn insert(&mut self, row: u32) {
        let word = row as usize / 64;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        if self.words[word] & (1u64 << (row % 64)) == 0 {
            self.len += 1;
        }
        self.words[word] |= 1u64 << (row % 64);
    }

    /// Whether row position `row` is in the set.
    #[inline]
    pub fn contains(&self, row: u32) -> bool {
        self.words
            .get(row as usize / 64)
            .is_some_and(|w| w & (1u64 << (row % 64)) != 0)
    }

    /// Calls `f` with every position of the set inside `rows`, ascending.
    pub(crate) fn for_each_in(&self, rows: std::ops::Range<usize>, mut f: impl FnMut(usize)) {
        if rows.is_empty() {
            return;
        }
        let first = rows.start / 64;
        let last = ((rows.end - 1) / 64).min(self.words.len().saturating_sub(1));
        for w in first..=last.max(first) {
            let Some(&word) = self.words.get(w) else {
                return;
            };
            let mut bits = word;
            while bits != 0 {
                let row = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if rows.contains(&row) {
                    f(row);
                }
            }
        }
    }

    /// Number of positions in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Adds every position of `other`.
    pub fn union_with(&mut self, other: &RowSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (word, &theirs) in self.words.iter_mut().zip(&other.words) {
            *word |= theirs;
        }
        self.len = self.words.iter().map(|w| w.count_ones() as usize).sum();
    }

    /// The positions of the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                Some(w as u32 * 64 + bit)
            })
        })
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Which rows a search admits. Every field narrows; the default admits every row.
#[derive(Clone, Debug, Default)]
pub struct RowFilter {
    /// Only rows whose agent code equals this one.
    pub agent: Option<u32>,
    /// Only rows whose project code is in the set (the caller adds code 0 for the global pool).
    pub projects: Option<CodeSet>,
    /// Only rows whose channel code is in the set.
    pub channels: Option<CodeSet>,
    /// Only rows whose source code is in the set.
    pub sources: Option<CodeSet>,
    /// Only rows created at or after this time (UTC ms, inclusive).
    pub created_from: Option<i64>,
    /// Only rows created at or before this time (UTC ms, inclusive).
    pub created_until: Option<i64>,
    /// Rows never admitted: positions the live tail replaces (changed or deleted rows).
    pub exclude: Option<RowSet>,
    /// Only the first `window` rows, the newest ones (a prefix, since rows are newest first).
    /// In a near/far search this is the boundary between the two lists instead.
    pub window: Option<usize>,
}

impl RowFilter {
    /// Whether the filter checks anything per row beyond the row range.
    pub(crate) fn has_row_checks(&self) -> bool {
        self.agent.is_some()
            || self.projects.is_some()
            || self.channels.is_some()
            || self.sources.is_some()
            || self.exclude.as_ref().is_some_and(|e| !e.is_empty())
    }
}

/// The per-row columns a filter reads, borrowed from a generation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScopeColumns<'a> {
    pub(crate) agent: &'a [u32],
    pub(crate) project: &'a [u32],
    pub(crate) channel: &'a [u32],
    pub(crate) source: &'a [u32],
}

impl ScopeColumns<'_> {
    /// Whether row `row` passes the filter's per-row checks (the range checks are the caller's).
    pub(crate) fn admits(&self, filter: &RowFilter, row: usize) -> bool {
        if let Some(agent) = filter.agent
            && self.agent[row] != agent
        {
            return false;
        }
        if let Some(set) = &filter.projects
            && !set.contains(self.project[row])
        {
            return false;
        }
        if let Some(set) = &filter.channels
            && !set.contains(self.channel[row])
        {
            return false;
        }
        if let Some(set) = &filter.sources
            && !set.contains(self.source[row])
        {
            return false;
        }
        if let Some(set) = &filter.exclude
            && set.contains(row as u32)
        {
            return false;
        }
        true
    }
}

impl ScopeColumns<'_> {
    /// Writes 1 into `mask[i]` when row `start + i` passes the per-row checks, else 0; returns
    /// how many passed. PERF: one tight pass per active check over a code column (no per-row
    /// `Option` tests), and the exclusion set is walked by its set bits, not probed per row.
    pub(crate) fn admit_mask(&self, filter: &RowFilter, start: usize, mask: &mut [u8]) -> usize {
        let n = mask.len();
        let rows = start..start + n;
        mask.fill(1);
        if let Some(agent) = filter.agent {
            for (m, &c) in mask.iter_mut().zip(&self.agent[rows.clone()]) {
                *m &= u8::from(c == agent);
            }
        }
        for (set, column) in [
            (&filter.projects, self.project),
            (&filter.channels, self.channel),
            (&filter.sources, self.source),
        ] {
            if let Some(set) = set {
                for (m, &c) in mask.iter_mut().zip(&column[rows.clone()]) {
                    *m &= u8::from(set.contains(c));
                }
            }
        }
        if let Some(set) = &filter.exclude {
            set.for_each_in(rows, |row| mask[row - start] = 0);
        }
        mask.iter().map(|&m| m as usize).sum()
    }
}

/// Writes the positions `start + i` with `mask[i] != 0` to the front of `out`; returns how
/// many. PERF: branch-free (every slot is written, the length advances by the mask bit).
pub(crate) fn compact_positions(start: usize, mask: &[u8], out: &mut [u32]) -> usize {
    let mut len = 0;
    for (i, &m) in mask.iter().enumerate() {
        out[len] = (start + i) as u32;
        len += usize::from(m != 0);
    }
    len
}
