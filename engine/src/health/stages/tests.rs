//! The judging alone: the verdict follows the worst finding, the fallback embedder and a
//! store of another model are warnings, and a partial arm reports its honest share.

use super::facts::{EmbedderFacts, ModelRows, TableVectors};
use super::{Finding, Severity, canonical, status, vectors};

fn embedder(model: &str, store_model: &str) -> EmbedderFacts {
    EmbedderFacts {
        model_id: model.into(),
        dim: 384,
        is_fallback: model == "hash-ngram-v1",
        degraded: None,
        store_model_id: store_model.into(),
        store_dim: 384,
        store_matches: model == store_model,
        reembed_from: None,
    }
}

fn table(rows: u64, current: u64, missing: u64, other: u64) -> TableVectors {
    TableVectors {
        table: "memories",
        rows,
        current,
        missing,
        missing_queued: 0,
        other: if other > 0 {
            vec![ModelRows {
                model_id: "hash-ngram-v1".into(),
                dim: 384,
                rows: other,
            }]
        } else {
            Vec::new()
        },
    }
}

#[test]
fn status_is_the_worst_finding_and_info_never_degrades() {
    let ok = Finding::ok("a", "fine");
    let info = Finding::new("b", Severity::Info, "note");
    let warn = Finding::new("c", Severity::Warning, "slow");
    let err = Finding::new("d", Severity::Error, "broken");
    assert_eq!(status(&[ok.clone(), info.clone()]), "healthy");
    assert_eq!(
        status(&[ok.clone(), warn.clone(), info.clone()]),
        "degraded"
    );
    assert_eq!(status(&[warn, err, ok]), "unhealthy");
    assert_eq!(info.issue()["severity"], "info");
}

#[test]
fn the_fallback_embedder_is_a_warning_and_a_model_is_ok() {
    let fallback = vectors::embedder(&embedder("hash-ngram-v1", "hash-ngram-v1"));
    assert_eq!(fallback.severity, Severity::Warning, "{fallback:?}");
    assert!(fallback.reason.contains("fallback"), "{fallback:?}");
    let model = vectors::embedder(&embedder("minilm", "minilm"));
    assert_eq!(model.severity, Severity::Ok, "{model:?}");
}

#[test]
fn another_models_store_skips_the_arm_and_the_share_says_so() {
    let facts = embedder("minilm", "hash-ngram-v1");
    let tables = [table(4, 0, 0, 4)];
    let mismatch = vectors::embedding_model(&facts, &tables);
    assert_eq!(mismatch.severity, Severity::Warning);
    assert!(
        mismatch.reason.contains("vector arm skipped"),
        "{mismatch:?}"
    );
    assert_eq!(mismatch.count, Some(4));
    let coverage = vectors::vector_coverage(&facts, &tables);
    assert_eq!(coverage.severity, Severity::Warning);
    assert_eq!(coverage.detail["searchable"], 0);
}

#[test]
fn a_half_re_embedded_store_reports_half() {
    let facts = embedder("minilm", "minilm");
    let tables = [table(10, 5, 1, 4)];
    let coverage = vectors::vector_coverage(&facts, &tables);
    assert_eq!(coverage.severity, Severity::Warning);
    assert_eq!(coverage.detail["share"], 0.5);
    assert_eq!(coverage.count, Some(5));
    let full = vectors::vector_coverage(&facts, &[table(10, 10, 0, 0)]);
    assert_eq!(full.severity, Severity::Ok, "{full:?}");
}

#[test]
fn aliases_map_to_registry_names() {
    assert_eq!(canonical("integrity"), Some("sqlite_integrity"));
    assert_eq!(canonical("fts_integrity"), Some("fts_integrity"));
    assert_eq!(canonical("nope"), None);
}

#[test]
fn inert_settings_inform_and_an_unknown_name_warns() {
    use super::facts::UnusedSetting;
    let setting = |name: &str, status: &str| UnusedSetting {
        name: name.to_owned(),
        status: status.to_owned(),
        note: String::new(),
    };
    assert_eq!(super::store::settings(&[]).severity, Severity::Ok);
    let inert = [setting("CPERSONA_EMBEDDING_CACHE_SIZE", "inert")];
    assert_eq!(super::store::settings(&inert).severity, Severity::Info);
    let typo = [
        setting("CPERSONA_EMBEDDING_CACHE_SIZE", "inert"),
        setting("CPERSONA_RRF_KK", "unknown"),
    ];
    let finding = super::store::settings(&typo);
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.count, Some(2));
}
