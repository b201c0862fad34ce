//! The pre-registered Cued Recall measurement (issue 6 "Measured", design §9) on TMD
//! (`../shared/data/tmd`, see its README): each conversation turn is stored as one memory
//! with its own time, one agent per log, the clock set to the log's last turn; each question
//! (first paraphrase of `test_dates` and `test_rel_day`) is recalled in five arms:
//! no cue, the cue extracted from the question text and the log's date alone, as many more
//! rows without a cue (limit + the cue's 3 seats), a moved (wrong) cue 60 days earlier, and a
//! partly right cue (the right day inside a 3-day period). Reports NDCG over the returned
//! rows, MRR, the count of answers with any evidence, rows returned and latency per arm,
//! for each subtask (`test_dates`, `test_rel_day`) and both together.
//!
//! Then the **unattributed rate**: every question the extracted-cue arm answers with no
//! evidence is recalled again with a trace, and each of its relevant rows is attributed by
//! `cpersona_engine::taxonomy::attribute_with` (one-change replays, the store's row facts,
//! the envelope fetch re-run against the store, and as the cue the caller meant the UTC day
//! of the relevant row itself: the harness knows the question's true date); the counts per
//! failure code (with how many of its rows lie inside the loop's final envelope) and the
//! UNATTRIBUTED share are printed.
//!
//! Run: `cargo run --example tmd_cue -- [LOGS]` from the workspace root (LOGS = how many
//! conversation logs, default 3; 12 is all). Uses the hashed-words embedder (fast, no
//! model); questions with no extractable cue are counted and skipped in every arm.

#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use cpersona_engine::embed::hash::HashEmbedder;
use cpersona_engine::refs::Ref;
use cpersona_engine::taxonomy::{LoopInputs, attribute_with};
use cpersona_engine::time::{format_ms, parse_iso8601_ms};
use cpersona_engine::{Engine, EngineConfig, RecallQuery, StoreId, StoreRequest, TimeCue};
use cpersona_scale::quality::dates::{MONTHS, parse_conversation_time};
use serde_json::{Value, json};

const DAY_MS: i64 = 86_400_000;
const LIMIT: usize = 10;
const ROOT: &str = "../shared/data/tmd";

type Failure = Box<dyn std::error::Error>;

/// The cue a question states, read from its text and the log's "now": `N days|weeks|months
/// ago`, or a month name followed by a day number (the latest such day not after now).
fn extract(question: &str, now: i64) -> Option<(i64, i64)> {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(3) {
        if pair[2] == "ago"
            && let Ok(n) = pair[0].parse::<i64>()
        {
            let width = match pair[1] {
                "day" | "days" => DAY_MS,
                "week" | "weeks" => 7 * DAY_MS,
                "month" | "months" => 30 * DAY_MS,
                _ => continue,
            };
            let centre = now - width * n;
            return Some((centre - width / 2, (centre + width / 2).min(now)));
        }
    }
    for pair in words.windows(2) {
        if let Some(m) = MONTHS.iter().position(|m| *m == pair[0]) {
            let digits: String = pair[1].chars().take_while(char::is_ascii_digit).collect();
            let Ok(day) = digits.parse::<u32>() else {
                continue;
            };
            let year: i32 = format_ms(now)[..4].parse().ok()?;
            for y in [year, year - 1] {
                let start = parse_iso8601_ms(&format!("{y:04}-{:02}-{day:02}", m + 1)).ok()?;
                if start <= now {
                    return Some((start, start + DAY_MS));
                }
            }
        }
    }
    None
}

fn cue(period: (i64, i64)) -> Option<TimeCue> {
    TimeCue::from_json(
        &json!({"after": format_ms(period.0), "before": format_ms(period.1),
                               "confidence": "sure"}),
    )
    .ok()
}

#[derive(Default, Clone, Copy)]
struct Score {
    ndcg: f64,
    mrr: f64,
    any: usize,
    rows: usize,
    ms: f64,
}

fn score(engine: &Engine, q: &RecallQuery, relevant: &HashSet<String>) -> Result<Score, Failure> {
    let started = Instant::now();
    let r = engine.recall(q)?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let best_first: Vec<bool> = r
        .response
        .messages
        .iter()
        .rev()
        .map(|m| m.id.as_ref().is_some_and(|id| relevant.contains(id)))
        .collect();
    let dcg: f64 = best_first
        .iter()
        .enumerate()
        .filter(|(_, hit)| **hit)
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..relevant.len().min(best_first.len()))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let first = best_first.iter().position(|h| *h);
    Ok(Score {
        ndcg: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        mrr: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        any: usize::from(first.is_some()),
        rows: best_first.len(),
        ms,
    })
}

fn main() -> Result<(), Failure> {
    let logs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("tmd_cue_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let engine = Engine::open(
        EngineConfig::new(dir.join("store.db")),
        Arc::new(HashEmbedder::new()),
    )?;
    let arms = [
        "no cue",
        "extracted cue",
        "more rows, no cue",
        "wrong cue (-60 d)",
        "partly right (3 d)",
    ];
    let sets = ["test_dates", "test_rel_day"];
    let mut totals = [[Score::default(); 5]; 2];
    let mut asked = [0usize; 2];
    let mut skipped = 0usize;
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    let (mut misses, mut attributed_rows) = (0usize, 0usize);
    // Rows per code whose time lies inside the loop's final envelope.
    let mut in_envelope: BTreeMap<String, usize> = BTreeMap::new();
    let files = [26, 28, 31, 41, 42, 43, 44, 45, 46, 47, 48, 49];
    for n in files.iter().take(logs) {
        let log: Value = serde_json::from_str(&std::fs::read_to_string(format!(
            "{ROOT}/ConversationData/{n}.json"
        ))?)?;
        let agent = format!("log{n}");
        let mut now = i64::MIN;
        let mut by_msg: HashMap<String, Ref> = HashMap::new();
        for k in 1.. {
            let Some(turns) = log.get(format!("session_{k}")).and_then(Value::as_array) else {
                break;
            };
            for t in turns {
                let (Some(text), Some(at), Some(num)) = (
                    t["text"].as_str(),
                    t["date_time"].as_str().and_then(parse_conversation_time),
                    t["response_number"].as_str(),
                ) else {
                    continue;
                };
                now = now.max(at);
                let stored = engine.store(&StoreRequest {
                    agent_id: agent.clone(),
                    content: format!("{}: {text}", t["speaker"].as_str().unwrap_or("")),
                    msg_id: num.to_owned(),
                    timestamp: Some(format_ms(at)),
                    ..StoreRequest::default()
                })?;
                if let Some(StoreId::Row(id)) = stored.id {
                    by_msg.insert(num.to_owned(), Ref::mem(id));
                }
            }
        }
        for (si, set) in sets.into_iter().enumerate() {
            let qs: Value = serde_json::from_str(&std::fs::read_to_string(format!(
                "{ROOT}/TestData/time_qs/{set}.json"
            ))?)?;
            for group in qs[format!("file_{n}")].as_array().into_iter().flatten() {
                let Some(question) = group["questions"][0].as_str() else {
                    continue;
                };
                let relevant: HashSet<String> = group["relevant_docs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|d| {
                        d.as_u64()
                            .map(|d| d.to_string())
                            .or(d.as_str().map(str::to_owned))
                    })
                    .collect();
                let Some(period) = extract(question, now) else {
                    skipped += 1;
                    continue;
                };
                asked[si] += 1;
                let base = RecallQuery {
                    agent_id: agent.clone(),
                    query: question.to_owned(),
                    limit: LIMIT,
                    now_ms: Some(now),
                    ..RecallQuery::default()
                };
                let moved = (period.0 - 60 * DAY_MS, period.1 - 60 * DAY_MS);
                let partly = (period.0 - DAY_MS, period.1 + DAY_MS);
                let queries = [
                    base.clone(),
                    RecallQuery {
                        time_cue: cue(period),
                        ..base.clone()
                    },
                    RecallQuery {
                        limit: LIMIT + 3,
                        ..base.clone()
                    },
                    RecallQuery {
                        time_cue: cue(moved),
                        ..base.clone()
                    },
                    RecallQuery {
                        time_cue: cue(partly),
                        ..base.clone()
                    },
                ];
                let mut cued_any = true;
                for (arm, (total, q)) in totals[si].iter_mut().zip(&queries).enumerate() {
                    let s = score(&engine, q, &relevant)?;
                    total.ndcg += s.ndcg;
                    total.mrr += s.mrr;
                    total.any += s.any;
                    total.rows += s.rows;
                    total.ms += s.ms;
                    if arm == 1 {
                        cued_any = s.any > 0;
                    }
                }
                if !cued_any {
                    misses += 1;
                    let traced = engine.recall(&RecallQuery {
                        trace: true,
                        ..queries[1].clone()
                    })?;
                    let Some(trace) = traced.trace() else {
                        continue;
                    };
                    for expected in relevant.iter().filter_map(|m| by_msg.get(m)) {
                        let facts = engine.row_facts(&agent, None, None, *expected)?;
                        let refetch = |p| engine.refetch_envelope(&trace, p);
                        let inputs = LoopInputs {
                            intended: facts.at_ms.and_then(|at| {
                                let day = &format_ms(at)[..10];
                                TimeCue::from_json(&json!({"after": day, "before": day,
                                                           "confidence": "sure"}))
                                .ok()
                            }),
                            refetch: Some(&refetch),
                        };
                        let att = attribute_with(&trace, *expected, Some(facts), &inputs)?;
                        let code = att.code.map_or_else(
                            || "RETURNED".to_owned(),
                            |c| {
                                serde_json::to_value(c).map_or(String::new(), |v| {
                                    v.as_str().unwrap_or_default().to_owned()
                                })
                            },
                        );
                        let envelope = trace.cue.as_ref().and_then(|c| c.prior.cue);
                        if let (Some(cue), Some(at)) = (envelope, facts.at_ms)
                            && cue.envelope.contains(at)
                        {
                            *in_envelope.entry(code.clone()).or_default() += 1;
                        }
                        *codes.entry(code).or_default() += 1;
                        attributed_rows += 1;
                    }
                }
            }
        }
    }
    let all = [0, 1].map(|si| totals[si]);
    let both: [Score; 5] = std::array::from_fn(|arm| {
        let (a, b) = (all[0][arm], all[1][arm]);
        Score {
            ndcg: a.ndcg + b.ndcg,
            mrr: a.mrr + b.mrr,
            any: a.any + b.any,
            rows: a.rows + b.rows,
            ms: a.ms + b.ms,
        }
    });
    let total_asked = asked[0] + asked[1];
    println!(
        "TMD time cue, {logs} logs, {total_asked} questions ({skipped} without an extractable cue), limit {LIMIT}, hash embedder"
    );
    let tables = [
        (sets[0], asked[0], all[0]),
        (sets[1], asked[1], all[1]),
        ("both", total_asked, both),
    ];
    for (name, n, rows) in tables {
        println!("\n{name} ({n} questions)");
        println!(
            "{:<22} {:>7} {:>7} {:>5} {:>9} {:>8}",
            "arm", "NDCG", "MRR", "any", "rows/q", "ms/q"
        );
        let q = n.max(1) as f64;
        for (arm, t) in arms.iter().zip(rows) {
            println!(
                "{arm:<22} {:>7.3} {:>7.3} {:>5} {:>9.2} {:>8.2}",
                t.ndcg / q,
                t.mrr / q,
                t.any,
                t.rows as f64 / q,
                t.ms / q
            );
        }
    }
    println!(
        "\nattribution of the extracted-cue arm's misses: {misses} questions without evidence, \
         {attributed_rows} relevant rows attributed"
    );
    println!("{:<24} {:>5} {:>12}", "code", "rows", "in envelope");
    for (code, n) in &codes {
        let inside = in_envelope.get(code).copied().unwrap_or(0);
        println!("{code:<24} {n:>5} {inside:>12}");
    }
    let unattributed = codes.get("UNATTRIBUTED").copied().unwrap_or(0);
    println!(
        "UNATTRIBUTED share: {:.1}% ({unattributed}/{attributed_rows})",
        100.0 * unattributed as f64 / attributed_rows.max(1) as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
