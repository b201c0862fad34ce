//! Retrieval quality, Track A (raw embedder, exact cosine) vs Track B (the same vectors through
//! `import_memories` + `Engine::recall`, full-ranking regime), on LoCoMo, TMD and any BEIR-layout
//! folder, with the hash embedder and the builtin MiniLM (when a model folder is set); NDCG@10,
//! Recall@5/@10 per task and subtask, deltas B − A and CPersona's published Track B beside.
//! Writes a table to stdout and `target/quality/quality.{json,txt}`; embeddings are cached in
//! `target/quality/cache/` keyed by model and text.
//!
//! Run: `CPERSONA_MODEL_DIR=target/test-deps/all-MiniLM-L6-v2 cargo run -p cpersona-scale
//! --example quality --profile=dev -- [--tasks locomo,tmd,beir:DIR] [--embedders hash,minilm]
//! [--max-queries N] [--groups N] [--data ../shared/data] [--lexical-cap N|off]`. `--groups N` keeps the first N
//! conversations of each task (0 = all), for a machine where embedding is slow.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cpersona_engine::embed::builtin::BuiltinEmbedder;
use cpersona_engine::embed::{Embedder, HashEmbedder};
use cpersona_scale::Pct;
use cpersona_scale::quality::cache::EmbeddingCache;
use cpersona_scale::quality::report::{self, TaskResult};
use cpersona_scale::quality::{Dataset, load, tracks};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

struct Args {
    tasks: Vec<String>,
    embedders: Vec<String>,
    max_queries: usize,
    groups: usize,
    data: PathBuf,
    /// Track B's lexical candidate cap (`--lexical-cap N|off`; default the engine's).
    lexical_cap: Option<usize>,
}

fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn model_dir() -> Option<PathBuf> {
    ["CPERSONA_MODEL_DIR", "CPERSONA_TEST_MODEL_DIR"]
        .iter()
        .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
        .map(PathBuf::from)
}

fn parse_args() -> BoxResult<Args> {
    let mut args = Args {
        tasks: vec!["locomo".into(), "tmd".into()],
        embedders: if model_dir().is_some() {
            vec!["hash".into(), "minilm".into()]
        } else {
            vec!["hash".into()]
        },
        max_queries: 0,
        groups: 0,
        data: workspace_root().join("../shared/data"),
        lexical_cap: cpersona_engine::recall::RecallConfig::default().lexical_cap,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--tasks" => args.tasks = value()?.split(',').map(str::to_owned).collect(),
            "--embedders" => args.embedders = value()?.split(',').map(str::to_owned).collect(),
            "--max-queries" => args.max_queries = value()?.parse()?,
            "--groups" => args.groups = value()?.parse()?,
            "--data" => args.data = PathBuf::from(value()?),
            "--lexical-cap" => {
                let v = value()?;
                args.lexical_cap = if v == "off" { None } else { Some(v.parse()?) };
            }
            // cargo may pass --bench when run as a bench; nothing else is expected.
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(args)
}

fn load_task(name: &str, data: &Path) -> BoxResult<Dataset> {
    if let Some(base) = name.strip_suffix("+dated") {
        let mut ds = load_task(base, data)?;
        ds.date_in_text();
        return Ok(ds);
    }
    Ok(match name {
        "locomo" => load::locomo(&data.join("locomo/locomo10.json"))?,
        "tmd" => load::tmd(&data.join("tmd"))?,
        other => match other.strip_prefix("beir:") {
            Some(dir) => load::beir(Path::new(dir))?,
            None => {
                return Err(format!(
                    "unknown task {other} (locomo, tmd, beir:DIR; any of them +dated)"
                )
                .into());
            }
        },
    })
}

fn embedder(name: &str) -> BoxResult<Arc<dyn Embedder>> {
    Ok(match name {
        "hash" => Arc::new(HashEmbedder::new()),
        "minilm" => {
            let dir = model_dir().ok_or("minilm needs CPERSONA_MODEL_DIR (the model folder)")?;
            Arc::new(BuiltinEmbedder::load(&dir)?)
        }
        other => return Err(format!("unknown embedder {other} (hash, minilm)").into()),
    })
}

fn run(
    ds: &Dataset,
    embedder: &dyn Embedder,
    out: &Path,
    lexical_cap: Option<usize>,
) -> BoxResult<TaskResult> {
    let model = embedder.identity().model_id.clone();
    let mut cache = EmbeddingCache::open(&out.join("cache"), embedder)?;
    let label = format!("{} / {model}", ds.task);
    let mut progress = |done: usize, total: usize| {
        if done == total || done % 1024 < 64 {
            eprintln!("{label}: embedded {done}/{total}");
        }
    };
    let docs = cache.embed_all(
        embedder,
        &ds.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>(),
        64,
        &mut progress,
    )?;
    let queries = cache.embed_all(
        embedder,
        &ds.queries
            .iter()
            .map(|q| q.text.as_str())
            .collect::<Vec<_>>(),
        64,
        &mut progress,
    )?;
    let a = tracks::track_a(ds, &docs, &queries);
    eprintln!(
        "{label}: track A done; track B importing {} rows",
        ds.docs.len()
    );
    let work = out.join(format!("work-{}", ds.task));
    let b = tracks::track_b_with_cap(ds, embedder.identity(), &docs, &queries, &work, lexical_cap)?;
    let (subtasks, sa, sb) = report::score(ds, &a, &b);
    let mut notes = b.notes.clone();
    if ds.dangling_relevant > 0 {
        notes.push(format!(
            "{} relevant ids named no row and were dropped",
            ds.dangling_relevant
        ));
    }
    let groups: std::collections::HashSet<&str> =
        ds.docs.iter().map(|d| d.group.as_str()).collect();
    Ok(TaskResult {
        task: ds.task.clone(),
        model,
        rows: ds.docs.len(),
        groups: groups.len(),
        queries: ds.queries.len(),
        subtasks,
        a: sa,
        b: sb,
        published_b_minilm: ds.published_b_minilm,
        embed_s: cache.embed_s,
        cached: (cache.loaded, cache.computed),
        a_ms: Pct::of(&a.query_ms),
        b_ms: Pct::of(&b.query_ms),
        b_setup_s: b.setup_s,
        notes,
    })
}

fn main() -> BoxResult<()> {
    let args = parse_args()?;
    let out = workspace_root().join("target/quality");
    std::fs::create_dir_all(&out)?;
    let datasets: Vec<Dataset> = args
        .tasks
        .iter()
        .map(|t| {
            let mut ds = load_task(t, &args.data)?;
            ds.keep_groups(args.groups);
            ds.cap_queries(args.max_queries);
            Ok(ds)
        })
        .collect::<BoxResult<_>>()?;
    let mut results = Vec::new();
    for name in &args.embedders {
        let embedder = embedder(name)?;
        for ds in &datasets {
            results.push(run(ds, embedder.as_ref(), &out, args.lexical_cap)?);
        }
    }
    let command = format!(
        "cargo run -p cpersona-scale --example quality --profile=dev -- --tasks {} --embedders {} --max-queries {} --groups {} --lexical-cap {}",
        args.tasks.join(","),
        args.embedders.join(","),
        args.max_queries,
        args.groups,
        args.lexical_cap.map_or("off".to_owned(), |c| c.to_string())
    );
    let text = report::render_text(&results);
    println!("{command}\n{text}");
    std::fs::write(out.join("quality.txt"), format!("{command}\n{text}\n"))?;
    std::fs::write(
        out.join("quality.json"),
        serde_json::to_string_pretty(&report::to_json(&command, &results))?,
    )?;
    println!("wrote {}/quality.{{json,txt}}", out.display());
    Ok(())
}
