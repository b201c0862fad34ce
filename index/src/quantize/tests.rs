//! Unit tests of quantisation: codes, scales, sign bits and the documented error bound.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

fn unit(rng: &mut StdRng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

#[test]
fn codes_reconstruct_within_half_a_step() {
    let mut rng = StdRng::seed_from_u64(1);
    for dim in [1, 3, 64, 65, 384] {
        let v = unit(&mut rng, dim);
        let q = QueryCodes::new(&v, Dim::new(dim).unwrap()).unwrap();
        assert_eq!(q.codes().len(), dim.div_ceil(64) * 64);
        assert!(q.codes()[dim..].iter().all(|&c| c == 0), "padding is zero");
        assert!(q.codes().iter().all(|&c| c != -128));
        for (i, &x) in v.iter().enumerate() {
            let err = (x - q.scale() * f32::from(q.codes()[i])).abs();
            assert!(
                err <= q.scale() * 0.5 + 1e-6,
                "dim {dim} i {i}: err {err} scale {}",
                q.scale()
            );
        }
        let max = q.codes().iter().map(|c| c.unsigned_abs()).max().unwrap();
        assert_eq!(max, 127, "the largest component maps to ±127");
    }
}

#[test]
fn sign_bits_are_lsb_first_and_padding_zero() {
    let mut v = vec![-0.5f32; 70];
    v[0] = 0.1;
    v[63] = 0.2;
    v[64] = 0.3;
    v[69] = 0.0; // Zero is not positive.
    let q = QueryCodes::new(&v, Dim::new(70).unwrap()).unwrap();
    assert_eq!(q.signs(), &[1u64 | (1u64 << 63), 1u64]);
}

#[test]
fn estimate_stays_within_the_documented_bound() {
    let mut rng = StdRng::seed_from_u64(7);
    for dim in [8, 100, 384, 768] {
        let d = Dim::new(dim).unwrap();
        let mut worst_ratio = 0.0f32;
        for _ in 0..200 {
            let a = unit(&mut rng, dim);
            let b = unit(&mut rng, dim);
            let qa = QueryCodes::new(&a, d).unwrap();
            let qb = QueryCodes::new(&b, d).unwrap();
            let truth: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let dot: i32 = qa
                .codes()
                .iter()
                .zip(qb.codes())
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            let est = score(dot, qa.scale(), qb.scale());
            let bound = error_bound(dim, qa.scale(), qb.scale(), 1.0, 1.0);
            let err = (truth - est).abs();
            assert!(err <= bound + 1e-5, "dim {dim}: err {err} > bound {bound}");
            worst_ratio = worst_ratio.max(err / bound);
        }
        // The bound is a worst case; typical errors sit well below it.
        assert!(
            worst_ratio < 0.5,
            "dim {dim}: worst err/bound {worst_ratio}"
        );
    }
}

#[test]
fn wrong_length_and_non_finite_are_errors() {
    let d = Dim::new(4).unwrap();
    assert!(matches!(
        QueryCodes::new(&[0.0; 3], d),
        Err(Error::Dim {
            expected: 4,
            found: 3
        })
    ));
    assert!(matches!(
        QueryCodes::new(&[0.0, f32::NAN, 0.0, 0.0], d),
        Err(Error::NonFinite { .. })
    ));
    let zero = QueryCodes::new(&[0.0; 4], d).unwrap();
    assert_eq!(zero.scale(), 0.0);
    assert!(zero.codes().iter().all(|&c| c == 0));
}
