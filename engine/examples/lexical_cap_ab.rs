//! Issue 16's lexical arm: the two SQL shapes of the lexical cap's "newest `cap` matches in
//! bm25 order" step, timed against each other in one run on the bundled SQLite. `two-step`
//! is what the arm did before: find the cut (`ORDER BY rowid DESC LIMIT 1 OFFSET cap`), then
//! rank above it with bm25 (a second evaluation of the FTS expression). `one-pass` is what
//! it does now (`arms::lexical`, `Table::newest_ranked`): the newest `cap + 1` matches with
//! their bm25, sorted here. Both are run on every query's AND and OR expression and must
//! return the same rows and scores.
//!
//! Data: the side-by-side driver's corpus and queries, written as JSON by its own functions:
//!
//!     target/side_by_side/venv/bin/python -c 'import importlib.util, json; \
//!       s = importlib.util.spec_from_file_location("d", "scale/side_by_side/driver.py"); \
//!       d = importlib.util.module_from_spec(s); s.loader.exec_module(d); \
//!       json.dump({"texts": d.corpus(5882, 42), "queries": d.queries(200, 42)}, \
//!                 open("target/lexical_ab.json", "w"))'
//!     cargo run --release -p cpersona-engine --example lexical_cap_ab -- target/lexical_ab.json
#![allow(clippy::print_stdout)]

use std::time::Instant;

use rusqlite::{Connection, params};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;
type Rows = Vec<(i64, f64)>;

const CAP: i64 = 100;
const DEPTH: i64 = 50;
const FROM: &str = "FROM memories_fts f JOIN memories t ON f.rowid = t.id \
                    WHERE memories_fts MATCH ?1 AND t.agent_id = 'a'";

/// Words of three characters or more (the trigram index's least), lower-cased, once each.
fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        let word = word
            .trim_matches(|c| c == '.' || c == ',' || c == '?')
            .to_lowercase();
        if word.chars().count() >= 3 && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

fn rows(c: &Connection, sql: &str, p: impl rusqlite::Params) -> BoxResult<Rows> {
    let mut stmt = c.prepare_cached(sql)?;
    let out = stmt
        .query_map(p, |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(out)
}

fn two_step(c: &Connection, expr: &str) -> BoxResult<Rows> {
    let cut: Option<i64> = c
        .prepare_cached(&format!(
            "SELECT f.rowid {FROM} ORDER BY f.rowid DESC LIMIT 1 OFFSET {CAP}"
        ))?
        .query_map(params![expr], |r| r.get(0))?
        .next()
        .transpose()?;
    match cut {
        Some(beyond) => rows(
            c,
            &format!(
                "SELECT t.id, bm25(memories_fts) {FROM} AND f.rowid >= ?2 \
                 ORDER BY rank, t.id LIMIT {DEPTH}"
            ),
            params![expr, beyond + 1],
        ),
        None => rows(
            c,
            &format!("SELECT t.id, bm25(memories_fts) {FROM} ORDER BY rank, t.id LIMIT {DEPTH}"),
            params![expr],
        ),
    }
}

fn one_pass(c: &Connection, expr: &str) -> BoxResult<Rows> {
    let mut out = rows(
        c,
        &format!(
            "SELECT t.id, bm25(memories_fts) {FROM} ORDER BY f.rowid DESC LIMIT {}",
            CAP + 1
        ),
        params![expr],
    )?;
    if out.len() > CAP as usize {
        out.pop();
    }
    out.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    out.truncate(DEPTH as usize);
    Ok(out)
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len().saturating_sub(1)) as f64 * q) as usize]
}

fn main() -> BoxResult<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: lexical_cap_ab DATA.json (see the module doc)")?;
    let data: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let strings = |key: &str| -> Vec<String> {
        data[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let c = Connection::open_in_memory()?;
    c.execute_batch(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, agent_id TEXT, content TEXT);
         CREATE VIRTUAL TABLE memories_fts USING fts5(content, content = memories,
             content_rowid = id, tokenize = 'trigram');
         CREATE TRIGGER ai AFTER INSERT ON memories BEGIN
             INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content); END;",
    )?;
    let texts = strings("texts");
    for text in &texts {
        c.execute(
            "INSERT INTO memories(agent_id, content) VALUES ('a', ?1)",
            params![text],
        )?;
    }
    println!("SQLite {}, {} rows", rusqlite::version(), texts.len());
    for joiner in [" AND ", " OR "] {
        let exprs: Vec<String> = strings("queries")
            .iter()
            .map(|q| {
                terms(q)
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(joiner)
            })
            .collect();
        let mut same = 0;
        for e in &exprs {
            same += usize::from(two_step(&c, e)? == one_pass(&c, e)?);
        }
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            for e in &exprs {
                let started = Instant::now();
                two_step(&c, e)?;
                let between = Instant::now();
                one_pass(&c, e)?;
                before.push(between.duration_since(started).as_secs_f64() * 1e3);
                after.push(between.elapsed().as_secs_f64() * 1e3);
            }
        }
        before.sort_by(f64::total_cmp);
        after.sort_by(f64::total_cmp);
        println!(
            "{}: identical {same}/{}; two-step p50 {:.3} p95 {:.3} | one-pass p50 {:.3} p95 {:.3} ms",
            joiner.trim(),
            exprs.len(),
            pct(&before, 0.5),
            pct(&before, 0.95),
            pct(&after, 0.5),
            pct(&after, 0.95)
        );
    }
    Ok(())
}
