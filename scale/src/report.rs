//! The ladder's report: one rung's figures, the log-log slopes between the smallest and the
//! largest rung, and the renderings (a comfy-table text table, JSON, CSV, an SVG plot). It only
//! formats what it is given; it must never measure or read the environment.

use std::fmt::Write as _;
use std::path::Path;

use comfy_table::{Table, presets::UTF8_FULL};
use plotters::prelude::*;
use serde_json::{Value, json};

/// The recall stages timed per query, in the engine's order, plus their sum.
pub const STAGES: [&str; 7] = [
    "embed",
    "vector",
    "lexical",
    "fusion",
    "hydrate",
    "gate_input",
    "total",
];

/// p50 and p95 of one series, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pct {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

impl Pct {
    /// Nearest-rank p50/p95 of `values` (zeros when empty).
    pub fn of(values: &[f64]) -> Pct {
        if values.is_empty() {
            return Pct::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        Pct {
            p50: at(0.5),
            p95: at(0.95),
        }
    }
}

/// What one rung measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rung {
    /// Rows imported.
    pub rows: usize,
    /// Queries timed (after warm-up).
    pub queries: usize,
    /// Queries whose vector arm was checked against exact f32.
    pub truth_queries: usize,
    /// Rows per second through `import_memories`.
    pub ingest_rows_per_s: f64,
    /// Size of the JSONL file imported, bytes.
    pub jsonl_bytes: u64,
    /// Seconds `rebuild_index(Memories)` took.
    pub generation_build_s: f64,
    /// Size of the generation file, bytes.
    pub generation_bytes: u64,
    /// Vector arm latency (`timings.vector_ms`).
    pub vector: Pct,
    /// Mean recall@10 of the vector arm (near + far lists merged by cosine) vs exact f32 over
    /// the same scope.
    pub vector_recall_at_10: f64,
    /// Share of queries whose memories vector scan ran in prefilter mode.
    pub prefiltered_share: f64,
    /// Share of queries whose scan window cut rows to the far list.
    pub window_cut_share: f64,
    /// Per stage of [`STAGES`], in that order.
    pub stages: Vec<Pct>,
    /// Process peak RSS during the rung (VmHWM, reset at its start where Linux allows), bytes.
    pub peak_rss_bytes: u64,
    /// SQLite database on disk (main file + WAL), bytes.
    pub db_bytes: u64,
}

/// The run's context, printed above the table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// The command that produced it.
    pub command: String,
    /// Cores and CPU model.
    pub machine: String,
    /// Short git commit, or "unknown".
    pub commit: String,
    /// Free notes (what is excluded, what is not built).
    pub notes: Vec<String>,
}

/// One headline metric: a name and how to read it from a rung.
type Metric = (&'static str, fn(&Rung) -> f64);

fn metrics() -> Vec<Metric> {
    vec![
        ("ingest rows/s", |r| r.ingest_rows_per_s),
        ("generation build s", |r| r.generation_build_s),
        ("generation bytes", |r| r.generation_bytes as f64),
        ("vector p50 ms", |r| r.vector.p50),
        ("vector p95 ms", |r| r.vector.p95),
        ("vector recall@10", |r| r.vector_recall_at_10),
        ("lexical p50 ms", |r| stage(r, 2).p50),
        ("fusion p50 ms", |r| stage(r, 3).p50),
        ("hydrate p50 ms", |r| stage(r, 4).p50),
        ("gate_input p50 ms", |r| stage(r, 5).p50),
        ("total p50 ms", |r| stage(r, 6).p50),
        ("total p95 ms", |r| stage(r, 6).p95),
        ("peak RSS bytes", |r| r.peak_rss_bytes as f64),
        ("db bytes", |r| r.db_bytes as f64),
    ]
}

fn stage(r: &Rung, i: usize) -> Pct {
    r.stages.get(i).copied().unwrap_or_default()
}

/// The log-log slope of `metric` from the first to the last rung: d ln(metric) / d ln(rows).
/// `None` with fewer than two rungs or a non-positive value (a log is undefined there).
pub fn slope(rungs: &[Rung], metric: fn(&Rung) -> f64) -> Option<f64> {
    let (first, last) = (rungs.first()?, rungs.last()?);
    let (a, b) = (metric(first), metric(last));
    if rungs.len() < 2 || a <= 0.0 || b <= 0.0 || first.rows == last.rows {
        return None;
    }
    Some((b / a).ln() / (last.rows as f64 / first.rows as f64).ln())
}

/// Every headline slope, by metric name.
pub fn slopes(rungs: &[Rung]) -> Vec<(&'static str, Option<f64>)> {
    metrics()
        .into_iter()
        .map(|(name, get)| (name, slope(rungs, get)))
        .collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1_048_576.0)
}

fn pct(p: Pct) -> String {
    format!("{:.3} / {:.3}", p.p50, p.p95)
}

/// The stdout rendering: header, one column per rung, then the slopes.
pub fn render_text(header: &Header, rungs: &[Rung]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "command: {}", header.command);
    let _ = writeln!(out, "machine: {}", header.machine);
    let _ = writeln!(out, "commit:  {}", header.commit);
    for note in &header.notes {
        let _ = writeln!(out, "note:    {note}");
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL);
    let mut head = vec!["metric".to_owned()];
    head.extend(rungs.iter().map(|r| format!("{} rows", r.rows)));
    table.set_header(head);
    let mut row = |name: &str, f: &dyn Fn(&Rung) -> String| {
        let mut cells = vec![name.to_owned()];
        cells.extend(rungs.iter().map(f));
        table.add_row(cells);
    };
    row("queries timed / checked vs f32", &|r| {
        format!("{} / {}", r.queries, r.truth_queries)
    });
    row("ingest (import_memories) rows/s", &|r| {
        format!("{:.0}", r.ingest_rows_per_s)
    });
    row("import file MiB", &|r| mib(r.jsonl_bytes));
    row("generation build s", &|r| {
        format!("{:.3}", r.generation_build_s)
    });
    row("generation file MiB", &|r| mib(r.generation_bytes));
    row("vector arm p50 / p95 ms", &|r| pct(r.vector));
    row("vector recall@10 vs exact f32", &|r| {
        format!("{:.3}", r.vector_recall_at_10)
    });
    row("vector prefiltered / window-cut share", &|r| {
        format!("{:.2} / {:.2}", r.prefiltered_share, r.window_cut_share)
    });
    for (i, name) in STAGES.iter().enumerate() {
        row(&format!("recall {name} p50 / p95 ms"), &|r| {
            pct(stage(r, i))
        });
    }
    row("reconstruct p50 / p95 ms", &|_| {
        "n/a (not built)".to_owned()
    });
    row("peak RSS MiB (the rung's own)", &|r| mib(r.peak_rss_bytes));
    row("database MiB (db + wal)", &|r| mib(r.db_bytes));
    let _ = writeln!(out, "{table}");
    if let (Some(first), Some(last)) = (rungs.first(), rungs.last()) {
        let _ = writeln!(
            out,
            "headline: log-log slope from {} to {} rows (1 = linear, 0 = flat)",
            first.rows, last.rows
        );
        for (name, s) in slopes(rungs) {
            let s = s.map_or_else(|| "n/a".to_owned(), |s| format!("{s:+.2}"));
            let _ = writeln!(out, "  {name:<20} {s}");
        }
    }
    out
}

fn pct_json(p: Pct) -> Value {
    json!({"p50": p.p50, "p95": p.p95})
}

/// The JSON rendering (header, rungs, slopes).
pub fn to_json(header: &Header, rungs: &[Rung]) -> Value {
    let rungs_json: Vec<Value> = rungs
        .iter()
        .map(|r| {
            let stages: serde_json::Map<String, Value> = STAGES
                .iter()
                .enumerate()
                .map(|(i, s)| ((*s).to_owned(), pct_json(stage(r, i))))
                .collect();
            json!({
                "rows": r.rows, "queries": r.queries, "truth_queries": r.truth_queries,
                "ingest_rows_per_s": r.ingest_rows_per_s, "jsonl_bytes": r.jsonl_bytes,
                "generation_build_s": r.generation_build_s, "generation_bytes": r.generation_bytes,
                "vector_ms": pct_json(r.vector), "vector_recall_at_10": r.vector_recall_at_10,
                "prefiltered_share": r.prefiltered_share, "window_cut_share": r.window_cut_share,
                "recall_ms": stages, "reconstruct": "n/a (not built)",
                "peak_rss_bytes": r.peak_rss_bytes, "db_bytes": r.db_bytes,
            })
        })
        .collect();
    let slopes: serde_json::Map<String, Value> = slopes(rungs)
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s.map_or(Value::Null, Value::from)))
        .collect();
    json!({
        "command": header.command, "machine": header.machine, "commit": header.commit,
        "notes": header.notes, "rungs": rungs_json, "slopes": slopes,
    })
}

/// The CSV rendering: one line per rung.
pub fn to_csv(rungs: &[Rung]) -> String {
    let mut out = String::from(
        "rows,queries,truth_queries,ingest_rows_per_s,jsonl_bytes,generation_build_s,\
         generation_bytes,vector_p50_ms,vector_p95_ms,vector_recall_at_10,prefiltered_share,\
         window_cut_share",
    );
    for s in STAGES {
        let _ = write!(out, ",{s}_p50_ms,{s}_p95_ms");
    }
    out.push_str(",peak_rss_bytes,db_bytes\n");
    for r in rungs {
        let _ = write!(
            out,
            "{},{},{},{:.1},{},{:.4},{},{:.4},{:.4},{:.4},{:.3},{:.3}",
            r.rows,
            r.queries,
            r.truth_queries,
            r.ingest_rows_per_s,
            r.jsonl_bytes,
            r.generation_build_s,
            r.generation_bytes,
            r.vector.p50,
            r.vector.p95,
            r.vector_recall_at_10,
            r.prefiltered_share,
            r.window_cut_share
        );
        for i in 0..STAGES.len() {
            let p = stage(r, i);
            let _ = write!(out, ",{:.4},{:.4}", p.p50, p.p95);
        }
        let _ = writeln!(out, ",{},{}", r.peak_rss_bytes, r.db_bytes);
    }
    out
}

/// Writes the SVG plot of p50 latency per stage vs rows, log-log. Stages with a zero p50 at
/// some rung (embedding, excluded by design) are left out of the plot, which says so.
pub fn plot_svg(path: &Path, rungs: &[Rung]) -> Result<(), Box<dyn std::error::Error>> {
    let floor = 1e-4;
    let series: Vec<(usize, Vec<(f64, f64)>)> = (0..STAGES.len())
        .map(|i| {
            let pts = rungs
                .iter()
                .map(|r| (r.rows as f64, stage(r, i).p50))
                .collect::<Vec<_>>();
            (i, pts)
        })
        .filter(|(_, pts)| pts.iter().all(|&(_, y)| y > 0.0))
        .collect();
    let x_min = rungs.first().map_or(1e3, |r| r.rows as f64) / 1.5;
    let x_max = rungs.last().map_or(1e6, |r| r.rows as f64) * 1.5;
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y));
    let y_min = ys.clone().fold(f64::INFINITY, f64::min).max(floor) / 2.0;
    let y_max = ys.fold(floor, f64::max) * 2.0;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "cpersona recall p50 per stage vs rows (log-log; embedding excluded)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("rows")
        .y_desc("p50 ms")
        .draw()?;
    for (k, (i, pts)) in series.into_iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(STAGES[i])
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests;
