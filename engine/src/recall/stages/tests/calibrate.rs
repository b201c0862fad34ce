//! Calibration: deterministic given a seed, separates sessions, refuses too little data.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::recall::stages::calibrate::{CalibrationError, CalibrationParams, calibrate};

/// `sessions` clusters of `per` rows each: a shared direction plus noise, in `dim` dims.
fn corpus(
    sessions: usize,
    per: usize,
    dim: usize,
    noise: f32,
    seed: u64,
) -> (Vec<Vec<f32>>, Vec<usize>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut vectors = Vec::new();
    let mut labels = Vec::new();
    for s in 0..sessions {
        let centre: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect();
        for _ in 0..per {
            vectors.push(
                centre
                    .iter()
                    .map(|c| c + noise * rng.random_range(-1.0f32..1.0))
                    .collect(),
            );
            labels.push(s);
        }
    }
    (vectors, labels)
}

fn refs(vectors: &[Vec<f32>]) -> Vec<&[f32]> {
    vectors.iter().map(Vec::as_slice).collect()
}

#[test]
fn same_seed_same_threshold_and_sessions_separate() {
    let (vectors, labels) = corpus(20, 8, 32, 0.4, 7);
    let params = CalibrationParams {
        null_rows: 60,
        ..CalibrationParams::default()
    };
    let a = calibrate(&refs(&vectors), &labels, &params).expect("calibrates");
    let b = calibrate(&refs(&vectors), &labels, &params).expect("calibrates");
    assert_eq!(a, b);
    assert_eq!(a.sampled_rows, 60);
    assert_eq!(a.positive_pairs, 20 * 7);
    assert!(a.positive_mean > a.null_mean + 0.3, "{a:?}");
    assert!(a.youden_j > 0.8, "{a:?}");
    assert!(
        a.threshold > a.null_mean && a.threshold < a.positive_mean,
        "{a:?}"
    );
    let other = calibrate(
        &refs(&vectors),
        &labels,
        &CalibrationParams { seed: 8, ..params },
    )
    .expect("calibrates");
    assert_eq!(other.seed, 8);
}

#[test]
fn null_excludes_same_session_pairs() {
    let (vectors, labels) = corpus(5, 6, 16, 0.2, 3);
    let calibration =
        calibrate(&refs(&vectors), &labels, &CalibrationParams::default()).expect("calibrates");
    // 30 rows, 435 pairs, 5·15 = 75 of them inside a session.
    assert_eq!(calibration.null_pairs, 435 - 75);
}

#[test]
fn noise_alone_is_floored() {
    // Sessions with no shared direction: nothing separates, the floor holds the threshold up.
    let mut rng = StdRng::seed_from_u64(11);
    let vectors: Vec<Vec<f32>> = (0..80)
        .map(|_| (0..64).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect();
    let labels: Vec<usize> = (0..80).map(|i| i / 4).collect();
    let calibration =
        calibrate(&refs(&vectors), &labels, &CalibrationParams::default()).expect("calibrates");
    assert!(calibration.threshold >= 0.05);
}

#[test]
fn too_little_data_and_bad_rows_are_refused_or_skipped() {
    let (vectors, labels) = corpus(2, 3, 8, 0.1, 1);
    let err =
        calibrate(&refs(&vectors), &labels, &CalibrationParams::default()).expect_err("too few");
    assert!(
        matches!(
            err,
            CalibrationError::TooFewPairs {
                positive_pairs: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let err = calibrate(&refs(&vectors), &labels[..2], &CalibrationParams::default())
        .expect_err("mismatch");
    assert!(matches!(
        err,
        CalibrationError::LengthMismatch {
            vectors: 6,
            sessions: 2
        }
    ));

    let (mut vectors, labels) = corpus(10, 4, 8, 0.1, 2);
    vectors[0] = vec![0.0; 8];
    vectors[1] = vec![f32::NAN; 8];
    vectors[2] = vec![1.0; 3];
    let calibration =
        calibrate(&refs(&vectors), &labels, &CalibrationParams::default()).expect("calibrates");
    assert_eq!(calibration.sampled_rows, 37);
}

/// Pins the sampler: a change of RNG, sampling or sweep moves this golden and must say so.
#[test]
fn calibration_golden() {
    let (vectors, labels) = corpus(30, 6, 24, 0.6, 99);
    let params = CalibrationParams {
        null_rows: 100,
        positive_pairs: 50,
        ..CalibrationParams::default()
    };
    let calibration = calibrate(&refs(&vectors), &labels, &params).expect("calibrates");
    expect_test::expect![[r#"{"threshold":0.5586,"floored":false,"method":"separation","seed":42,"sampled_rows":100,"null_pairs":4816,"positive_pairs":50,"null_mean":-0.0116,"null_std":0.2048,"positive_mean":0.7303,"null_admit_rate":0.0012,"positive_admit_rate":1.0,"youden_j":0.9988}"#]].assert_eq(&serde_json::to_string(&calibration).expect("json"));
}
