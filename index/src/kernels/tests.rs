//! Every kernel variant this CPU runs must equal the naive scalar reference exactly, for every
//! operation, at lengths around each ISA's register width, with −128/127 extremes and slices
//! misaligned by one byte. Variants the CPU lacks are skipped by name, never silently.

use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Isa, Kernels, scalar};

/// Dot lengths: 0, 1, and lanes−1 / lanes / lanes+1 for 16, 32 and 64-byte registers, then
/// 65, 129 and the embedding sizes.
const DOT_LENGTHS: &[usize] = &[
    0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 384, 768, 1024,
];

/// Hamming lengths in words: around 2, 4 and 8-word registers, plus 6/12/16 (384/768/1024
/// dims) and 65 and 129.
const HAMMING_LENGTHS: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 65, 129];

/// How a test fills its i8 inputs.
#[derive(Clone, Copy, Debug)]
enum Fill {
    Uniform,
    Extremes,
    AllMin,
    AllMax,
    Edgy,
}

fn fill_strategy() -> impl Strategy<Value = Fill> {
    prop_oneof![
        3 => Just(Fill::Uniform),
        2 => Just(Fill::Extremes),
        1 => Just(Fill::AllMin),
        1 => Just(Fill::AllMax),
        2 => Just(Fill::Edgy),
    ]
}

fn random_i8(rng: &mut StdRng, fill: Fill) -> i8 {
    const EDGY: [i8; 7] = [-128, -127, -1, 0, 1, 126, 127];
    match fill {
        Fill::Uniform => rng.random(),
        Fill::Extremes => {
            if rng.random() {
                i8::MIN
            } else {
                i8::MAX
            }
        }
        Fill::AllMin => i8::MIN,
        Fill::AllMax => i8::MAX,
        Fill::Edgy => EDGY[rng.random_range(0..EDGY.len())],
    }
}

/// `len` bytes starting one byte into a fresh buffer when `misalign` is set.
fn i8_buffer(rng: &mut StdRng, fill: Fill, len: usize, misalign: bool) -> (Vec<i8>, usize) {
    let offset = usize::from(misalign);
    let buf = (0..len + offset).map(|_| random_i8(rng, fill)).collect();
    (buf, offset)
}

fn u64_buffer(rng: &mut StdRng, len: usize, misalign: bool) -> (Vec<u64>, usize) {
    let offset = usize::from(misalign);
    ((0..len + offset).map(|_| rng.random()).collect(), offset)
}

fn each_variant(mut check: impl FnMut(Kernels)) {
    for kernels in Kernels::variants() {
        check(kernels);
    }
}

#[test]
fn available_isas_are_listed_and_detect_picks_the_best() {
    let available = Kernels::available();
    for isa in Isa::ALL {
        if available.contains(&isa) {
            eprintln!("kernels: testing {isa:?}");
        } else {
            eprintln!("kernels: skipping {isa:?} (not available on this CPU)");
        }
    }
    for kernels in Kernels::variants() {
        eprintln!(
            "kernels: variant {} ({:?})",
            kernels.variant(),
            kernels.isa()
        );
    }
    assert!(available.contains(&Isa::Scalar));
    assert!(available.contains(&Isa::Portable));
    assert_eq!(Kernels::detect().isa(), available[0]);
    assert_eq!(Kernels::scalar().isa(), Isa::Scalar);
    for isa in Isa::ALL {
        assert_eq!(
            Kernels::for_isa(isa).map(|k| k.isa()),
            available.contains(&isa).then_some(isa)
        );
    }
    #[cfg(target_arch = "x86_64")]
    {
        let best = if is_x86_feature_detected!("avx512bw") {
            Isa::Avx512
        } else if is_x86_feature_detected!("avx2") {
            Isa::Avx2
        } else {
            Isa::Portable
        };
        assert_eq!(Kernels::detect().isa(), best);
    }
}

#[test]
fn all_min_and_all_max_are_exact_at_every_length() {
    let min_1024 = [i8::MIN; 1024];
    let max_1024 = [i8::MAX; 1024];
    each_variant(|kernels| {
        for &len in DOT_LENGTHS {
            let len_i32 = i32::try_from(len).unwrap();
            let (min, max) = (&min_1024[..len], &max_1024[..len]);
            let name = kernels.variant();
            assert_eq!(
                kernels.dot_i8(min, min),
                16384 * len_i32,
                "{name} len {len}"
            );
            assert_eq!(
                kernels.dot_i8(min, max),
                -16256 * len_i32,
                "{name} len {len}"
            );
            assert_eq!(
                kernels.dot_i8(max, max),
                16129 * len_i32,
                "{name} len {len}"
            );
            let rows = [min_1024, min_1024, min_1024, min_1024, min_1024].concat();
            let mut out = [0_i32; 5];
            kernels.dot_i8_batch(min, &rows, 1024, &mut out);
            assert_eq!(out, [16384 * len_i32; 5], "{name} batch len {len}");
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn dot_equals_scalar(
        len in prop::sample::select(DOT_LENGTHS),
        fill in fill_strategy(),
        seed in any::<u64>(),
        misalign_a in any::<bool>(),
        misalign_b in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (a, a_off) = i8_buffer(&mut rng, fill, len, misalign_a);
        let (b, b_off) = i8_buffer(&mut rng, fill, len, misalign_b);
        let (a, b) = (&a[a_off..], &b[b_off..]);
        let expected = scalar::dot_i8_scalar(a, b);
        each_variant(|kernels| {
            assert_eq!(kernels.dot_i8(a, b), expected, "{} len {len}", kernels.variant());
        });
    }

    #[test]
    fn hamming_equals_scalar(
        words in prop::sample::select(HAMMING_LENGTHS),
        seed in any::<u64>(),
        misalign in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (a, a_off) = u64_buffer(&mut rng, words, misalign);
        let (b, _) = u64_buffer(&mut rng, words, false);
        let a = &a[a_off..];
        let expected = scalar::hamming_scalar(a, &b);
        each_variant(|kernels| {
            assert_eq!(kernels.hamming(a, &b), expected, "{} words {words}", kernels.variant());
        });
    }

    #[test]
    fn dot_batch_and_gather_equal_scalar(
        dim in prop::sample::select(DOT_LENGTHS),
        extra in prop::sample::select(&[0_usize, 1, 7, 64][..]),
        n_rows in 0_usize..11,
        fill in fill_strategy(),
        seed in any::<u64>(),
        misalign in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let stride = dim + extra;
        // The padding after `dim` is random: a kernel that reads it gets a different answer.
        let (query, q_off) = i8_buffer(&mut rng, fill, dim, misalign);
        let (rows, r_off) = i8_buffer(&mut rng, fill, n_rows * stride, !misalign);
        let (query, rows) = (&query[q_off..], &rows[r_off..]);
        let mut expected = vec![0; n_rows];
        scalar::dot_i8_batch_scalar(query, rows, stride, &mut expected);
        let n_listed = if n_rows == 0 { 0 } else { rng.random_range(0..13) };
        let row_indices: Vec<u32> =
            (0..n_listed).map(|_| rng.random_range(0..n_rows as u32)).collect();
        let mut expected_gather = vec![0; n_listed];
        scalar::dot_i8_gather_scalar(query, rows, stride, &row_indices, &mut expected_gather);
        each_variant(|kernels| {
            let name = kernels.variant();
            let mut out = vec![i32::MIN; n_rows];
            kernels.dot_i8_batch(query, rows, stride, &mut out);
            assert_eq!(out, expected, "{name} batch dim {dim} stride {stride}");
            let mut out = vec![i32::MIN; n_listed];
            kernels.dot_i8_gather(query, rows, stride, &row_indices, &mut out);
            assert_eq!(out, expected_gather, "{name} gather dim {dim} stride {stride}");
        });
    }

    #[test]
    fn hamming_batch_equals_scalar(
        words in prop::sample::select(HAMMING_LENGTHS),
        n_rows in 0_usize..11,
        seed in any::<u64>(),
        misalign in any::<bool>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (query, _) = u64_buffer(&mut rng, words, false);
        let (rows, r_off) = u64_buffer(&mut rng, n_rows * words, misalign);
        let rows = &rows[r_off..];
        let mut expected = vec![0; n_rows];
        scalar::hamming_batch_scalar(&query, rows, &mut expected);
        each_variant(|kernels| {
            let mut out = vec![u32::MAX; n_rows];
            kernels.hamming_batch(&query, rows, &mut out);
            assert_eq!(out, expected, "{} words {words}", kernels.variant());
        });
    }
}

#[test]
fn batch_uses_only_the_rows_it_is_asked_for() {
    // Rows past `out.len()` may be garbage or absent; the kernels must not need them.
    let query = [3_i8; 384];
    let rows = vec![1_i8; 384 * 7];
    each_variant(|kernels| {
        let mut out = [0_i32; 6];
        kernels.dot_i8_batch(&query, &rows[..384 * 6], 384, &mut out);
        assert_eq!(out, [1152; 6], "{}", kernels.variant());
    });
}
