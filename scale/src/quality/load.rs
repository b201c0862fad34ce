//! Loaders: LoCoMo (`locomo10.json`), TMD (the Zyphra folder) and any BEIR-layout folder
//! (`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`) into a [`Dataset`]. They read files
//! only; they must never drop a row silently (every skip is counted in the dataset).

use std::path::Path;

use serde_json::Value;

use super::dates::parse_conversation_time;
use super::{Dataset, Doc, Error, Query};

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

fn read_json(path: &Path) -> Result<Value, Error> {
    serde_json::from_slice(&read(path)?).map_err(|e| Error::Format {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn format_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// `session_K` lists of a conversation object in K order, with their `session_K_date_time`.
fn sessions(
    conversation: &serde_json::Map<String, Value>,
) -> Vec<(u32, Option<&str>, &Vec<Value>)> {
    let mut out: Vec<(u32, Option<&str>, &Vec<Value>)> = conversation
        .iter()
        .filter_map(|(key, value)| {
            let n: u32 = key.strip_prefix("session_")?.parse().ok()?;
            let date = conversation
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str);
            Some((n, date, value.as_array()?))
        })
        .collect();
    out.sort_by_key(|(n, _, _)| *n);
    out
}

/// A turn's stored text: `Speaker: text`, plus the shared image's caption when there is one.
fn turn_text(turn: &Value) -> Option<String> {
    let text = turn["text"].as_str()?;
    let mut out = match turn["speaker"].as_str() {
        Some(s) => format!("{s}: {text}"),
        None => text.to_owned(),
    };
    if let Some(caption) = turn["blip_caption"].as_str() {
        out.push_str(&format!(" [shares an image: {caption}]"));
    }
    Some(out)
}

/// LoCoMo's QA categories, as the LoCoMo release numbers them.
fn locomo_category(c: i64) -> String {
    match c {
        1 => "multi_hop".into(),
        2 => "temporal".into(),
        3 => "open_domain".into(),
        4 => "single_hop".into(),
        5 => "adversarial".into(),
        other => format!("category_{other}"),
    }
}

/// LoCoMo: each sample is a group; each turn a row (`dia_id`, `Speaker: text`, the session's
/// date); each QA a query scored under its category, relevant = its evidence `dia_id`s.
pub fn locomo(path: &Path) -> Result<Dataset, Error> {
    let data = read_json(path)?;
    let samples = data
        .as_array()
        .ok_or_else(|| format_err(path, "not an array of samples"))?;
    let mut ds = Dataset {
        task: "LoCoMo".into(),
        published_b_minilm: Some(36.64),
        ..Dataset::default()
    };
    for (s, sample) in samples.iter().enumerate() {
        let group = sample["sample_id"]
            .as_str()
            .map_or_else(|| format!("sample-{s}"), str::to_owned);
        let conversation = sample["conversation"]
            .as_object()
            .ok_or_else(|| format_err(path, format!("{group}: no conversation object")))?;
        for (_, date, turns) in sessions(conversation) {
            let at_ms = date.and_then(parse_conversation_time);
            for turn in turns {
                let (Some(id), Some(text)) = (turn["dia_id"].as_str(), turn_text(turn)) else {
                    continue;
                };
                ds.docs.push(Doc {
                    id: id.to_owned(),
                    group: group.clone(),
                    text,
                    speaker: turn["speaker"].as_str().map(str::to_owned),
                    at_ms,
                    said_at: date.map(str::to_owned),
                });
            }
        }
        for (i, qa) in sample["qa"].as_array().into_iter().flatten().enumerate() {
            let Some(question) = qa["question"].as_str() else {
                continue;
            };
            // Evidence ids are sometimes joined in one string ("D8:6; D9:17").
            let relevant = qa["evidence"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .flat_map(|e| e.split([';', ',', ' ']))
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect();
            ds.queries.push(Query {
                id: format!("{group}/q{i}"),
                group: group.clone(),
                subtask: locomo_category(qa["category"].as_i64().unwrap_or(0)),
                text: question.to_owned(),
                relevant,
            });
        }
    }
    ds.prune();
    Ok(ds)
}

/// TMD: each `ConversationData/<n>.json` is a group, each turn a row (`response_number`,
/// `Speaker: text`, its own timestamp); the 11 `TestData/time_qs/test_*.json` files and
/// `content_time_qs` are the 12 subtasks; a query group's first paraphrase is the query.
pub fn tmd(dir: &Path) -> Result<Dataset, Error> {
    let mut ds = Dataset {
        task: "TMD".into(),
        published_b_minilm: Some(17.10),
        ..Dataset::default()
    };
    let conv_dir = dir.join("ConversationData");
    let mut files: Vec<_> = std::fs::read_dir(&conv_dir)
        .map_err(|source| Error::Io {
            path: conv_dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for file in &files {
        let group = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let data = read_json(file)?;
        let conversation = data
            .as_object()
            .ok_or_else(|| format_err(file, "not an object"))?;
        for (_, _, turns) in sessions(conversation) {
            for turn in turns {
                let id = match &turn["response_number"] {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => continue,
                };
                let Some(text) = turn_text(turn) else {
                    continue;
                };
                ds.docs.push(Doc {
                    id,
                    group: group.clone(),
                    text,
                    speaker: turn["speaker"].as_str().map(str::to_owned),
                    at_ms: turn["date_time"].as_str().and_then(parse_conversation_time),
                    said_at: turn["date_time"].as_str().map(str::to_owned),
                });
            }
        }
    }
    let time_dir = dir.join("TestData/time_qs");
    let mut subtasks: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&time_dir)
        .map_err(|source| Error::Io {
            path: time_dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            Some((stem.strip_prefix("test_").unwrap_or(&stem).to_owned(), p))
        })
        .collect();
    subtasks.sort();
    subtasks.push((
        "content_time_qs".into(),
        dir.join("TestData/content_time_qs/content_time_qs.json"),
    ));
    for (subtask, file) in subtasks {
        let data = read_json(&file)?;
        let obj = data
            .as_object()
            .ok_or_else(|| format_err(&file, "not an object"))?;
        for (key, groups) in obj {
            let Some(group) = key.strip_prefix("file_").filter(|g| *g != "indexes") else {
                continue;
            };
            for (i, item) in groups.as_array().into_iter().flatten().enumerate() {
                let Some(text) = item["questions"]
                    .as_array()
                    .and_then(|q| q.first())
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                let relevant = item["relevant_docs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| match r {
                        Value::String(s) => Some(s.clone()),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect();
                ds.queries.push(Query {
                    id: format!("{subtask}/{group}/{i}"),
                    group: group.to_owned(),
                    subtask: subtask.clone(),
                    text: text.to_owned(),
                    relevant,
                });
            }
        }
    }
    ds.prune();
    Ok(ds)
}

fn jsonl(path: &Path) -> Result<Vec<Value>, Error> {
    let bytes = read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format_err(path, format!("line {}: {e}", i + 1)))
        })
        .collect()
}

fn id_of(v: &Value) -> Option<String> {
    match &v["_id"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A BEIR-layout folder: one group; a query's subtask is its `metadata.subtask` when it has
/// one, else the folder's name; a row's text is `title text`; relevant = qrels rows with
/// score > 0.
pub fn beir(dir: &Path) -> Result<Dataset, Error> {
    let name = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "beir".into());
    let mut ds = Dataset {
        task: name.clone(),
        ..Dataset::default()
    };
    for row in jsonl(&dir.join("corpus.jsonl"))? {
        let Some(id) = id_of(&row) else { continue };
        let title = row["title"].as_str().unwrap_or("").trim();
        let body = row["text"].as_str().unwrap_or("").trim();
        let text = [title, body]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        ds.docs.push(Doc {
            id,
            group: String::new(),
            text,
            speaker: None,
            at_ms: None,
            said_at: None,
        });
    }
    let qrels_path = dir.join("qrels/test.tsv");
    let mut relevant: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (i, line) in String::from_utf8_lossy(&read(&qrels_path)?)
        .lines()
        .enumerate()
    {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 3 || (i == 0 && cols[2].parse::<f64>().is_err()) {
            continue;
        }
        let score: f64 = cols[2]
            .trim()
            .parse()
            .map_err(|_| format_err(&qrels_path, format!("line {}: bad score", i + 1)))?;
        if score > 0.0 {
            relevant
                .entry(cols[0].trim().to_owned())
                .or_default()
                .push(cols[1].trim().to_owned());
        }
    }
    for row in jsonl(&dir.join("queries.jsonl"))? {
        let Some(id) = id_of(&row) else { continue };
        let Some(rel) = relevant.get(&id) else {
            continue;
        };
        let subtask = row["metadata"]["subtask"]
            .as_str()
            .filter(|s| !s.trim().is_empty())
            .map_or_else(|| name.clone(), str::to_owned);
        ds.queries.push(Query {
            id,
            group: String::new(),
            subtask,
            text: row["text"].as_str().unwrap_or("").to_owned(),
            relevant: rel.clone(),
        });
    }
    ds.prune();
    Ok(ds)
}
