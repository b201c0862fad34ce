//! Embedding throughput of the builtin embedder (and the hash fallback): short texts one at a
//! time, short texts batched, and texts long enough to fill the 256-token window. Prints
//! texts/s (median and best of the rounds), CPU milliseconds per text (all threads, from
//! `/proc/self/stat`) and, for the model, GFLOP/s from the texts' real token counts (MiniLM-L6:
//! ~0.30 GFLOP for a 14-token text, 6.04 for a 256-token one, 90% of it in the four linear
//! products). The model comes from `CPERSONA_MODEL_DIR`; the builtin figures are skipped,
//! saying so, when it is absent. `embed matmul` prints bare candle matmul GFLOP/s at the
//! model's shapes instead (threads: `RAYON_NUM_THREADS`); `embed texts` prints the workload
//! for `scripts/embed_pytorch.py`, which runs the same texts through sentence-transformers.
//!
//! Run: `cargo build --profile bench --workspace --bench embed`, then
//! `CPERSONA_MODEL_DIR=$PWD/target/test-deps/all-MiniLM-L6-v2 target/release/deps/embed-*`
//! (never `-p`: another feature set rebuilds candle). Measure in the bench profile; the dev
//! profile's gemm matches it only through the root Cargo.toml's override for gemm-f32.
//!
//! Figures (December 2026, 2 cores shared with other work at load 7–9, so wall rates are 3–6×
//! below what 2 idle cores give and swing ±50%; CPU ms per text is the steadier column). One
//! alternating run of the bench-profile binaries before (candle element-wise ops) and after
//! (`cpersona_index::nn`'s fused kernels), and PyTorch 2.15 / sentence-transformers (2 threads)
//! on the same texts, two rounds each (texts/s median, CPU ms/text):
//!
//! | workload                     | before            | after             | PyTorch           |
//! |------------------------------|-------------------|-------------------|-------------------|
//! | short, one at a time         | 22.8, 18.7 / 18.1 | 47.5, 18.2 / 17.6 | 1.2, 0.9 / 251    |
//! | short, batch of 64           | 17.2, 24.6 / 10.8 | 33.9, 55.9 / 5.9  | 64.0, 34.3 / 11.8 |
//! | 256 tokens, batch of 16      | 2.0, 1.9 / 151    | 1.3, 2.6 / 139    | 5.5, 4.5 / 108    |
//!
//! Bare matmul in the bench profile, one thread: 68–91 GFLOP per CPU-second at the linear
//! shapes for 256 to 4096 tokens, 48–77 at 16 tokens; the dev profile gave 33–45 before the
//! root Cargo.toml's gemm override and 53–91 with it (`RAYON_NUM_THREADS=1 embed matmul`,
//! 80–93 GFLOP/s wall at load 4: one idle core). End to end
//! the 256-token case reaches ~43 GFLOP per CPU-second after (6.04 GFLOP / 139 ms), PyTorch ~56.
//! PyTorch one at a time spent ~250 CPU ms per short text on this loaded machine, far from
//! the ~82 texts/s it gives on 2 idle cores; why was not looked into.
//! Profile after (`perf record`, dev profile): gemm's f32 microkernel 68% of the samples, the
//! `nn` kernels 13% (the attention's two products, plain axpy loops storing once per
//! multiply-add, most of it), copies and page faults the rest. The attention's products now
//! take four terms per pass; a second alternating run (load 4, bench profile; texts/s median
//! of two rounds, then CPU ms/text) of before, after, and after with that blocking:
//!
//! | workload                     | before            | after             | after, blocked    |
//! |------------------------------|-------------------|-------------------|-------------------|
//! | short, one at a time         | 26.4, 29.4 / 18.1 | 39.8, 32.1 / 16.2 | 30.4, 29.1 / 16.9 |
//! | short, batch of 64           | 52.5, 96.3 / 9.6  | 158.6, 175.6 / 5.5 | 95.1, 122.8 / 5.5 |
//! | 256 tokens, batch of 16      | 4.9, 5.7 / 142    | 3.6, 11.7 / 136   | 5.2, 7.1 / 119    |
//!
//! So at 256 tokens the CPU per text fell 16% in all (142 → 119 ms; 51 GFLOP per CPU-second,
//! PyTorch 56); batched short texts take about half the CPU of before (PyTorch: 9.8–13.7 ms
//! in the first run).
//! Left: one short text is bound by gemm on 16 rows against whole weights (48–77 GFLOP per
//! CPU-second, little to split between two threads); wall figures on 2 idle cores were not
//! measurable here.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use cpersona_engine::embed::{BuiltinEmbedder, Embedder, HashEmbedder};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const WORDS: &[&str] = &[
    "the",
    "we",
    "talked",
    "about",
    "my",
    "new",
    "job",
    "yesterday",
    "and",
    "she",
    "said",
    "it",
    "was",
    "great",
    "to",
    "see",
    "you",
    "at",
    "park",
    "dog",
    "named",
    "biscuit",
    "support",
    "group",
    "painting",
    "class",
    "weekend",
    "trip",
    "mountains",
    "coffee",
    "with",
    "friends",
    "remember",
    "when",
    "our",
    "project",
    "deadline",
    "moved",
    "because",
    "of",
    "rain",
    "music",
    "festival",
    "guitar",
    "band",
    "logo",
    "cooking",
    "recipe",
    "garden",
    "tomatoes",
    "protein",
    "expression",
    "cells",
    "clinical",
    "trial",
    "patients",
    "results",
];

/// `n` texts of `n_words` seeded random words each.
fn texts(seed: u64, n: usize, n_words: usize) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..n_words)
                .map(|_| WORDS[rng.random_range(0..WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// CPU seconds this process has used so far, all threads (`/proc/self/stat` utime + stime, in
/// the kernel's 100 Hz user ticks); `None` off Linux. Under a loaded machine wall-clock rates
/// swing, CPU time much less.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// One measured workload: texts per second over `rounds` timed runs (after one warm-up),
/// best and median, and the CPU milliseconds per text over all timed runs.
struct Rate {
    best: f64,
    median: f64,
    cpu_ms_per_text: Option<f64>,
}

fn measure(n_texts: usize, rounds: usize, mut run: impl FnMut()) -> Rate {
    run();
    let cpu_before = cpu_seconds();
    let mut rates: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            run();
            n_texts as f64 / started.elapsed().max(Duration::from_nanos(1)).as_secs_f64()
        })
        .collect();
    let cpu_ms_per_text = cpu_before
        .zip(cpu_seconds())
        .map(|(before, after)| (after - before) * 1e3 / (n_texts * rounds) as f64);
    rates.sort_by(f64::total_cmp);
    Rate {
        best: rates[rates.len() - 1],
        median: rates[rates.len() / 2],
        cpu_ms_per_text,
    }
}

/// The bench's texts: 64 short ones and 16 that fill the window.
fn workload() -> (Vec<String>, Vec<String>) {
    (texts(1, 64, 12), texts(2, 16, 400))
}

fn report(name: &str, embedder: &dyn Embedder) {
    let (short, long) = workload();
    let short_refs: Vec<&str> = short.iter().map(String::as_str).collect();
    let long_refs: Vec<&str> = long.iter().map(String::as_str).collect();
    let embed = |batch: &[&str]| {
        embedder.embed(batch).expect("embed");
    };
    let one_at_a_time = measure(short.len(), 3, || {
        for text in &short_refs {
            embed(&[text]);
        }
    });
    let batched = measure(short.len(), 5, || embed(&short_refs));
    let window = measure(long.len(), 3, || embed(&long_refs));
    // The model's work per text, from the real token counts (none for the hash embedder).
    let flop_per_text = |batch: &[&str]| -> Option<f64> {
        if name != "builtin" {
            return None;
        }
        let infos = embedder.count_tokens(batch).ok()??;
        let lengths: Vec<usize> = infos.iter().map(|i| i.count.min(i.window)).collect();
        Some(bert_flop(&lengths))
    };
    for (what, rate, flop) in [
        (
            "short texts (12 words), one at a time",
            one_at_a_time,
            flop_per_text(&short_refs),
        ),
        (
            "short texts (12 words), batch of 64",
            batched,
            flop_per_text(&short_refs),
        ),
        (
            "256-token texts (400 words, truncated), batch of 16",
            window,
            flop_per_text(&long_refs),
        ),
    ] {
        let cpu = rate
            .cpu_ms_per_text
            .map_or_else(|| "?".to_owned(), |ms| format!("{ms:.1}"));
        let gflops = flop.map_or_else(String::new, |flop| {
            format!("{:>6.1} GFLOP/s", rate.median * flop / 1e9)
        });
        println!(
            "{name:<8} {what:<52} {:>9.1} texts/s median {:>9.1} best {cpu:>8} cpu-ms/text {gflops}",
            rate.median, rate.best
        );
    }
}

/// MiniLM-L6's floating-point operations per text, on average over texts of these token
/// counts: per layer and token the Q/K/V, output,
/// intermediate and output-dense products (2·384·(1152 + 384 + 1536 + 1536)), plus per
/// layer and text the two attention products (2 · 2·len²·384).
fn bert_flop(lengths: &[usize]) -> f64 {
    let (layers, h, inner) = (6.0, 384.0, 1536.0);
    lengths
        .iter()
        .map(|&len| {
            let len = len as f64;
            layers * (len * 2.0 * h * (3.0 * h + h + 2.0 * inner) + 4.0 * len * len * h)
        })
        .sum::<f64>()
        / lengths.len() as f64
}

/// GFLOP/s of a bare candle matmul (`gemm` underneath) at the shapes the model runs: the
/// four linear layers over 16 tokens (one short text) and 4096 (16 texts of 256), and the
/// two per-head attention products of one text of 16 and of 256 tokens. Threads: candle's
/// (`RAYON_NUM_THREADS`).
fn matmul_report() -> candle_core::Result<()> {
    use candle_core::{Device, Tensor};
    let device = Device::Cpu;
    let linear = [(384, 1152), (384, 384), (384, 1536), (1536, 384)];
    let mut shapes: Vec<(usize, usize, usize, usize)> = Vec::new();
    for tokens in [16, 256, 1024, 4096] {
        shapes.extend(linear.iter().map(|&(k, n)| (1, tokens, k, n)));
    }
    for len in [16, 256] {
        shapes.push((12, len, 32, len));
        shapes.push((12, len, len, 32));
    }
    for (batch, m, k, n) in shapes {
        let lhs = Tensor::randn(0f32, 1.0, (batch, m, k), &device)?;
        let rhs = Tensor::randn(0f32, 1.0, (batch, k, n), &device)?;
        let flop = 2.0 * (batch * m * k * n) as f64;
        // About 0.2 s of work at 50 GFLOP/s, at least 3 products.
        let reps = ((1e10 / flop) as usize).max(3);
        lhs.matmul(&rhs)?;
        let cpu_before = cpu_seconds();
        let started = Instant::now();
        for _ in 0..reps {
            lhs.matmul(&rhs)?;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = cpu_before.zip(cpu_seconds()).map_or_else(
            || "?".to_owned(),
            |(b, a)| format!("{:.1}", flop * reps as f64 / (a - b).max(0.01) / 1e9),
        );
        println!(
            "matmul {batch:>2}x {m:>4}x{k:<4}·{k:>4}x{n:<4} {:>7.1} GFLOP/s wall {cpu:>7} per cpu-s  ({:.3} ms each)",
            flop * reps as f64 / wall / 1e9,
            wall * 1e3 / reps as f64
        );
    }
    Ok(())
}

/// `nn::linear` against candle's matmul (gemm) at the model's four linear shapes for inputs of
/// `rows` rows: per product, wall and CPU microseconds, interleaved rep by rep so both see the
/// same load. gemm runs as the encoder calls it for many rows, on a transposed view of the
/// checkpoint's `out × in` weight, and as it ran before, on a contiguous transpose.
fn linear_report() -> candle_core::Result<()> {
    use candle_core::{Device, Tensor};
    let device = Device::Cpu;
    let linear = [(384, 1152), (384, 384), (384, 1536), (1536, 384)];
    let mut rng = StdRng::seed_from_u64(3);
    println!(
        "linear rows in x out   kernel wall/cpu us   gemm(view) wall/cpu us   gemm(contig) wall/cpu us"
    );
    for rows in [1, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256] {
        for &(input, output) in &linear {
            let x: Vec<f32> = (0..rows * input)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let w: Vec<f32> = (0..output * input)
                .map(|_| rng.random_range(-0.1..0.1))
                .collect();
            let weight = Tensor::from_slice(&w, (output, input), &device)?;
            let weight_t = weight.t()?.contiguous()?;
            let view = weight.t()?;
            let kernel = || -> candle_core::Result<()> {
                std::hint::black_box(cpersona_index::nn::linear(&x, &w, input));
                Ok(())
            };
            let gemm = |rhs: &Tensor| -> candle_core::Result<()> {
                let lhs = Tensor::from_slice(&x, (rows, input), &device)?;
                std::hint::black_box(lhs.matmul(rhs)?.flatten_all()?.to_vec1::<f32>()?);
                Ok(())
            };
            // About 0.1 s of each at 50 GFLOP/s, at least 5 reps.
            let reps = ((2.5e9 / (rows * input * output) as f64) as usize).clamp(5, 2000);
            let mut spent = [(0f64, 0f64); 3];
            for _ in 0..reps {
                for (which, total) in spent.iter_mut().enumerate() {
                    let cpu = cpu_seconds();
                    let started = Instant::now();
                    match which {
                        0 => kernel()?,
                        1 => gemm(&view)?,
                        _ => gemm(&weight_t)?,
                    }
                    total.0 += started.elapsed().as_secs_f64();
                    total.1 += cpu.zip(cpu_seconds()).map_or(0.0, |(b, a)| a - b);
                }
            }
            let us = |(wall, cpu): (f64, f64)| {
                format!(
                    "{:>8.0} {:>8.0}",
                    wall * 1e6 / reps as f64,
                    cpu * 1e6 / reps as f64
                )
            };
            println!(
                "linear {rows:>4} {input:>4}x{output:<4} {}   {}   {}",
                us(spent[0]),
                us(spent[1]),
                us(spent[2])
            );
        }
    }
    Ok(())
}

/// One short text at a time, each call timed: p50 and p90 wall milliseconds per text, and CPU
/// milliseconds per text, over `rounds` passes of the 64 short texts.
fn latency_report(embedder: &dyn Embedder, rounds: usize) {
    let (short, _) = workload();
    let mut walls = Vec::with_capacity(short.len() * rounds);
    embedder.embed(&[short[0].as_str()]).expect("embed");
    let cpu_before = cpu_seconds();
    for _ in 0..rounds {
        for text in &short {
            let started = Instant::now();
            embedder.embed(&[text.as_str()]).expect("embed");
            walls.push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    let cpu = cpu_before.zip(cpu_seconds()).map_or_else(
        || "?".to_owned(),
        |(b, a)| format!("{:.2}", (a - b) * 1e3 / walls.len() as f64),
    );
    walls.sort_by(f64::total_cmp);
    let at = |q: f64| walls[((walls.len() - 1) as f64 * q) as usize];
    println!(
        "builtin  one short text: p50 {:.2} ms, p90 {:.2} ms, min {:.2} ms wall, {cpu} cpu-ms/text ({} texts)",
        at(0.5),
        at(0.9),
        walls[0],
        walls.len()
    );
}

fn main() {
    println!(
        "embed bench: candle threads {}, {} logical cpus",
        cpersona_engine::embed::builtin::compute_threads(),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    // `cargo bench` passes --bench; the words this binary reads are `matmul` (the bare
    // matmul table) and `texts` (prints the workload, `short<TAB>text` / `long<TAB>text`, for
    // scripts/embed_pytorch.py to run the same texts through sentence-transformers).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "matmul") {
        matmul_report().expect("matmul");
        return;
    }
    if args.iter().any(|arg| arg == "linear") {
        linear_report().expect("linear");
        return;
    }
    if args.iter().any(|arg| arg == "latency") {
        let dir = std::env::var_os("CPERSONA_MODEL_DIR").expect("CPERSONA_MODEL_DIR");
        let embedder = BuiltinEmbedder::load(std::path::Path::new(&dir)).expect("model");
        latency_report(&embedder, 5);
        return;
    }
    if args.iter().any(|arg| arg == "texts") {
        let (short, long) = workload();
        for text in &short {
            println!("short\t{text}");
        }
        for text in &long {
            println!("long\t{text}");
        }
        return;
    }
    report("hash", &HashEmbedder::new());
    match std::env::var_os("CPERSONA_MODEL_DIR") {
        None => println!(
            "builtin  skipped: CPERSONA_MODEL_DIR is unset (point it at an all-MiniLM-L6-v2 folder)"
        ),
        Some(dir) => match BuiltinEmbedder::load(std::path::Path::new(&dir)) {
            Ok(embedder) => report("builtin", &embedder),
            Err(err) => println!("builtin  skipped: {err}"),
        },
    }
}
