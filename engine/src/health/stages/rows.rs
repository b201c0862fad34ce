//! The row checks CPersona runs that apply here, judged from facts: FTS integrity against the
//! rows (`fts_integrity`), duplicate rows (`duplicate_content`), rows over the content cap
//! (`oversized_content`), timestamps ahead of the clock (`future_timestamp`) and JSON that
//! does not parse (`invalid_json`).

use crate::health::stages::facts::{
    DuplicateFacts, FtsFacts, FutureFacts, JsonFacts, OversizeFacts,
};
use crate::health::stages::finding::{Finding, Severity};

/// Share of rows missing from an FTS index past which the finding is an error (CPersona:
/// critical when more than 5% are missing).
pub const FTS_MISSING_ERROR_SHARE: f64 = 0.05;
/// How far ahead of the clock a timestamp may be before it counts (CPersona's
/// `CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS` default, 300 s).
pub const FUTURE_SKEW_MS: i64 = 300_000;

/// `fts_integrity`: each FTS5 table holds exactly its content table's rows and passes
/// FTS5's own `integrity-check` against them. `fix` rebuilds a table that fails.
pub fn fts_integrity(tables: &[FtsFacts]) -> Finding {
    let broken: Vec<&FtsFacts> = tables
        .iter()
        .filter(|t| t.rows != t.indexed || t.integrity_error.is_some())
        .collect();
    if broken.is_empty() {
        let rows: Vec<String> = tables
            .iter()
            .map(|t| format!("{} {} rows", t.table, t.rows))
            .collect();
        return Finding::ok(
            "fts_integrity",
            format!("the FTS indexes match their rows ({})", rows.join(", ")),
        )
        .with("tables", tables);
    }
    let mut worst = Severity::Warning;
    let mut parts = Vec::new();
    let mut off = 0u64;
    for t in &broken {
        let missing = t.rows.saturating_sub(t.indexed);
        let extra = t.indexed.saturating_sub(t.rows);
        off += missing + extra;
        if missing as f64 > FTS_MISSING_ERROR_SHARE * t.rows as f64 {
            worst = Severity::Error;
        }
        let mut part = format!(
            "{} indexes {} of {} rows ({missing} missing, {extra} extra)",
            t.table, t.indexed, t.rows
        );
        if let Some(err) = &t.integrity_error {
            part.push_str(&format!("; integrity-check: {err}"));
        }
        parts.push(part);
    }
    Finding::new(
        "fts_integrity",
        worst,
        format!(
            "the lexical arms miss or misread rows: {}",
            parts.join("; ")
        ),
    )
    .remedy("check_health with fix=true rebuilds the FTS index from the rows ('rebuild')")
    .count(off)
    .repairable(broken.len() as u64)
    .with("tables", tables)
}

/// `duplicate_content`: one agent's identical rows. Exact copies in one scope (possible only
/// when the unique content index is missing) are removed by `fix`, keeping the oldest and
/// never a locked or referenced row; copies in different projects or channels are reported
/// only, since each scope reads its own.
pub fn duplicate_content(facts: &DuplicateFacts) -> Finding {
    let base = Finding::ok("duplicate_content", "")
        .with("exact_groups", facts.exact_groups)
        .with("exact_removable", facts.exact_removable)
        .with("exact_kept", facts.exact_kept)
        .with("near_groups", facts.near_groups)
        .with("cross_scope_groups", facts.cross_scope_groups)
        .with("cross_scope_rows", facts.cross_scope_rows);
    if facts.exact_groups > 0 || facts.near_groups > 0 {
        let mut finding = Finding {
            severity: Severity::Warning,
            reason: format!(
                "{} groups of identical rows in one scope ({} removable copies, {} kept as \
                 locked or referenced), {} more groups with the same text but other source or \
                 metadata: duplicates take recall's places",
                facts.exact_groups, facts.exact_removable, facts.exact_kept, facts.near_groups
            ),
            remedy: if facts.exact_removable > 0 {
                "check_health with fix=true removes the exact copies, keeping the oldest row".into()
            } else {
                "review them: no copy can be removed safely (locked, referenced, or not exact)"
                    .into()
            },
            count: Some(facts.exact_removable + facts.exact_kept),
            repairable: Some(facts.exact_removable),
            ..base
        };
        if facts.exact_removable == 0 {
            finding = finding.review();
        }
        return finding;
    }
    if facts.cross_scope_groups > 0 {
        return Finding {
            severity: Severity::Info,
            reason: format!(
                "{} texts are stored {} times in different projects or channels of one agent",
                facts.cross_scope_groups, facts.cross_scope_rows
            ),
            remedy: "not removed: each project or channel keeps its own copy".into(),
            count: Some(facts.cross_scope_rows),
            needs_human_review: true,
            ..base
        };
    }
    Finding {
        reason: "no agent stores the same text twice".into(),
        ..base
    }
}

/// `oversized_content`: rows longer than the content cap (written under a larger cap or
/// imported). Report only: cutting text would lose it.
pub fn oversized_content(tables: &[OversizeFacts]) -> Finding {
    let rows: u64 = tables.iter().map(|t| t.rows).sum();
    let cap = tables.first().map_or(0, |t| t.cap);
    if rows == 0 {
        return Finding::ok(
            "oversized_content",
            format!("no row is longer than the {cap}-character cap"),
        );
    }
    let parts: Vec<String> = tables
        .iter()
        .filter(|t| t.rows > 0)
        .map(|t| {
            format!(
                "{}: {} rows, the longest {} characters",
                t.table,
                t.rows,
                t.longest.unwrap_or(0)
            )
        })
        .collect();
    Finding::new(
        "oversized_content",
        Severity::Warning,
        format!(
            "{rows} rows are longer than the {cap}-character cap ({}): their vector sees a \
             prefix only and responses cut them",
            parts.join("; ")
        ),
    )
    .remedy("not repaired (cutting would lose text): split them into shorter memories")
    .count(rows)
    .review()
    .with("tables", tables)
}

/// `future_timestamp`: rows dated more than [`FUTURE_SKEW_MS`] ahead of now skew recency
/// and time cues. Report only: the true instant is unknown.
pub fn future_timestamp(columns: &[FutureFacts], now_ms: i64) -> Finding {
    let rows: u64 = columns.iter().map(|c| c.rows).sum();
    if rows == 0 {
        return Finding::ok(
            "future_timestamp",
            "no row is dated ahead of the clock".to_owned(),
        );
    }
    let parts: Vec<String> = columns
        .iter()
        .filter(|c| c.rows > 0)
        .map(|c| {
            let ahead = c.latest_ms.map_or(0, |ms| ms - now_ms) / 1000;
            format!("{}: {} rows, up to {ahead} s ahead", c.column, c.rows)
        })
        .collect();
    Finding::new(
        "future_timestamp",
        Severity::Warning,
        format!(
            "{rows} timestamps lie more than {} s in the future ({}): recency and time cues \
             order them wrongly",
            FUTURE_SKEW_MS / 1000,
            parts.join("; ")
        ),
    )
    .remedy("not repaired (the true time is unknown): check the writer's clock and update them")
    .count(rows)
    .review()
    .with("columns", columns)
}

/// `invalid_json`: `source` or `metadata` that does not parse; source filters and the
/// session split of calibration read them. Report only: rewriting would lose the text.
pub fn invalid_json(columns: &[JsonFacts]) -> Finding {
    let rows: u64 = columns.iter().map(|c| c.rows).sum();
    if rows == 0 {
        return Finding::ok("invalid_json", "every source and metadata value is JSON");
    }
    let parts: Vec<String> = columns
        .iter()
        .filter(|c| c.rows > 0)
        .map(|c| format!("{}: {} rows (ids {:?})", c.column, c.rows, c.sample_ids))
        .collect();
    Finding::new(
        "invalid_json",
        Severity::Warning,
        format!(
            "{rows} values are not valid JSON ({}): source filters and sessions skip them",
            parts.join("; ")
        ),
    )
    .remedy("not repaired (rewriting would lose the text): export, correct and re-import them")
    .count(rows)
    .review()
    .with("columns", columns)
}
