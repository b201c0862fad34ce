//! Unit tests of the report: slopes and that the renderings carry every rung.

use super::*;

fn rung(rows: usize, vector_p50: f64) -> Rung {
    Rung {
        rows,
        vector: Pct {
            p50: vector_p50,
            p95: vector_p50 * 2.0,
        },
        stages: vec![Pct { p50: 1.0, p95: 2.0 }; STAGES.len()],
        ..Default::default()
    }
}

#[test]
fn slope_is_the_log_log_exponent() {
    let rungs = [rung(1_000, 0.1), rung(100_000, 10.0)];
    let s = slope(&rungs, |r| r.vector.p50).expect("two positive rungs");
    assert!((s - 1.0).abs() < 1e-9, "{s}");
    assert_eq!(slope(&rungs[..1], |r| r.vector.p50), None);
    assert_eq!(slope(&rungs, |_| 0.0), None);
}

#[test]
fn renderings_carry_every_rung() {
    let rungs = [rung(1_000, 0.1), rung(10_000, 0.5)];
    let text = render_text(&Header::default(), &rungs);
    assert!(text.contains("10000 rows") && text.contains("n/a (not built)"));
    let csv = to_csv(&rungs);
    assert_eq!(csv.lines().count(), 3);
    let json = to_json(&Header::default(), &rungs);
    assert_eq!(json["rungs"].as_array().map(Vec::len), Some(2));
}
