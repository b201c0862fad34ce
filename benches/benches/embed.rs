//! Embedding throughput of the builtin embedder (and the hash fallback): short texts one at a
//! time, short texts batched, and texts long enough to fill the 256-token window. Prints
//! texts/s; the model comes from `CPERSONA_MODEL_DIR` and the builtin figures are skipped,
//! saying so, when it is absent.
//!
//! Run: `CPERSONA_MODEL_DIR=$PWD/target/test-deps/all-MiniLM-L6-v2 cargo bench --workspace --no-run --profile=dev`,
//! then the `embed` binary it names (`target/debug/deps/embed-*`). Never `-p`: another
//! feature set rebuilds candle.
//!
//! Profile (`perf record` of this binary, dev profile, 2 cores at load 9–11, December 2026):
//! 58% of the samples are in `gemm`'s f32 microkernel (candle's CPU matmul), then the
//! thread-pool barrier (3.6%), `erf` of the GELU (4.9%), `exp` of the softmax (3.4%) and
//! scheduler time; the rest is under 1.5% each. Turning on `gemm`'s `x86-v4` feature (its
//! AVX-512 kernels; candle leaves it off) moved the samples to the AVX-512 kernel (65%) but
//! did not lower the CPU time of a whole run (`perf stat` task-clock 36.4 s before, 41.4 s
//! with it, same workload), so it was not kept: on this machine the matmul is not bound by
//! the width of its FMAs. Wall-clock rates here swing ±50% between runs of one binary under
//! that load, so compare binaries by alternating them, or by `perf stat` CPU time.
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

/// Texts per second over `rounds` timed runs of `run` (after one warm-up), best and median.
fn measure(n_texts: usize, rounds: usize, mut run: impl FnMut()) -> (f64, f64) {
    run();
    let mut rates: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            run();
            n_texts as f64 / started.elapsed().max(Duration::from_nanos(1)).as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() - 1], rates[rates.len() / 2])
}

fn report(name: &str, embedder: &dyn Embedder) {
    let short = texts(1, 64, 12);
    let long = texts(2, 16, 400);
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
    for (what, (best, median)) in [
        ("short texts (12 words), one at a time", one_at_a_time),
        ("short texts (12 words), batch of 64", batched),
        (
            "256-token texts (400 words, truncated), batch of 16",
            window,
        ),
    ] {
        println!("{name:<8} {what:<52} {median:>9.1} texts/s median  {best:>9.1} best");
    }
}

fn main() {
    println!(
        "embed bench: candle threads {}, {} logical cpus",
        cpersona_engine::embed::builtin::compute_threads(),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
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
