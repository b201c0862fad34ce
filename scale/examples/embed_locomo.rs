//! Embeds the LoCoMo conversation turns (rows) and the first questions (queries) with the
//! builtin MiniLM embedder and writes them as raw little-endian f32, the input the search
//! bench takes through `CPERSONA_BENCH_EMBEDDINGS`: real embeddings of a public corpus.
//!
//! Run: `cargo run -p cpersona-scale --example embed_locomo --profile=dev -- MODEL_DIR
//! ../shared/data/locomo/locomo10.json target/locomo-minilm.f32 [N_QUERIES=50]`.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::path::Path;

use cpersona_engine::embed::Embedder;
use cpersona_engine::embed::builtin::BuiltinEmbedder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: embed_locomo MODEL_DIR LOCOMO_JSON OUT.f32 [N_QUERIES]".into());
    }
    let n_queries: usize = args.get(4).map_or(Ok(50), |s| s.parse())?;
    let embedder = BuiltinEmbedder::load(Path::new(&args[1]))?;
    let data: serde_json::Value = serde_json::from_slice(&std::fs::read(&args[2])?)?;
    let mut turns: Vec<String> = Vec::new();
    let mut questions: Vec<String> = Vec::new();
    for sample in data.as_array().ok_or("locomo: not an array")? {
        if let Some(conversation) = sample["conversation"].as_object() {
            let mut sessions: Vec<(u32, &Vec<serde_json::Value>)> = conversation
                .iter()
                .filter_map(|(key, value)| {
                    let n = key.strip_prefix("session_")?.parse().ok()?;
                    Some((n, value.as_array()?))
                })
                .collect();
            sessions.sort_by_key(|(n, _)| *n);
            for (_, session) in sessions {
                for turn in session {
                    if let Some(text) = turn["text"].as_str() {
                        turns.push(text.to_owned());
                    }
                }
            }
        }
        for qa in sample["qa"].as_array().into_iter().flatten() {
            if let Some(q) = qa["question"].as_str() {
                questions.push(q.to_owned());
            }
        }
    }
    questions.truncate(n_queries);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[3])?);
    let started = std::time::Instant::now();
    let all: Vec<&str> = turns
        .iter()
        .chain(questions.iter())
        .map(String::as_str)
        .collect();
    for chunk in all.chunks(256) {
        for vector in embedder.embed(chunk)? {
            for x in vector {
                out.write_all(&x.to_le_bytes())?;
            }
        }
    }
    out.flush()?;
    println!(
        "embedded {} turns + {} questions ({} dims) in {:.1} s -> {}",
        turns.len(),
        questions.len(),
        embedder.identity().dim,
        started.elapsed().as_secs_f64(),
        args[3]
    );
    Ok(())
}
