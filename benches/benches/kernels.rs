//! Criterion benches of the vector kernels: every kernel variant this CPU runs against scalar,
//! single and batch, at 384/768/1024 dims, with batch scans reported as a fraction of this
//! machine's measured read bandwidth. It must never assert speed; it only measures and prints.
//!
//! Run: `cargo bench -p cpersona-benches --bench kernels` (filter with `-- dot_i8_batch` etc.).
//! Batch dot streams 100K rows per call (38 to 102 MB, past the last-level cache), 64-byte
//! aligned as in a generation file; batch
//! Hamming streams 1M sign rows. A summary table at the end prints, per batch scan, the best
//! observed GB/s, the ratio to scalar and the fraction of the read bandwidth, measured as the
//! best time to sum a buffer of the same size as u64s.
#![forbid(unsafe_code)]
#![allow(
    clippy::print_stdout,
    reason = "a bench reports its summary on the terminal"
)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use cpersona_index::{Isa, Kernels};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The embedding widths the server uses.
const DIMS: [usize; 3] = [384, 768, 1024];
/// Rows per batch dot: enough to stream from RAM rather than cache.
const DOT_ROWS: usize = 100_000;
/// Rows per batch Hamming: the sign prefilter scans the whole generation.
const HAMMING_ROWS: usize = 1_000_000;
/// Listed rows per gathered dot (re-ranking prefilter candidates).
const GATHER_ROWS: usize = 10_000;

/// A measured scan: (scan name, dims, kernel variant).
type ScanKey = (String, usize, String);

thread_local! {
    /// Best seconds per call and bytes per call for each scan, for the summary.
    static BEST: RefCell<BTreeMap<ScanKey, (f64, usize)>> =
        const { RefCell::new(BTreeMap::new()) };
}

fn record(scan: &str, dim: usize, variant: &str, per_call: Duration, bytes: usize) {
    BEST.with(|best| {
        let mut best = best.borrow_mut();
        let entry = best
            .entry((scan.to_owned(), dim, variant.to_owned()))
            .or_insert((f64::INFINITY, bytes));
        entry.0 = entry.0.min(per_call.as_secs_f64());
    });
}

/// Times `f` through criterion and keeps the best per-call time for the summary.
fn timed(
    b: &mut criterion::Bencher<'_>,
    scan: &str,
    dim: usize,
    variant: &str,
    bytes: usize,
    mut f: impl FnMut(),
) {
    b.iter_custom(|iters| {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        let calls = u32::try_from(iters.max(1)).unwrap_or(u32::MAX);
        record(scan, dim, variant, elapsed / calls, bytes);
        elapsed
    });
}

fn random_i8(rng: &mut StdRng, len: usize) -> Vec<i8> {
    (0..len).map(|_| rng.random()).collect()
}

/// Random rows starting on a 64-byte boundary, as a generation's mapped rows do: the buffer
/// and the offset of the aligned start inside it.
fn aligned_rows(rng: &mut StdRng, len: usize) -> (Vec<i8>, usize) {
    let buf = random_i8(rng, len + 64);
    let start = buf.as_ptr().align_offset(64).min(64);
    (buf, start)
}

/// The variants to bench, with a printed line for every ISA this CPU lacks.
fn variants() -> Vec<Kernels> {
    let available = Isa::available();
    for isa in Isa::ALL {
        if !available.contains(&isa) {
            println!("kernels bench: skipping {isa:?} (not available on this CPU)");
        }
    }
    Kernels::variants()
}

fn bench_bandwidth(c: &mut Criterion) {
    let mut group = c.benchmark_group("read_bandwidth");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for dim in DIMS {
        let bytes = DOT_ROWS * dim;
        let words = vec![1_u64; bytes / 8];
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function(BenchmarkId::new("sum_u64", dim), |b| {
            timed(b, "bandwidth", dim, "sum_u64", bytes, || {
                black_box(sum_words(black_box(&words)));
            });
        });
    }
    group.finish();
}

/// A plain loop over u64 words with four independent sums, which LLVM vectorises: the read
/// bandwidth a kernel can hope for on one thread.
fn sum_words(words: &[u64]) -> u64 {
    let mut sums = [0_u64; 4];
    let mut chunks = words.chunks_exact(4);
    for chunk in &mut chunks {
        for (sum, &word) in sums.iter_mut().zip(chunk) {
            *sum = sum.wrapping_add(word);
        }
    }
    let tail: u64 = chunks
        .remainder()
        .iter()
        .fold(0, |acc, &w| acc.wrapping_add(w));
    sums.iter().fold(tail, |acc, &s| acc.wrapping_add(s))
}

fn bench_single(c: &mut Criterion) {
    let kernels = variants();
    let mut rng = StdRng::seed_from_u64(42);
    let mut group = c.benchmark_group("dot_i8");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for dim in DIMS {
        let (a, b) = (random_i8(&mut rng, dim), random_i8(&mut rng, dim));
        group.throughput(Throughput::Bytes(2 * dim as u64));
        for k in &kernels {
            group.bench_function(BenchmarkId::new(k.variant(), dim), |bench| {
                bench.iter(|| k.dot_i8(black_box(&a), black_box(&b)));
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("hamming");
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for dim in DIMS {
        let words = dim / 64;
        let a: Vec<u64> = (0..words).map(|_| rng.random()).collect();
        let b: Vec<u64> = (0..words).map(|_| rng.random()).collect();
        group.throughput(Throughput::Bytes(16 * words as u64));
        for k in &kernels {
            group.bench_function(BenchmarkId::new(k.variant(), dim), |bench| {
                bench.iter(|| k.hamming(black_box(&a), black_box(&b)));
            });
        }
    }
    group.finish();
}

fn bench_batch(c: &mut Criterion) {
    let kernels = variants();
    let mut rng = StdRng::seed_from_u64(7);
    let mut group = c.benchmark_group("dot_i8_batch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for dim in DIMS {
        // The generation's stride: dim rounded up to 64 (already a multiple here).
        let stride = dim.div_ceil(64) * 64;
        let query = random_i8(&mut rng, dim);
        let (rows_buf, start) = aligned_rows(&mut rng, DOT_ROWS * stride);
        let rows = &rows_buf[start..start + DOT_ROWS * stride];
        let mut out = vec![0_i32; DOT_ROWS];
        let bytes = DOT_ROWS * stride;
        group.throughput(Throughput::Bytes(bytes as u64));
        for k in &kernels {
            let variant = k.variant();
            group.bench_function(BenchmarkId::new(&variant, dim), |b| {
                timed(b, "dot_i8_batch", dim, &variant, bytes, || {
                    k.dot_i8_batch(black_box(&query), black_box(rows), stride, &mut out);
                });
            });
        }
    }
    group.finish();
    bench_gather(c, &kernels, &mut rng);
    let mut group = c.benchmark_group("hamming_batch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for dim in DIMS {
        let words = dim / 64;
        let query: Vec<u64> = (0..words).map(|_| rng.random()).collect();
        let rows: Vec<u64> = (0..HAMMING_ROWS * words).map(|_| rng.random()).collect();
        let mut out = vec![0_u32; HAMMING_ROWS];
        let bytes = HAMMING_ROWS * words * 8;
        group.throughput(Throughput::Bytes(bytes as u64));
        for k in &kernels {
            let variant = k.variant();
            group.bench_function(BenchmarkId::new(&variant, dim), |b| {
                timed(b, "hamming_batch", dim, &variant, bytes, || {
                    k.hamming_batch(black_box(&query), black_box(&rows), &mut out);
                });
            });
        }
    }
    group.finish();
}

/// Gathered dot of 10K random rows out of 100K at 384 dims (random access, not streaming).
fn bench_gather(c: &mut Criterion, kernels: &[Kernels], rng: &mut StdRng) {
    let dim = 384;
    let query = random_i8(rng, dim);
    let (rows_buf, start) = aligned_rows(rng, DOT_ROWS * dim);
    let rows = &rows_buf[start..start + DOT_ROWS * dim];
    let indices: Vec<u32> = (0..GATHER_ROWS)
        .map(|_| rng.random_range(0..DOT_ROWS as u32))
        .collect();
    let mut out = vec![0_i32; GATHER_ROWS];
    let bytes = GATHER_ROWS * dim;
    let mut group = c.benchmark_group("dot_i8_gather");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(bytes as u64));
    for k in kernels {
        let variant = k.variant();
        group.bench_function(BenchmarkId::new(&variant, dim), |b| {
            timed(b, "dot_i8_gather", dim, &variant, bytes, || {
                k.dot_i8_gather(&query, black_box(rows), dim, &indices, &mut out);
            });
        });
    }
    group.finish();
}

/// Prints the best observed throughput of every batch scan, its ratio to scalar and its
/// fraction of the read bandwidth measured on a buffer of the same size.
fn summary(_c: &mut Criterion) {
    BEST.with(|best| {
        let best = best.borrow();
        if best.is_empty() {
            return;
        }
        println!("\nkernels bench summary (best call per scan; bandwidth = best sum_u64 pass)");
        println!(
            "{:<14} {:>5} {:<24} {:>10} {:>11} {:>9} {:>10}",
            "scan", "dims", "variant", "ms/call", "GB/s", "x scalar", "of bw"
        );
        for ((scan, dim, variant), &(secs, bytes)) in best.iter() {
            if scan == "bandwidth" {
                continue;
            }
            let gbps = bytes as f64 / secs / 1e9;
            let scalar = best.get(&(scan.clone(), *dim, "scalar".to_owned()));
            let ratio = scalar.map_or(f64::NAN, |&(scalar_secs, _)| scalar_secs / secs);
            // Bandwidth is measured over the batch-dot block of this width; scale by bytes.
            let bandwidth = best
                .get(&("bandwidth".to_owned(), *dim, "sum_u64".to_owned()))
                .map(|&(bw_secs, bw_bytes)| bw_bytes as f64 / bw_secs / 1e9);
            let fraction = bandwidth.map_or(f64::NAN, |bw| gbps / bw);
            println!(
                "{scan:<14} {dim:>5} {variant:<24} {:>10.3} {gbps:>11.2} {ratio:>9.2} {fraction:>10.2}",
                secs * 1e3
            );
            if scan == "hamming_batch" {
                let rows = bytes / (dim / 8);
                println!("{:<14} {:>5} {:<24} {:>10} {:>11.1} Mrows/s", "", "", "", "", rows as f64 / secs / 1e6);
            }
        }
        for dim in DIMS {
            if let Some(&(secs, bytes)) = best.get(&("bandwidth".to_owned(), dim, "sum_u64".to_owned())) {
                println!("read bandwidth over {} MB: {:.2} GB/s", bytes / 1_000_000, bytes as f64 / secs / 1e9);
            }
        }
    });
}

criterion_group!(benches, bench_bandwidth, bench_single, bench_batch, summary);
criterion_main!(benches);
