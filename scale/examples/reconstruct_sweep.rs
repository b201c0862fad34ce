//! The count × budget sweep of design §9 for `reconstruct` on LoCoMo: every conversation turn
//! stored as a row (`msg_id` = the turn's `dia_id`, `source` = the speaker, timestamp = the
//! session's date plus 20 s per turn, since LoCoMo dates sessions, not turns) and each
//! session's summary archived as an episode spanning its turns, so bundling actually occurs.
//! For counts 1, 3, 5, 10 and budgets 800 (one head quote), the default for that count and
//! twice that default it reports, per cell: evidence recall among the returned items' claims
//! and among the rows whose text is quoted (head or excerpt), quoted characters carried,
//! response bytes, the share of items with more than one claim, and latency p50/p95. A
//! second table runs each `mode` (none, lite, pro) as the mode sets count and budget: evidence
//! recall among the items' refs, `cl100k_base` tokens of the returned JSON, the share of calls
//! the mode's token cap cut, and latency.
//!
//! Run (every conversation and question unless limited):
//! `cargo run --example reconstruct_sweep -- [--embedder minilm|hash] [--model-dir DIR]
//! [--conversations N] [--questions N] [--data PATH]`. `--embedder minilm` loads the builtin
//! MiniLM from `--model-dir` (default: `CPERSONA_TEST_MODEL_DIR`, then
//! `target/test-deps/all-MiniLM-L6-v2`); `hash` (the default) needs nothing.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use comfy_table::Table;
use cpersona_engine::embed::{BuiltinEmbedder, Embedder, HashEmbedder};
use cpersona_engine::reconstruct::budget;
use cpersona_engine::time::format_ms;
use cpersona_engine::{
    ArchiveEpisodeRequest, Engine, EngineConfig, ReconstructConfig, ReconstructMode,
    ReconstructRequest, StoreId, StoreRequest,
};
use cpersona_scale::quality::dates::parse_conversation_time;
use serde_json::{Value, json};

/// Seconds between two turns of one session (LoCoMo dates sessions only).
const TURN_SECONDS: i64 = 20;

/// The time of a session's turn `i`: the session's start plus `i` × [`TURN_SECONDS`].
fn turn_time(start_ms: i64, turn: i64) -> String {
    format_ms(start_ms + turn * TURN_SECONDS * 1000)
}

struct Question {
    agent: String,
    text: String,
    evidence: BTreeSet<String>,
}

#[derive(Default)]
struct Cell {
    calls: usize,
    recall_claims: f64,
    recall_quoted: f64,
    quoted_chars: usize,
    bytes: usize,
    items: usize,
    multi: usize,
    latencies: Vec<f64>,
}

/// The command line.
struct Args {
    data: String,
    embedder: String,
    model_dir: Option<String>,
    conversations: usize,
    questions: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        data: "../shared/data/locomo/locomo10.json".into(),
        embedder: "hash".into(),
        model_dir: std::env::var("CPERSONA_TEST_MODEL_DIR").ok(),
        conversations: usize::MAX,
        questions: usize::MAX,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let count = |v: String| -> Result<usize, String> {
            if v == "all" {
                Ok(usize::MAX)
            } else {
                v.parse().map_err(|_| format!("{flag}: not a number: {v}"))
            }
        };
        match flag.as_str() {
            "--data" => args.data = value()?,
            "--embedder" => args.embedder = value()?,
            "--model-dir" => args.model_dir = Some(value()?),
            "--conversations" => args.conversations = count(value()?)?,
            "--questions" => args.questions = count(value()?)?,
            other => {
                return Err(format!(
                    "unknown argument {other}; usage: reconstruct_sweep [--embedder minilm|hash] \
                     [--model-dir DIR] [--conversations N|all] [--questions N|all] [--data PATH]"
                ));
            }
        }
    }
    if !matches!(args.embedder.as_str(), "minilm" | "hash") {
        return Err(format!(
            "--embedder must be minilm or hash, got {}",
            args.embedder
        ));
    }
    Ok(args)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let path = args.data.as_str();
    let per_conversation = args.questions;
    let conversations = args.conversations;
    let embedder: Arc<dyn Embedder> = if args.embedder == "minilm" {
        let dir = args
            .model_dir
            .clone()
            .unwrap_or_else(|| "target/test-deps/all-MiniLM-L6-v2".into());
        Arc::new(BuiltinEmbedder::load(Path::new(&dir))?)
    } else {
        Arc::new(HashEmbedder::new())
    };
    let dir = std::env::temp_dir().join(format!("reconstruct_sweep_{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = EngineConfig::new(dir.join("locomo.db"));
    let limits: ReconstructConfig = config.reconstruct;
    let engine = Engine::open(config, embedder.clone())?;

    let data: Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let mut dia_of: BTreeMap<String, String> = BTreeMap::new();
    let mut questions: Vec<Question> = Vec::new();
    let started = Instant::now();
    let mut rows = 0usize;
    for sample in data
        .as_array()
        .ok_or("locomo: not an array")?
        .iter()
        .take(conversations)
    {
        let agent = format!("locomo-{}", sample["sample_id"].as_str().unwrap_or("x"));
        let conversation = sample["conversation"]
            .as_object()
            .ok_or("no conversation")?;
        let mut sessions: Vec<(u32, &Vec<Value>)> = conversation
            .iter()
            .filter_map(|(key, value)| {
                let n = key.strip_prefix("session_")?.parse().ok()?;
                Some((n, value.as_array()?))
            })
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        for (n, turns) in sessions {
            let Some(start) = conversation
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str)
                .and_then(parse_conversation_time)
            else {
                continue;
            };
            for (i, turn) in turns.iter().enumerate() {
                let (Some(text), Some(dia)) = (turn["text"].as_str(), turn["dia_id"].as_str())
                else {
                    continue;
                };
                let out = engine.store(&StoreRequest {
                    agent_id: agent.clone(),
                    content: text.to_owned(),
                    msg_id: dia.to_owned(),
                    source: Some(
                        json!({"type": "User", "id": turn["speaker"], "name": turn["speaker"]}),
                    ),
                    timestamp: Some(turn_time(start, i as i64)),
                    ..StoreRequest::default()
                })?;
                if let Some(StoreId::Row(id)) = out.id {
                    dia_of.insert(format!("{agent}/mem:{id}"), dia.to_owned());
                    rows += 1;
                }
            }
            if let Some(summary) = sample["session_summary"]
                .get(format!("session_{n}_summary"))
                .and_then(Value::as_str)
            {
                let last = turns.len().saturating_sub(1) as i64;
                engine.archive_episode(&ArchiveEpisodeRequest {
                    agent_id: agent.clone(),
                    summary: summary.to_owned(),
                    history: vec![
                        json!({"timestamp": turn_time(start, 0)}),
                        json!({"timestamp": turn_time(start, last)}),
                    ],
                    ..ArchiveEpisodeRequest::default()
                })?;
            }
        }
        for qa in sample["qa"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|qa| qa["category"].as_i64() != Some(5))
            .take(per_conversation)
        {
            let evidence: BTreeSet<String> = qa["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect();
            if let (Some(text), false) = (qa["question"].as_str(), evidence.is_empty()) {
                questions.push(Question {
                    agent: agent.clone(),
                    text: text.to_owned(),
                    evidence,
                });
            }
        }
    }
    let stored_conversations = data.as_array().map_or(0, |a| a.len().min(conversations));
    println!(
        "stored {rows} turns of {stored_conversations} conversations in {:.1} s with {}; {} questions",
        started.elapsed().as_secs_f64(),
        embedder.identity().model_id,
        questions.len()
    );

    let counts = [1usize, 3, 5, 10];
    let mut table = Table::new();
    table.set_header(vec![
        "count",
        "budget",
        "evidence recall (claims)",
        "evidence recall (quoted)",
        "quoted chars",
        "response bytes",
        "items",
        "items >1 claim",
        "p50 ms",
        "p95 ms",
    ]);
    for &count in &counts {
        let default = budget::resolve(&limits, None, count.min(limits.max_count)).effective;
        let budgets = [
            ("800".to_owned(), Some(800)),
            (format!("default ({default})"), None),
            (format!("2x default ({})", 2 * default), Some(2 * default)),
        ];
        for (label, budget) in budgets {
            let mut cell = Cell::default();
            for q in &questions {
                let t = Instant::now();
                let result = engine.reconstruct(&ReconstructRequest {
                    agent_id: q.agent.clone(),
                    query: q.text.clone(),
                    count: Some(count),
                    budget,
                    ..ReconstructRequest::default()
                })?;
                cell.latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                let body = serde_json::to_value(&result.response)?;
                cell.bytes += body.to_string().len();
                let dia = |r: &Value| {
                    r.as_str()
                        .and_then(|r| dia_of.get(&format!("{}/{r}", q.agent)))
                        .cloned()
                };
                let mut claimed = BTreeSet::new();
                let mut quoted = BTreeSet::new();
                for item in body["items"].as_array().into_iter().flatten() {
                    let claims = item["claims"].as_array().map_or(0, Vec::len);
                    cell.items += 1;
                    cell.multi += usize::from(claims > 1);
                    for c in item["claims"].as_array().into_iter().flatten() {
                        claimed.extend(dia(&c["ref"]));
                    }
                    quoted.extend(dia(&item["head_ref"]));
                    cell.quoted_chars += item["content"].as_str().map_or(0, |s| s.chars().count());
                    for e in item["excerpts"].as_array().into_iter().flatten() {
                        quoted.extend(dia(&e["ref"]));
                        cell.quoted_chars += e["content"].as_str().map_or(0, |s| s.chars().count());
                    }
                }
                let found = |set: &BTreeSet<String>| {
                    q.evidence.intersection(set).count() as f64 / q.evidence.len() as f64
                };
                cell.recall_claims += found(&claimed);
                cell.recall_quoted += found(&quoted);
                cell.calls += 1;
            }
            let n = cell.calls.max(1) as f64;
            cell.latencies.sort_by(f64::total_cmp);
            table.add_row(vec![
                count.to_string(),
                label,
                format!("{:.3}", cell.recall_claims / n),
                format!("{:.3}", cell.recall_quoted / n),
                format!("{:.0}", cell.quoted_chars as f64 / n),
                format!("{:.0}", cell.bytes as f64 / n),
                format!("{:.2}", cell.items as f64 / n),
                format!("{:.3}", cell.multi as f64 / cell.items.max(1) as f64),
                format!("{:.1}", percentile(&cell.latencies, 0.50)),
                format!("{:.1}", percentile(&cell.latencies, 0.95)),
            ]);
        }
    }
    println!("{table}");
    println!("{}", modes_table(&engine, &questions, &dia_of)?);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The modes beside the default shape (count and budget as each mode sets them): evidence
/// recall among the items' refs (head and claims; a mode gives a lone head claim as the
/// item's `as_of`), the `cl100k_base` tokens of the returned JSON (`mode.used_tokens`), the
/// share of calls the token cap cut, and latency (token counting included).
fn modes_table(
    engine: &Engine,
    questions: &[Question],
    dia_of: &BTreeMap<String, String>,
) -> Result<Table, Box<dyn std::error::Error>> {
    let mut table = Table::new();
    table.set_header(vec![
        "mode",
        "evidence recall (items' refs)",
        "items",
        "tokens p50",
        "tokens max",
        "cut by the token cap",
        "p50 ms",
        "p95 ms",
    ]);
    for mode in [
        None,
        Some(ReconstructMode::Lite),
        Some(ReconstructMode::Pro),
    ] {
        let (mut recall, mut items, mut cut) = (0.0, 0usize, 0usize);
        let (mut tokens, mut latencies) = (Vec::new(), Vec::new());
        for q in questions {
            let t = Instant::now();
            let result = engine.reconstruct(&ReconstructRequest {
                agent_id: q.agent.clone(),
                query: q.text.clone(),
                mode,
                ..ReconstructRequest::default()
            })?;
            latencies.push(t.elapsed().as_secs_f64() * 1000.0);
            let report = result.mode.as_ref();
            tokens.push(report.and_then(|m| m.used_tokens).unwrap_or_else(|| {
                cpersona_engine::tokens::cl100k_tokens(&result.wire_body().to_string())
            }) as f64);
            cut += usize::from(report.is_some_and(|m| m.token_cap_cut.is_some()));
            let body = serde_json::to_value(&result.response)?;
            let dia = |r: &Value| {
                r.as_str()
                    .and_then(|r| dia_of.get(&format!("{}/{r}", q.agent)))
                    .cloned()
            };
            let mut held = BTreeSet::new();
            for item in body["items"].as_array().into_iter().flatten() {
                items += 1;
                held.extend(dia(&item["head_ref"]));
                for c in item["claims"].as_array().into_iter().flatten() {
                    held.extend(dia(&c["ref"]));
                }
            }
            recall += q.evidence.intersection(&held).count() as f64 / q.evidence.len() as f64;
        }
        let n = questions.len().max(1) as f64;
        latencies.sort_by(f64::total_cmp);
        tokens.sort_by(f64::total_cmp);
        table.add_row(vec![
            mode.map_or("none (count 10)", ReconstructMode::name)
                .to_owned(),
            format!("{:.3}", recall / n),
            format!("{:.2}", items as f64 / n),
            format!("{:.0}", percentile(&tokens, 0.50)),
            format!("{:.0}", tokens.last().copied().unwrap_or(0.0)),
            format!("{:.3}", cut as f64 / n),
            format!("{:.1}", percentile(&latencies, 0.50)),
            format!("{:.1}", percentile(&latencies, 0.95)),
        ]);
    }
    Ok(table)
}
