//! Calibrates the gate's cosine threshold from the corpus: a null distribution of cosines
//! between rows of different sessions against a positive distribution of cosines between
//! rows of the same session, and the separation point between them. Pure and deterministic
//! given the seed; the caller stores the result (in SQLite) and never runs it per recall.
//!
//! CPersona's method (reference 2.5 §6.1), with two of its debts paid: vectors are
//! normalised before the dot product (CPersona compares raw dots, bug-250), and the null
//! population leaves out same-session pairs (CPersona's includes them). Its positive proxy
//! is temporal adjacency within 30 minutes; here it is session membership, which the caller
//! may derive the same way. Rows are sampled with a seeded RNG instead of `ORDER BY RANDOM()`.

use std::collections::HashMap;
use std::hash::Hash;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::index::sample;
use serde::Serialize;

use super::gate::round4;

/// How the threshold is placed on the null distribution (CPersona's `method`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub enum ThresholdMethod {
    /// The point that best separates the null from the positive pairs, `TPR + β·(1 − FPR)`.
    #[default]
    Separation,
    /// This quantile of the null cosines (a fraction in (0, 1], linear interpolation as
    /// numpy's default): distribution-free, robust to anisotropic models.
    Percentile(f64),
    /// `mean + z·std` of the null cosines.
    ZScore(f64),
}

impl ThresholdMethod {
    /// CPersona's name for it.
    pub fn name(self) -> &'static str {
        match self {
            ThresholdMethod::Separation => "separation",
            ThresholdMethod::Percentile(_) => "percentile",
            ThresholdMethod::ZScore(_) => "zscore",
        }
    }
}

/// Calibration settings (the caller passes them; defaults are CPersona's).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CalibrationParams {
    /// How the threshold is placed (`separation` by default, as CPersona 2.6.14).
    pub method: ThresholdMethod,
    /// Seed of the sampler: the same seed and input give the same threshold.
    pub seed: u64,
    /// Rows sampled for the null distribution (CPersona: 200, up to 2,000); all pairs of
    /// different sessions among them are scored (19,900 pairs at most for 200).
    pub null_rows: usize,
    /// The most same-session pairs scored; more are sampled down.
    pub positive_pairs: usize,
    /// Weight of specificity in `TPR + β·(1 − FPR)`: 1.0 is Youden's J (CPersona's vector
    /// threshold), 2.0 strict, 0.5 lenient.
    pub beta: f64,
    /// Candidate thresholds swept between the smallest and largest cosine (CPersona: 256).
    pub sweep_points: usize,
    /// The threshold never goes below this (CPersona's `CALIBRATE_FLOOR`, 0.05). It is a
    /// cosine floor, on the cosine's own scale, never applied to a rank-fusion score.
    pub floor: f64,
    /// Fewest null pairs and positive pairs needed; below them there is no calibration.
    pub min_pairs: usize,
}

impl Default for CalibrationParams {
    fn default() -> CalibrationParams {
        CalibrationParams {
            method: ThresholdMethod::Separation,
            seed: 42,
            null_rows: 200,
            positive_pairs: 2_000,
            beta: 1.0,
            sweep_points: 256,
            floor: 0.05,
            min_pairs: 10,
        }
    }
}

/// A calibrated threshold and the statistics behind it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Calibration {
    /// The cosine threshold, rounded to 4 decimals and floored.
    pub threshold: f64,
    /// True when the floor, not the method's point, set the threshold.
    pub floored: bool,
    /// `"separation"`, `"percentile"` or `"zscore"`.
    pub method: &'static str,
    /// The quantile used (`percentile` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// The z used (`zscore` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub z_factor: Option<f64>,
    /// The seed used.
    pub seed: u64,
    /// Rows sampled for the null.
    pub sampled_rows: usize,
    /// Null pairs scored.
    pub null_pairs: usize,
    /// Positive pairs scored.
    pub positive_pairs: usize,
    /// Mean of the null cosines.
    pub null_mean: f64,
    /// Standard deviation (population) of the null cosines.
    pub null_std: f64,
    /// Mean of the positive cosines.
    pub positive_mean: f64,
    /// Share of null pairs at or above the threshold.
    pub null_admit_rate: f64,
    /// Share of positive pairs at or above the threshold.
    pub positive_admit_rate: f64,
    /// `TPR − FPR` at the threshold.
    pub youden_j: f64,
}

pub use crate::error::CalibrationError;

/// Calibrates from `vectors[i]` (any length, any norm; zero, non-finite or off-width rows
/// are skipped) labelled with `sessions[i]`. Positive pairs are consecutive members of each
/// session in input order (pass rows in time order to mirror CPersona's temporal pairs).
pub fn calibrate<S: Eq + Hash>(
    vectors: &[&[f32]],
    sessions: &[S],
    params: &CalibrationParams,
) -> Result<Calibration, CalibrationError> {
    if vectors.len() != sessions.len() {
        return Err(CalibrationError::LengthMismatch {
            vectors: vectors.len(),
            sessions: sessions.len(),
        });
    }
    let width = modal_width(vectors);
    let unit: Vec<Option<Vec<f64>>> = vectors.iter().map(|v| normalised(v, width)).collect();
    let usable: Vec<usize> = (0..vectors.len()).filter(|&i| unit[i].is_some()).collect();
    let mut rng = StdRng::seed_from_u64(params.seed);

    let mut picked: Vec<usize> = if usable.len() <= params.null_rows {
        usable.clone()
    } else {
        sample(&mut rng, usable.len(), params.null_rows)
            .into_iter()
            .map(|i| usable[i])
            .collect()
    };
    picked.sort_unstable();
    let mut null = Vec::new();
    for (a, &i) in picked.iter().enumerate() {
        for &j in &picked[a + 1..] {
            if sessions[i] != sessions[j] {
                null.push(cosine(&unit, i, j));
            }
        }
    }

    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut last_of_session: HashMap<&S, usize> = HashMap::new();
    for &j in &usable {
        if let Some(i) = last_of_session.insert(&sessions[j], j) {
            pairs.push((i, j));
        }
    }
    if pairs.len() > params.positive_pairs {
        let mut keep: Vec<usize> = sample(&mut rng, pairs.len(), params.positive_pairs).into_vec();
        keep.sort_unstable();
        pairs = keep.into_iter().map(|k| pairs[k]).collect();
    }
    let mut positive: Vec<f64> = pairs.iter().map(|&(i, j)| cosine(&unit, i, j)).collect();

    // Only the separation point needs positive pairs; the null methods report them when
    // there are any.
    let needs_positive = params.method == ThresholdMethod::Separation;
    if null.len() < params.min_pairs || (needs_positive && positive.len() < params.min_pairs) {
        return Err(CalibrationError::TooFewPairs {
            null_pairs: null.len(),
            positive_pairs: positive.len(),
            needed: params.min_pairs,
        });
    }
    null.sort_by(f64::total_cmp);
    positive.sort_by(f64::total_cmp);
    let (null_mean, null_std) = mean_std(&null);
    let raw = match params.method {
        ThresholdMethod::Separation => separation(&null, &positive, params),
        ThresholdMethod::Percentile(q) => quantile(&null, q),
        ThresholdMethod::ZScore(z) => null_mean + z * null_std,
    };
    let threshold = round4(raw.max(params.floor));
    // A cosine no vector can reach would leave the vector arm empty (CPersona refuses it).
    if threshold > 1.0 {
        return Err(CalibrationError::AboveOne {
            threshold,
            method: params.method.name(),
        });
    }
    let tpr = admit(&positive, threshold);
    let fpr = admit(&null, threshold);
    Ok(Calibration {
        threshold,
        floored: raw < params.floor,
        method: params.method.name(),
        percentile: match params.method {
            ThresholdMethod::Percentile(q) => Some(q),
            _ => None,
        },
        z_factor: match params.method {
            ThresholdMethod::ZScore(z) => Some(z),
            _ => None,
        },
        seed: params.seed,
        sampled_rows: picked.len(),
        null_pairs: null.len(),
        positive_pairs: positive.len(),
        null_mean: round4(null_mean),
        null_std: round4(null_std),
        positive_mean: round4(mean_std(&positive).0),
        null_admit_rate: round4(fpr),
        positive_admit_rate: round4(tpr),
        youden_j: round4(tpr - fpr),
    })
}

/// The share of `sorted` (ascending) at or above `t`.
fn admit(sorted: &[f64], t: f64) -> f64 {
    ratio(
        sorted.len() - sorted.partition_point(|&v| v < t),
        sorted.len(),
    )
}

/// The `q` quantile of `sorted` (ascending, non-empty), interpolated linearly between the
/// two nearest ranks, as numpy's default.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    sorted[below] + (sorted[above] - sorted[below]) * (position - below as f64)
}

/// The separation point, rounded: over `sweep_points` evenly spaced candidates between the
/// smallest and largest observed cosine (both lists sorted, non-empty), the first maximiser
/// of `TPR(t) + β·(1 − FPR(t))`.
fn separation(null: &[f64], positive: &[f64], params: &CalibrationParams) -> f64 {
    let lo = null[0].min(positive[0]);
    let hi = null[null.len() - 1].max(positive[positive.len() - 1]);
    let steps = params.sweep_points.max(2);
    let mut best = (f64::NEG_INFINITY, lo);
    for step in 0..steps {
        let t = lo + (hi - lo) * ratio(step, steps - 1);
        let objective = admit(positive, t) + params.beta * (1.0 - admit(null, t));
        if objective > best.0 {
            best = (objective, t);
        }
    }
    round4(best.1)
}

/// The most common vector length among non-empty rows (ties: the smaller length), so rows
/// of a swapped-out model are skipped rather than compared.
fn modal_width(vectors: &[&[f32]]) -> usize {
    let mut widths: Vec<usize> = vectors.iter().map(|v| v.len()).filter(|&w| w > 0).collect();
    widths.sort_unstable();
    let mut best = (0usize, 0usize);
    for run in widths.chunk_by(|a, b| a == b) {
        if run.len() > best.1 {
            best = (run[0], run.len());
        }
    }
    best.0
}

fn normalised(vector: &[f32], width: usize) -> Option<Vec<f64>> {
    if vector.len() != width || vector.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let norm = vector
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    (norm > 0.0).then(|| vector.iter().map(|&x| f64::from(x) / norm).collect())
}

fn cosine(unit: &[Option<Vec<f64>>], i: usize, j: usize) -> f64 {
    match (&unit[i], &unit[j]) {
        (Some(a), Some(b)) => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        _ => 0.0,
    }
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

fn mean_std(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}
