//! `RecallConfig`: defaults validate, bad values are refused.

use crate::recall::RecallError;
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::fusion::ArmWeights;
use crate::recall::stages::select::RecallDepth;

#[test]
fn defaults_are_the_documented_constants_and_validate() {
    let config = RecallConfig::default();
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(
        (
            config.rrf_k,
            config.shape.preview_chars,
            config.shape.excerpt_chars
        ),
        (60.0, 500, 800)
    );
    assert_eq!(config.depth.per_arm(), RecallDepth::DEFAULT);
}

#[test]
fn bad_values_are_refused() {
    let bad_k = RecallConfig {
        rrf_k: f64::NAN,
        ..RecallConfig::default()
    };
    assert!(matches!(
        bad_k.validate(),
        Err(RecallError::InvalidSetting { name: "rrf_k", .. })
    ));
    let bad_w = RecallConfig {
        weights: ArmWeights {
            vector_far: -1.0,
            ..ArmWeights::default()
        },
        ..RecallConfig::default()
    };
    assert!(matches!(
        bad_w.validate(),
        Err(RecallError::InvalidSetting {
            name: "weights",
            ..
        })
    ));
    let bad_depth = RecallConfig {
        depth: RecallDepth {
            floor: 5,
            default: 1,
            max: 10,
        },
        ..RecallConfig::default()
    };
    assert!(matches!(
        bad_depth.validate(),
        Err(RecallError::InvalidDepth { .. })
    ));
}
