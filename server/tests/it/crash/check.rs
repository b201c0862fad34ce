//! The checks the crash harness runs after each kill: the rows against the acknowledged
//! writes, the op in flight whole or absent, `PRAGMA integrity_check`, FTS5's own checks and a
//! MATCH per row, the change log's last word per row, and the generation file. It only reads
//! (FTS5's integrity-check needs a writable handle but writes nothing) and never panics.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::harness::{AGENT, command};

/// One write as the harness sent it.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Store { content: String },
    Update { id: i64, old: String, new: String },
    Delete { id: i64, content: String },
    Import { contents: Vec<String> },
}

/// The ops thread's account: acknowledged ops in order, and the op in flight at the kill.
pub(crate) struct Account {
    pub(crate) acked: Vec<(Op, Option<i64>)>,
    pub(crate) in_flight: Option<Op>,
    pub(crate) refused: Vec<String>,
}

/// The unique token a content starts with.
pub(crate) fn token_of(content: &str) -> &str {
    content.split(' ').next().unwrap_or("")
}

/// Checks a store at rest against the rows it must hold (no write in flight).
pub(crate) fn check_store(db: &Path, model: &BTreeMap<i64, String>) -> Result<(), String> {
    let account = Account {
        acked: Vec::new(),
        in_flight: None,
        refused: Vec::new(),
    };
    let mut model = model.clone();
    verify(db, &mut model, &account).map(|_| ())
}

/// The restarted binary opens the file and its own check passes.
pub(crate) fn restart_check(bin: &Path, db: &Path) -> Result<(), String> {
    let out = command(bin, db)
        .arg("check")
        .output()
        .map_err(|e| format!("cannot run check: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`cpersona check` after restart failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Folds the acknowledged ops into `model`, settles the op in flight from what the file holds
/// (it must be whole or absent), then compares every invariant. Returns whether the op in
/// flight had landed.
pub(crate) fn verify(
    db: &Path,
    model: &mut BTreeMap<i64, String>,
    account: &Account,
) -> Result<bool, String> {
    for (op, id) in &account.acked {
        match op {
            Op::Store { content } => {
                let id = id.ok_or("an acknowledged store has no id")?;
                model.insert(id, content.clone());
            }
            Op::Update { id, new, .. } => {
                model.insert(*id, new.clone());
            }
            Op::Delete { id, .. } => {
                model.remove(id);
            }
            Op::Import { .. } => {}
        }
    }
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| format!("cannot open the store: {e}"))?;
    let rows = memory_rows(&conn)?;
    let by_content: HashMap<&str, i64> = rows.iter().map(|(id, c)| (c.as_str(), *id)).collect();
    // Imports are acknowledged as a whole: their rows join the model by content.
    for (op, _) in &account.acked {
        if let Op::Import { contents } = op {
            for content in contents {
                let id = by_content.get(content.as_str()).ok_or_else(|| {
                    format!(
                        "an acknowledged import row is missing: {}",
                        token_of(content)
                    )
                })?;
                model.insert(*id, content.clone());
            }
        }
    }
    let mut landed = false;
    match &account.in_flight {
        None => {}
        Some(Op::Store { content }) => {
            if let Some(id) = by_content.get(content.as_str()) {
                model.insert(*id, content.clone());
                landed = true;
            }
        }
        Some(Op::Update { id, old, new }) => match rows.get(id) {
            Some(c) if c == new => {
                model.insert(*id, new.clone());
                landed = true;
            }
            Some(c) if c == old => {}
            Some(c) => {
                return Err(format!(
                    "update in flight left mem:{id} neither old nor new: {}",
                    token_of(c)
                ));
            }
            None => return Err(format!("update in flight lost mem:{id}")),
        },
        Some(Op::Delete { id, content }) => match rows.get(id) {
            None => {
                model.remove(id);
                landed = true;
            }
            Some(c) if c == content => {}
            Some(c) => {
                return Err(format!(
                    "delete in flight changed mem:{id}: {}",
                    token_of(c)
                ));
            }
        },
        Some(Op::Import { contents }) => {
            // Batches commit in file order: what landed is whole rows forming a prefix.
            let present: Vec<bool> = contents
                .iter()
                .map(|c| by_content.contains_key(c.as_str()))
                .collect();
            if present.windows(2).any(|w| !w[0] && w[1]) {
                return Err(format!(
                    "an import in flight landed out of order: {present:?}"
                ));
            }
            for content in contents {
                if let Some(id) = by_content.get(content.as_str()) {
                    model.insert(*id, content.clone());
                    landed = true;
                }
            }
        }
    }
    if rows != *model {
        let missing: Vec<i64> = model
            .keys()
            .filter(|id| !rows.contains_key(id))
            .copied()
            .collect();
        let extra: Vec<i64> = rows
            .keys()
            .filter(|id| !model.contains_key(id))
            .copied()
            .collect();
        let changed: Vec<i64> = model
            .iter()
            .filter(|(id, c)| rows.get(id).is_some_and(|r| r != *c))
            .map(|(id, _)| *id)
            .collect();
        return Err(format!(
            "rows differ from the acknowledged writes: missing {missing:?}, unexpected {extra:?}, changed {changed:?}"
        ));
    }
    check_sqlite(&conn, model)?;
    Ok(landed)
}

fn memory_rows(conn: &Connection) -> Result<BTreeMap<i64, String>, String> {
    let sql_err = |e: rusqlite::Error| format!("reading rows: {e}");
    let mut stmt = conn
        .prepare("SELECT id, content FROM memories WHERE agent_id = ?1")
        .map_err(sql_err)?;
    let rows = stmt
        .query_map([AGENT], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(sql_err)?
        .collect::<Result<BTreeMap<_, _>, _>>()
        .map_err(sql_err)?;
    Ok(rows)
}

/// integrity_check, FTS5's own checks, a MATCH per row, and the change log's last word.
fn check_sqlite(conn: &Connection, model: &BTreeMap<i64, String>) -> Result<(), String> {
    let integrity: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| format!("integrity_check: {e}"))?;
    if integrity != ["ok"] {
        return Err(format!("integrity_check: {integrity:?}"));
    }
    // FTS5 checks write nothing but need a writable handle.
    let rw = Connection::open(conn.path().unwrap_or_default())
        .map_err(|e| format!("cannot reopen: {e}"))?;
    for sql in [
        "INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')",
        "INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)",
    ] {
        rw.execute(sql, [])
            .map_err(|e| format!("FTS5 integrity-check ({sql}): {e}"))?;
    }
    drop(rw);
    let fts_count: i64 = conn
        .query_row(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
            ["\"note:\""],
            |r| r.get(0),
        )
        .map_err(|e| format!("FTS count: {e}"))?;
    let note_rows = model.values().filter(|c| c.contains("note:")).count() as i64;
    if fts_count != note_rows {
        return Err(format!(
            "FTS5 finds {fts_count} rows, the table holds {note_rows}"
        ));
    }
    let mut by_token = conn
        .prepare("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1")
        .map_err(|e| format!("FTS prepare: {e}"))?;
    for (id, content) in model {
        let phrase = format!("\"{}\"", token_of(content));
        let hits: Vec<i64> = by_token
            .query_map([&phrase], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| format!("FTS match: {e}"))?;
        if hits != [*id] {
            return Err(format!(
                "FTS5 finds {hits:?} for mem:{id}'s token {}",
                token_of(content)
            ));
        }
    }
    let mut last_ops = conn
        .prepare(
            "SELECT row_id, op FROM change_log c WHERE table_name = 'memories' AND agent_id = ?1 \
             AND seq = (SELECT max(seq) FROM change_log d \
                        WHERE d.table_name = 'memories' AND d.row_id = c.row_id)",
        )
        .map_err(|e| format!("change_log: {e}"))?;
    let last: BTreeMap<i64, String> = last_ops
        .query_map([AGENT], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .map_err(|e| format!("change_log: {e}"))?;
    for id in model.keys() {
        match last.get(id).map(String::as_str) {
            Some("insert" | "update") => {}
            other => {
                return Err(format!(
                    "change log's last op for live mem:{id} is {other:?}"
                ));
            }
        }
    }
    for (id, op) in &last {
        if op != "delete" && !model.contains_key(id) {
            return Err(format!(
                "change log says mem:{id} lives ({op}) but the row is gone"
            ));
        }
    }
    Ok(())
}

/// The generation file after a kill: absent, the old bytes, or a file that opens and
/// validates. Returns whether a file was validated.
pub(crate) fn check_generation(path: &Path, old: Option<&[u8]>) -> Result<bool, String> {
    let Ok(bytes) = std::fs::read(path) else {
        return if old.is_some() {
            Err("the generation file vanished".into())
        } else {
            Ok(false)
        };
    };
    if old == Some(bytes.as_slice()) {
        return Ok(false);
    }
    cpersona_index::Generation::open(path)
        .map(|_| true)
        .map_err(|e| format!("a partial generation file is in place: {e}"))
}
