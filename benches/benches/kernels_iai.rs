//! Instruction-count benches (iai-callgrind) of the AVX2 and scalar kernels: a deterministic
//! guard against regressions that wall-clock noise would hide. It must never bench AVX-512,
//! which valgrind does not emulate; an ISA the CPU (as valgrind presents it) lacks is skipped
//! by name.
//!
//! Run (needs valgrind and the runner of the same version as the `iai-callgrind` crate):
//! ```text
//! cargo install iai-callgrind-runner --version 0.16.1
//! cargo bench -p cpersona-benches --bench kernels_iai
//! ```
//! CI only compiles it (`cargo bench --no-run`).
#![forbid(unsafe_code)]

use std::hint::black_box;

use cpersona_index::{Isa, Kernels};
use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Rows per batch call: enough to amortise the call, small enough for callgrind.
const BATCH_ROWS: usize = 1_000;

/// Inputs for one batch dot: kernels (or `None` when the ISA is missing), query, rows.
type DotBatchInput = (Option<Kernels>, Vec<i8>, Vec<i8>);
/// Inputs for one batch Hamming: kernels (or `None`), query words, row words.
type HammingBatchInput = (Option<Kernels>, Vec<u64>, Vec<u64>);

fn kernels_for(isa: Isa) -> Option<Kernels> {
    let kernels = Kernels::for_isa(isa);
    if kernels.is_none() {
        eprintln!("kernels_iai: skipping {isa:?} (not available on this CPU)");
    }
    kernels
}

fn dot_batch_input(isa: Isa, dim: usize) -> DotBatchInput {
    let mut rng = StdRng::seed_from_u64(42);
    let query = (0..dim).map(|_| rng.random()).collect();
    let rows = (0..BATCH_ROWS * dim).map(|_| rng.random()).collect();
    (kernels_for(isa), query, rows)
}

fn hamming_batch_input(isa: Isa, words: usize) -> HammingBatchInput {
    let mut rng = StdRng::seed_from_u64(43);
    let query = (0..words).map(|_| rng.random()).collect();
    let rows = (0..BATCH_ROWS * words).map(|_| rng.random()).collect();
    (kernels_for(isa), query, rows)
}

#[library_benchmark]
#[bench::scalar_384(dot_batch_input(Isa::Scalar, 384))]
#[bench::avx2_384(dot_batch_input(Isa::Avx2, 384))]
#[bench::scalar_1024(dot_batch_input(Isa::Scalar, 1024))]
#[bench::avx2_1024(dot_batch_input(Isa::Avx2, 1024))]
fn dot_i8_batch((kernels, query, rows): DotBatchInput) -> Vec<i32> {
    let mut out = vec![0_i32; BATCH_ROWS];
    if let Some(kernels) = kernels {
        kernels.dot_i8_batch(&query, &rows, query.len(), &mut out);
    }
    black_box(out)
}

#[library_benchmark]
#[bench::scalar_384(dot_batch_input(Isa::Scalar, 384))]
#[bench::avx2_384(dot_batch_input(Isa::Avx2, 384))]
fn dot_i8_single((kernels, query, rows): DotBatchInput) -> i32 {
    kernels.map_or(0, |kernels| kernels.dot_i8(&query, &rows[..query.len()]))
}

#[library_benchmark]
#[bench::scalar_6_words(hamming_batch_input(Isa::Scalar, 6))]
#[bench::avx2_6_words(hamming_batch_input(Isa::Avx2, 6))]
#[bench::scalar_16_words(hamming_batch_input(Isa::Scalar, 16))]
#[bench::avx2_16_words(hamming_batch_input(Isa::Avx2, 16))]
fn hamming_batch((kernels, query, rows): HammingBatchInput) -> Vec<u32> {
    let mut out = vec![0_u32; BATCH_ROWS];
    if let Some(kernels) = kernels {
        kernels.hamming_batch(&query, &rows, &mut out);
    }
    black_box(out)
}

library_benchmark_group!(
    name = kernels;
    benchmarks = dot_i8_batch, dot_i8_single, hamming_batch
);

main!(library_benchmark_groups = kernels);
