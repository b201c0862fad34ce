//! Retrieval quality, Track A (raw embedder, exact cosine) vs Track B (the same vectors through
//! `import_memories` + `Engine::recall`, full-ranking regime), on LoCoMo, TMD and any BEIR-layout
//! folder, with the hash embedder, the builtin MiniLM (when a model folder is set) and e5-small
//! (multilingual-e5-small served by `scale/e5/serve.py`); NDCG@10, Recall@5/@10 per task and
//! subtask, deltas B − A, issue 23's condition checked per line, and CPersona's published Track
//! B beside. Each task runs per split (development, validation; the frozen holdout only when
//! asked by name, see `quality::splits`). Writes a table to stdout and
//! `target/quality/<label>.{json,txt,md}`; embeddings are cached in `target/quality/cache/`
//! keyed by model, role and text.
//!
//! Run: `CPERSONA_MODEL_DIR=target/test-deps/all-MiniLM-L6-v2 cargo run --workspace --example
//! quality --profile=dev -- [--tasks locomo,tmd,beir:DIR] [--embedders hash,minilm,e5]
//! [--split dev,val | holdout --open-holdout | all --open-holdout] [--e5-url URL]
//! [--max-queries N] [--groups N] [--data ../shared/data] [--lexical-cap N|off]
//! [--adaptive off|on|power=P,floor=F] [--compare-fusion] [--resort-by-confidence] [--dump-pools]
//! [--label NAME]`.
//! `--groups N` keeps the first N conversations of each task (0 = all), for a machine where
//! embedding is slow. `scale/e5/quality.sh` starts the e5 server around one run.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cpersona_engine::embed::builtin::BuiltinEmbedder;
use cpersona_engine::embed::{Embedder, HashEmbedder, HttpEmbedder, RemoteOptions};
use cpersona_engine::recall::stages::fusion_weights::AdaptiveFusion;
use cpersona_scale::Pct;
use cpersona_scale::quality::cache::EmbeddingCache;
use cpersona_scale::quality::fusion_table;
use cpersona_scale::quality::report::{self, TaskResult};
use cpersona_scale::quality::splits::{self, Split};
use cpersona_scale::quality::{Dataset, load, tracks};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Where `scale/e5/serve.py` listens unless told otherwise.
const DEFAULT_E5_URL: &str = "http://127.0.0.1:8765";

struct Args {
    tasks: Vec<String>,
    embedders: Vec<String>,
    /// `None` = the whole task, unsplit (`--split all`).
    splits: Option<Vec<Split>>,
    open_holdout: bool,
    e5_url: String,
    max_queries: usize,
    groups: usize,
    data: PathBuf,
    /// Track B's lexical candidate cap (`--lexical-cap N|off`; default the engine's).
    lexical_cap: Option<usize>,
    /// Write each query's frozen pool (`--dump-pools`) to `target/quality/pools-*.jsonl`.
    pools: bool,
    /// Track B's adaptive fusion (`--adaptive off|on|power=P,floor=F`; default the engine's).
    adaptive: Option<AdaptiveFusion>,
    label: String,
    /// Run Track B with fixed weights and with adaptive fusion, and write issue 23's table
    /// of both (`<label>-fusion.md`); the main report is the adaptive run's.
    compare_fusion: bool,
    /// Score Track B's answers re-sorted by their confidence score (design §3's question).
    resort_by_confidence: bool,
    /// Print each task's split (sets, counts) and stop: nothing is embedded or scored.
    show_splits: bool,
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

fn parse_splits(v: &str) -> BoxResult<Option<Vec<Split>>> {
    if v == "all" {
        return Ok(None);
    }
    v.split(',')
        .map(|s| {
            Split::parse(s).ok_or_else(|| format!("unknown split {s} (dev, val, holdout, all)"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
        .map_err(Into::into)
}

fn parse_args() -> BoxResult<Args> {
    let mut args = Args {
        tasks: vec!["locomo".into(), "tmd".into()],
        embedders: if model_dir().is_some() {
            vec!["hash".into(), "minilm".into()]
        } else {
            vec!["hash".into()]
        },
        splits: Some(vec![Split::Dev, Split::Validation]),
        open_holdout: false,
        e5_url: std::env::var("CPERSONA_QUALITY_E5_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_E5_URL.to_owned()),
        max_queries: 0,
        groups: 0,
        data: workspace_root().join("../shared/data"),
        lexical_cap: cpersona_engine::recall::RecallConfig::default().lexical_cap,
        adaptive: cpersona_engine::recall::RecallConfig::default().adaptive,
        label: "quality".into(),
        compare_fusion: false,
        pools: false,
        resort_by_confidence: false,
        show_splits: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--tasks" => args.tasks = value()?.split(',').map(str::to_owned).collect(),
            "--embedders" => args.embedders = value()?.split(',').map(str::to_owned).collect(),
            "--split" => args.splits = parse_splits(&value()?)?,
            "--open-holdout" => args.open_holdout = true,
            "--show-splits" => args.show_splits = true,
            "--compare-fusion" => args.compare_fusion = true,
            "--dump-pools" => args.pools = true,
            "--resort-by-confidence" => args.resort_by_confidence = true,
            "--e5-url" => args.e5_url = value()?,
            "--max-queries" => args.max_queries = value()?.parse()?,
            "--groups" => args.groups = value()?.parse()?,
            "--data" => args.data = PathBuf::from(value()?),
            "--label" => args.label = value()?,
            "--lexical-cap" => {
                let v = value()?;
                args.lexical_cap = if v == "off" { None } else { Some(v.parse()?) };
            }
            "--adaptive" => {
                args.adaptive = match value()?.as_str() {
                    "off" => None,
                    "on" => Some(AdaptiveFusion::default()),
                    pairs => {
                        let mut rule = AdaptiveFusion::default();
                        for pair in pairs.split(',') {
                            match pair.split_once('=') {
                                Some(("power", v)) => rule.power = v.parse()?,
                                Some(("floor", v)) => rule.floor = v.parse()?,
                                _ => {
                                    return Err(format!(
                                        "--adaptive {pairs}: expected off, on or power=P,floor=F"
                                    )
                                    .into());
                                }
                            }
                        }
                        Some(rule)
                    }
                }
            }
            // cargo may pass --bench when run as a bench; nothing else is expected.
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let opens_holdout = args
        .splits
        .as_ref()
        .is_none_or(|s| s.contains(&Split::Holdout));
    if opens_holdout && !args.open_holdout && !args.show_splits {
        return Err(
            "this run would open the frozen holdout (--split holdout or all); \
                    it is opened once, at the end: add --open-holdout to mean it"
                .into(),
        );
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

/// An embedder as the harness uses it: one for stored rows, one for questions (the same one
/// unless the model embeds the two apart), and the cache role of each.
struct Roles {
    name: String,
    docs: Arc<dyn Embedder>,
    queries: Arc<dyn Embedder>,
    /// `Some` when the two sides are embedded apart (their caches are kept apart too).
    asymmetric: bool,
}

fn e5_side(url: &str, role: &str) -> BoxResult<Arc<dyn Embedder>> {
    // Long rows are slow on a shared machine; a retry would redo the whole batch.
    let options = RemoteOptions {
        timeout: Duration::from_secs(900),
        max_batch: 16,
        ..RemoteOptions::default()
    };
    let endpoint = format!("{}/{role}/embed", url.trim_end_matches('/'));
    let embedder = HttpEmbedder::connect(&endpoint, None, None, None, options).map_err(|e| {
        format!("e5 at {endpoint}: {e} (start it with scale/e5/quality.sh or scale/e5/serve.py)")
    })?;
    if embedder.identity().dim == 0 {
        return Err(format!("e5 at {endpoint} reported no dimension").into());
    }
    Ok(Arc::new(embedder))
}

fn embedder(name: &str, e5_url: &str) -> BoxResult<Roles> {
    let symmetric = |e: Arc<dyn Embedder>| Roles {
        name: name.to_owned(),
        docs: e.clone(),
        queries: e,
        asymmetric: false,
    };
    Ok(match name {
        "hash" => symmetric(Arc::new(HashEmbedder::new())),
        "minilm" => {
            let dir = model_dir().ok_or("minilm needs CPERSONA_MODEL_DIR (the model folder)")?;
            symmetric(Arc::new(BuiltinEmbedder::load(&dir)?))
        }
        // e5 is trained with "passage: " on documents and "query: " on questions; every task
        // here is question -> stored row, so rows go through /passage and questions /query.
        "e5" => Roles {
            name: name.to_owned(),
            docs: e5_side(e5_url, "passage")?,
            queries: e5_side(e5_url, "query")?,
            asymmetric: true,
        },
        other => return Err(format!("unknown embedder {other} (hash, minilm, e5)").into()),
    })
}

fn run(
    ds: &Dataset,
    split: &str,
    roles: &Roles,
    out: &Path,
    settings: &tracks::TrackB,
    resort_by_confidence: bool,
) -> BoxResult<TaskResult> {
    let model = roles.docs.identity().model_id.clone();
    let role = |r: &'static str| roles.asymmetric.then_some(r);
    let mut doc_cache =
        EmbeddingCache::open_role(&out.join("cache"), roles.docs.as_ref(), role("passage"))?;
    let mut query_cache =
        EmbeddingCache::open_role(&out.join("cache"), roles.queries.as_ref(), role("query"))?;
    let label = format!("{} / {}", ds.task, roles.name);
    let mut progress = |done: usize, total: usize| {
        if done == total || done % 1024 < 64 {
            eprintln!("{label}: embedded {done}/{total}");
        }
    };
    let docs = doc_cache.embed_all(
        roles.docs.as_ref(),
        &ds.docs.iter().map(|d| d.text.as_str()).collect::<Vec<_>>(),
        64,
        &mut progress,
    )?;
    let queries = query_cache.embed_all(
        roles.queries.as_ref(),
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
    let work = out.join(format!("work-{}", roles.name));
    let b = tracks::track_b_with(ds, roles.docs.identity(), &docs, &queries, &work, settings)?;
    let mut b = b;
    if settings.pools {
        // One line per query: what an offline replay of another fusion needs.
        let path = out.join(format!(
            "pools-{}-{}-{}.jsonl",
            ds.task.split(" [").next().unwrap_or(&ds.task),
            split,
            roles.name
        ));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for (q, pool) in ds.queries.iter().zip(&b.pools) {
            let line = serde_json::json!({"subtask": q.subtask, "relevant": q.relevant,
                "arms": pool});
            writeln!(file, "{line}")?;
        }
        file.flush()?;
        eprintln!("{label}: pools in {}", path.display());
    }
    if resort_by_confidence {
        b.lists = std::mem::take(&mut b.by_confidence);
        b.notes
            .push("Track B's answers re-sorted by their confidence score".into());
    }
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
        split: split.to_owned(),
        embedder: roles.name.clone(),
        model,
        rows: ds.docs.len(),
        groups: groups.len(),
        queries: ds.queries.len(),
        subtasks,
        a: sa,
        b: sb,
        published_b_minilm: ds.published_b_minilm,
        embed_s: doc_cache.embed_s + query_cache.embed_s,
        cached: {
            let computed = doc_cache.computed + query_cache.computed;
            (
                (ds.docs.len() + ds.queries.len()).saturating_sub(computed),
                computed,
            )
        },
        a_ms: Pct::of(&a.query_ms),
        b_ms: Pct::of(&b.query_ms),
        b_setup_s: b.setup_s,
        notes,
    })
}

/// What `--show-splits` prints for one task: its rule, then per split the candidate sets (when
/// split by set), rows, queries and queries per subtask. No query text is printed.
fn show_splits(whole: &Dataset) {
    println!("{}: {}", whole.task, splits::rule(whole));
    for split in [Split::Dev, Split::Validation, Split::Holdout] {
        let ds = splits::select(whole, split);
        let mut groups: Vec<&str> = Vec::new();
        for d in &ds.docs {
            if !groups.contains(&d.group.as_str()) {
                groups.push(&d.group);
            }
        }
        let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
        for q in &ds.queries {
            *per.entry(q.subtask.as_str()).or_default() += 1;
        }
        let sets = if groups.len() > 1 {
            format!(" sets {}", groups.join(" "))
        } else {
            String::new()
        };
        println!(
            "  {:7} rows {:5} queries {:5}{sets}; per subtask {:?}",
            split.name(),
            ds.docs.len(),
            ds.queries.len(),
            per
        );
    }
}

fn main() -> BoxResult<()> {
    let args = parse_args()?;
    if args.show_splits {
        for t in &args.tasks {
            let mut whole = load_task(t, &args.data)?;
            whole.keep_groups(args.groups);
            show_splits(&whole);
        }
        return Ok(());
    }
    let out = workspace_root().join("target/quality");
    std::fs::create_dir_all(&out)?;
    // Each task is cut to its split before anything is embedded: a split not asked for is
    // never read past its loader.
    let mut datasets: Vec<(String, Dataset)> = Vec::new();
    for t in &args.tasks {
        let mut whole = load_task(t, &args.data)?;
        whole.keep_groups(args.groups);
        let rule = splits::rule(&whole);
        match &args.splits {
            None => {
                whole.cap_queries(args.max_queries);
                datasets.push(("all".into(), whole));
            }
            Some(wanted) => {
                for &split in wanted {
                    let mut ds = splits::select(&whole, split);
                    ds.cap_queries(args.max_queries);
                    if ds.queries.is_empty() {
                        eprintln!("{}: no queries ({rule})", ds.task);
                        continue;
                    }
                    eprintln!("{}: {rule}", ds.task);
                    datasets.push((split.name().into(), ds));
                }
            }
        }
    }
    let mut results = Vec::new();
    let mut fixed_results = Vec::new();
    for name in &args.embedders {
        let roles = embedder(name, &args.e5_url)?;
        for (split, ds) in &datasets {
            let mut settings = tracks::TrackB {
                lexical_cap: args.lexical_cap,
                adaptive: args.adaptive,
                pools: args.pools,
            };
            if args.compare_fusion {
                // The pools do not depend on the fusion: the adaptive run writes them.
                let fixed = tracks::TrackB {
                    adaptive: None,
                    pools: false,
                    ..settings
                };
                fixed_results.push(run(ds, split, &roles, &out, &fixed, false)?);
                settings.adaptive = settings.adaptive.or(Some(AdaptiveFusion::default()));
            }
            results.push(run(
                ds,
                split,
                &roles,
                &out,
                &settings,
                args.resort_by_confidence,
            )?);
        }
    }
    let command = format!(
        "cargo run --workspace --example quality --profile=dev -- --tasks {} --embedders {} --split {}{} --max-queries {} --groups {} --lexical-cap {} --adaptive {}",
        args.tasks.join(","),
        args.embedders.join(","),
        args.splits.as_ref().map_or_else(
            || "all".to_owned(),
            |s| s.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")
        ),
        if args.open_holdout {
            " --open-holdout"
        } else {
            ""
        },
        args.max_queries,
        args.groups,
        args.lexical_cap.map_or("off".to_owned(), |c| c.to_string()),
        // Under --compare-fusion the second run takes the engine's rule when none is given.
        args.adaptive
            .or(args.compare_fusion.then(AdaptiveFusion::default))
            .map_or("off".to_owned(), |a| format!(
                "power={},floor={}",
                a.power, a.floor
            ))
    );
    let text = report::render_text(&results);
    println!("{command}\n{text}");
    let base = out.join(&args.label);
    std::fs::write(base.with_extension("txt"), format!("{command}\n{text}\n"))?;
    std::fs::write(
        base.with_extension("md"),
        format!("    {command}\n\n{}", report::render_markdown(&results)),
    )?;
    std::fs::write(
        base.with_extension("json"),
        serde_json::to_string_pretty(&report::to_json(&command, &results))?,
    )?;
    println!("wrote {}.{{json,txt,md}}", base.display());
    if args.compare_fusion {
        let pairs = fusion_table::pair(&fixed_results, &results)?;
        let table = fusion_table::render_markdown(&pairs);
        println!("{table}");
        let path = out.join(format!("{}-fusion.md", args.label));
        std::fs::write(&path, format!("    {command} --compare-fusion\n\n{table}"))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
