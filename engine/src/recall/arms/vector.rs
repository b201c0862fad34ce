//! The vector arm: the table's index segments (rows changed since their head masked out) plus
//! the live tail scored exactly from SQLite with the same int8 formula, so segments behind the
//! change log are never wrong, and, kept fresh by the background flush, not slower either. Isolation is applied before the scan window; it must
//! never admit a row outside the caller's scope.
//!
//! # Window
//! The near list covers the newest `EngineConfig::scan_window` (default [`MAX_MEMORIES`]) rows
//! with a vector *in scope* per table (CPersona's scan window); the boundary is the key
//! `(created_at_ms DESC, id ASC)` of the last in-scope row inside it, so generation rows and
//! tail rows are split by the same key. With segments the key is counted from their in-memory
//! columns merged with the tail; without them it is read from SQLite. Tail rows are
//! not assumed newest: their own `created_at_ms` places them.

use std::cmp::Ordering;

use cpersona_index::segment::{SegmentSet, SetFilter, Window};
use cpersona_index::{Dim, QueryCodes, ScanConfig, SearchMode, TailRows};
use rusqlite::Connection;
use rusqlite::types::Value;
use serde::Serialize;

use crate::error::Result;
use crate::recall::stages::candidate::{Arm, ArmList};
use crate::refs::Ref;
use crate::scope::{AgentAxis, ChannelAxis, ProjectAxis, Scope};
use crate::store::Store;
use crate::store::generations::IndexTable;
use crate::store::index::IndexView;
use crate::vector::{decode, format_from_tag};

pub use crate::config::MAX_MEMORIES;

/// Segment sets with more live rows than this are searched with the sign-bit prefilter (the index's
/// default mode); smaller ones exactly. PERF: measured with `examples/recall_rate` at 100K
/// rows (agent + project filter, near/far split, 2 loaded cores): the index's search took
/// 12.4 ms p50 exact vs 24.1 ms p50 prefiltered, so exact stays on well past 100K; the
/// prefilter pays off only when the int8 pass itself dominates (larger tables).
pub const PREFILTER_MIN_ROWS: usize = 250_000;

/// SQLite bound parameters per `IN (...)` chunk.
const IN_CHUNK: usize = 500;

/// What the vector arm returns.
#[derive(Clone, Debug)]
pub(crate) struct VectorLists {
    pub(crate) near: ArmList,
    pub(crate) far: ArmList,
    pub(crate) report: VectorReport,
}

/// How the vector arm ran, per table, for notes and the trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VectorReport {
    /// Per table, memories first.
    pub tables: Vec<VectorTableReport>,
}

/// How one table was searched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VectorTableReport {
    /// The table.
    pub table: IndexTable,
    /// The segments' head (the change-log position they are complete up to), when used.
    pub generation: Option<u64>,
    /// Segments searched.
    pub segments: usize,
    /// Why no segments were searched, when none were (every row then came from SQLite).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Rows scored exactly from SQLite.
    pub tail_rows: usize,
    /// True when the scan window cut rows (some in-scope rows went to the far list).
    pub window_cut: bool,
    /// True when the prefilter mode was used.
    pub prefiltered: bool,
}

/// One scored row of one table.
#[derive(Clone, Copy, Debug)]
struct Scored {
    r#ref: Ref,
    score: f32,
    created_at: i64,
}

/// Total order: score desc, memories before episodes, newer first (created_at desc, then the
/// larger id, which is the later insert), as CPersona's stable sort over its scan order.
fn scored_cmp(a: &Scored, b: &Scored) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(a.r#ref.kind.cmp(&b.r#ref.kind))
        .then(b.created_at.cmp(&a.created_at))
        .then(b.r#ref.id.cmp(&a.r#ref.id))
}

/// Whether `(created, id)` is inside a window whose last row is `key`.
fn inside(key: Option<(i64, i64)>, created: i64, id: i64) -> bool {
    key.is_none_or(|(kc, kid)| created > kc || (created == kc && id <= kid))
}

/// The caller's scope as a segment filter (names; each segment resolves its own codes).
fn set_filter(scope: &Scope) -> SetFilter {
    let with_empty = |name: &str| vec![String::new(), name.to_owned()];
    SetFilter {
        agent: match &scope.agent {
            AgentAxis::Exact(agent) => Some(agent.clone()),
            AgentAxis::Any => None,
        },
        projects: match &scope.project {
            ProjectAxis::Any => None,
            ProjectAxis::GlobalOnly => Some(vec![String::new()]),
            ProjectAxis::WithGlobal(p) => Some(with_empty(p)),
        },
        channels: match &scope.channel {
            ChannelAxis::Any => None,
            ChannelAxis::ChannellessOnly => Some(vec![String::new()]),
            ChannelAxis::WithChannelless(c) => Some(with_empty(c)),
        },
        ..SetFilter::default()
    }
}

/// The key of the `window`-th newest row in scope, counting the segments' admitted rows
/// (`indexed`, newest first) and the tail rows (`tail`, sorted in window order) together;
/// `None` when fewer rows are in scope. Reads the segments only up to the window boundary.
fn window_key_merged(
    indexed: impl Iterator<Item = (i64, i64)>,
    tail: &[(i64, i64)],
    window: usize,
) -> Option<(i64, i64)> {
    if window == 0 {
        return None;
    }
    let mut count = 0usize;
    let mut t = 0usize;
    let mut take = |key: (i64, i64)| {
        count += 1;
        (count == window).then_some(key)
    };
    for key in indexed {
        while t < tail.len() && inside(Some(key), tail[t].0, tail[t].1) {
            if let Some(found) = take(tail[t]) {
                return Some(found);
            }
            t += 1;
        }
        if let Some(found) = take(key) {
            return Some(found);
        }
    }
    while t < tail.len() {
        if let Some(found) = take(tail[t]) {
            return Some(found);
        }
        t += 1;
    }
    None
}

struct TableSearch<'a> {
    table: IndexTable,
    scope: &'a Scope,
    model_id: &'a str,
    dim: usize,
    depth: usize,
    window: usize,
}

impl TableSearch<'_> {
    fn kind(&self) -> fn(i64) -> Ref {
        match self.table {
            // Blocks are never in `IndexTable::ALL`, so recall never searches them here.
            IndexTable::Memories | IndexTable::Blocks => Ref::mem,
            IndexTable::Episodes => Ref::ep,
        }
    }

    /// The key of the last row inside the scan window, `None` when every in-scope row fits.
    fn window_key(&self, conn: &Connection) -> Result<Option<(i64, i64)>> {
        let (pred, mut params) = self.scope.predicate("");
        params.push(Value::Text(self.model_id.to_owned()));
        params.push(Value::Integer(self.dim as i64));
        let sql = format!(
            "SELECT created_at_ms, id FROM {} WHERE {pred} AND embedding IS NOT NULL \
             AND embedding_model = ? AND embedding_dim = ? \
             ORDER BY created_at_ms DESC, id ASC LIMIT 1 OFFSET {}",
            self.table.name(),
            self.window.saturating_sub(1)
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        Ok(match rows.next()? {
            Some(row) => Some((row.get(0)?, row.get(1)?)),
            None => None,
        })
    }

    /// Reads tail rows in scope: every row with a vector (`ids` `None`) or those ids.
    fn tail_rows(
        &self,
        conn: &Connection,
        ids: Option<&[i64]>,
        mut push: impl FnMut(i64, i64, Vec<f32>) -> Result<()>,
    ) -> Result<()> {
        let (pred, base) = self.scope.predicate("");
        let mut run = |extra: &str, extra_params: Vec<Value>| -> Result<()> {
            let mut params = base.clone();
            params.push(Value::Text(self.model_id.to_owned()));
            params.push(Value::Integer(self.dim as i64));
            params.extend(extra_params);
            let sql = format!(
                "SELECT id, created_at_ms, embedding, embedding_format FROM {} WHERE {pred} \
                 AND embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ? {extra}",
                self.table.name()
            );
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
            while let Some(row) = rows.next()? {
                let blob: Vec<u8> = row.get(2)?;
                let tag: String = row.get(3)?;
                if let Some(v) = format_from_tag(&tag)
                    .and_then(|f| decode(&blob, f))
                    .filter(|v| v.len() == self.dim)
                {
                    push(row.get(0)?, row.get(1)?, v)?;
                }
            }
            Ok(())
        };
        match ids {
            None => run("", Vec::new()),
            Some(ids) => {
                for chunk in ids.chunks(IN_CHUNK) {
                    let marks = vec!["?"; chunk.len()].join(",");
                    run(
                        &format!("AND id IN ({marks})"),
                        chunk.iter().map(|&id| Value::Integer(id)).collect(),
                    )?;
                }
                Ok(())
            }
        }
    }

    /// Near and far lists of one table, each sorted and cut to depth.
    fn run(
        &self,
        store: &Store,
        view: &IndexView,
        query: &[f32],
    ) -> Result<(Vec<Scored>, Vec<Scored>, VectorTableReport)> {
        let dim = Dim::new(self.dim)?;
        let codes = QueryCodes::new(query, dim)?;
        let kind = self.kind();
        let mut near_tail = TailRows::new(dim);
        let mut far_tail = TailRows::new(dim);
        let mut near_created = Vec::new();
        let mut far_created = Vec::new();
        // With segments the tail is small: read it whole, then place the window from the
        // segments' own columns (no SQL scan of the window). Without them every row is tail:
        // the window key comes from SQLite and rows stream into the near/far sets.
        let mut tail: Vec<(i64, i64, Vec<f32>)> = Vec::new();
        let mut filter: Option<SetFilter> = None;
        let key = store.read(|conn| {
            let tx = conn.unchecked_transaction()?;
            let key = match &view.set {
                Some(set) => {
                    let mut stmt = tx.prepare_cached(
                        "SELECT DISTINCT row_id FROM change_log WHERE table_name = ? AND seq > ? \
                         ORDER BY row_id",
                    )?;
                    let changed = stmt
                        .query_map(
                            rusqlite::params![self.table.name(), view.head as i64],
                            |row| row.get(0),
                        )?
                        .collect::<rusqlite::Result<Vec<i64>>>()?;
                    self.tail_rows(&tx, Some(&changed), |id, created, v| {
                        tail.push((id, created, v));
                        Ok(())
                    })?;
                    let mut set_filter = set_filter(self.scope);
                    set_filter.exclude_ids = changed;
                    let mut keys: Vec<(i64, i64)> = tail.iter().map(|t| (t.1, t.0)).collect();
                    keys.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                    let key = window_key_merged(
                        set.in_scope_newest_first(&set_filter),
                        &keys,
                        self.window,
                    );
                    filter = Some(set_filter);
                    key
                }
                None => {
                    let key = self.window_key(&tx)?;
                    self.tail_rows(&tx, None, |id, created, vector| {
                        if inside(key, created, id) {
                            near_tail.push(id, &vector)?;
                            near_created.push(created);
                        } else {
                            far_tail.push(id, &vector)?;
                            far_created.push(created);
                        }
                        Ok(())
                    })?;
                    key
                }
            };
            tx.commit()?;
            Ok(key)
        })?;
        for (id, created, vector) in &tail {
            if inside(key, *created, *id) {
                near_tail.push(*id, vector)?;
                near_created.push(*created);
            } else {
                far_tail.push(*id, vector)?;
                far_created.push(*created);
            }
        }
        let mut near = Vec::new();
        let mut far = Vec::new();
        let mut report = VectorTableReport {
            table: self.table,
            generation: view.set.as_ref().map(|_| view.head),
            segments: view.set.as_ref().map_or(0, |set| set.segments().len()),
            note: view.note.clone(),
            tail_rows: near_tail.len() + far_tail.len(),
            window_cut: key.is_some(),
            prefiltered: false,
        };
        if let (Some(set), Some(mut filter)) = (&view.set, filter) {
            filter.window = key.map(|(created_at, id)| Window::Through { created_at, id });
            report.prefiltered = set.live_rows() > PREFILTER_MIN_ROWS;
            let mode = if report.prefiltered {
                SearchMode::default()
            } else {
                SearchMode::Exact
            };
            let found = search_set(
                set,
                query,
                &filter,
                &ScanConfig::new(self.depth).with_mode(mode),
            )?;
            for (hits, out) in [(found.near.hits, &mut near), (found.far.hits, &mut far)] {
                out.extend(hits.into_iter().map(|h| Scored {
                    r#ref: kind(h.id),
                    score: h.score,
                    created_at: h.created_at,
                }));
            }
        }
        let kernels = store.kernels;
        for (tail, created, out) in [
            (&near_tail, &near_created, &mut near),
            (&far_tail, &far_created, &mut far),
        ] {
            if tail.is_empty() {
                continue;
            }
            let found = tail.search(&codes, self.depth, &kernels, |_| true)?;
            out.extend(found.hits.into_iter().map(|h| Scored {
                r#ref: kind(h.id),
                score: h.score,
                created_at: created[h.row as usize],
            }));
        }
        Ok((near, far, report))
    }
}

/// One near/far search of a segment set.
fn search_set(
    set: &SegmentSet,
    query: &[f32],
    filter: &SetFilter,
    config: &ScanConfig,
) -> Result<cpersona_index::segment::SetNearFar> {
    let codes = set.query(query)?;
    Ok(set.search_near_far(&codes, filter, config)?)
}

/// Runs the vector arm over memories and episodes for `scope`, each list cut to `depth`.
pub(crate) fn search(
    store: &Store,
    scope: &Scope,
    query: &[f32],
    depth: usize,
    window: usize,
) -> Result<VectorLists> {
    let target = store.vector_target();
    let mut near = Vec::new();
    let mut far = Vec::new();
    let mut report = VectorReport::default();
    for table in IndexTable::ALL {
        let view = store.index_view(table);
        let search = TableSearch {
            table,
            scope,
            model_id: &target.model_id,
            dim: target.dim,
            depth,
            window,
        };
        let (n, f, r) = search.run(store, &view, query)?;
        near.extend(n);
        far.extend(f);
        report.tables.push(r);
    }
    let finish = |mut list: Vec<Scored>, arm: Arm| {
        list.sort_by(scored_cmp);
        list.truncate(depth);
        ArmList::ranked(
            arm,
            list.into_iter()
                .map(|s| (s.r#ref, Some(f64::from(s.score)))),
        )
    };
    Ok(VectorLists {
        near: finish(near, Arm::VectorNear),
        far: finish(far, Arm::VectorFar),
        report,
    })
}
