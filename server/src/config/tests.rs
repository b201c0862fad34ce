//! Unit tests of configuration parsing: every case builds an `Env` from pairs, never from the
//! real process environment.

use super::*;

fn parse(pairs: &[(&str, &str)]) -> Result<Config> {
    Config::from_env(&Env::from_pairs(pairs), None)
}

fn err(pairs: &[(&str, &str)]) -> String {
    match parse(pairs) {
        Ok(config) => panic!("expected an error, got {config:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_match_the_reference() {
    let c = parse(&[]).unwrap();
    assert!(c.db_path.ends_with("cpersona.db"), "{:?}", c.db_path);
    assert!(matches!(c.embedder, EmbedderConfig::Builtin { .. }));
    assert_eq!(c.http.auth_token, None);
    assert!(!c.http.allow_unauthenticated);
    assert_eq!(c.http.max_body_bytes, 4_194_304);
    assert_eq!(c.http.env_bind, None);
    assert_eq!(c.writes.max_content_chars, 16_000);
    assert_eq!(c.writes.max_profile_chars, 2_000);
    assert_eq!(c.recall.scan_window, 10_000);
    assert_eq!(c.recall.mode, RecallMode::Rrf);
    assert_eq!(c.recall.rrf_k, 60);
    assert_eq!(c.recall.precision, Precision::Balanced);
    assert_eq!(c.recall.fused_gate_beta, 1.0);
    assert_eq!(c.recall.preview_chars, 500);
    assert_eq!(c.recall.excerpt_chars, 800);
    assert_eq!(c.reconstruct.max_count, 10);
    assert_eq!(c.reconstruct.default_count, 10);
    assert_eq!(c.reconstruct.top_k, 20);
    assert_eq!(c.reconstruct.tail_quote_chars, 400);
    assert_eq!(c.reconstruct.default_budget, 4_000);
    assert_eq!(c.reconstruct.max_budget, 20_000);
    assert_eq!(c.max_import_bytes, 104_857_600);
}

#[test]
fn db_path_flag_beats_env() {
    let env = Env::from_pairs(&[("CPERSONA_DB_PATH", "/tmp/a.db")]);
    let c = Config::from_env(&env, None).unwrap();
    assert_eq!(c.db_path, PathBuf::from("/tmp/a.db"));
    let c = Config::from_env(&env, Some(PathBuf::from("/tmp/b.db"))).unwrap();
    assert_eq!(c.db_path, PathBuf::from("/tmp/b.db"));
}

#[test]
fn empty_value_reads_as_unset() {
    let c = parse(&[("CPERSONA_RRF_K", "  "), ("CPERSONA_AUTH_TOKEN", "")]).unwrap();
    assert_eq!(c.recall.rrf_k, 60);
    assert_eq!(c.http.auth_token, None);
}

#[test]
fn embedder_modes() {
    let c = parse(&[
        ("CPERSONA_EMBEDDING_MODE", "http"),
        ("CPERSONA_EMBEDDING_URL", "http://127.0.0.1:8401/embed"),
    ])
    .unwrap();
    assert_eq!(
        c.embedder,
        EmbedderConfig::Http {
            url: "http://127.0.0.1:8401/embed".into(),
            timeout_secs: 30
        }
    );
    let c = parse(&[("EMBEDDING_MODE", "none")]).unwrap();
    assert_eq!(c.embedder, EmbedderConfig::None);
    // The prefixed name wins over the legacy one.
    let c = parse(&[
        ("EMBEDDING_MODE", "http"),
        ("CPERSONA_EMBEDDING_MODE", "none"),
    ])
    .unwrap();
    assert_eq!(c.embedder, EmbedderConfig::None);
    let c = parse(&[
        ("CPERSONA_EMBEDDING_MODE", "api"),
        ("EMBEDDING_API_KEY", "sk-x"),
        ("CPERSONA_EMBEDDING_MODEL", "nomic-embed-text"),
    ])
    .unwrap();
    assert_eq!(
        c.embedder,
        EmbedderConfig::Api {
            url: "https://api.openai.com/v1/embeddings".into(),
            api_key: Some("sk-x".into()),
            model: "nomic-embed-text".into(),
            timeout_secs: 30
        }
    );
    let c = parse(&[("CPERSONA_MODEL_DIR", "/models/minilm")]).unwrap();
    assert_eq!(
        c.embedder,
        EmbedderConfig::Builtin {
            model_dir: PathBuf::from("/models/minilm")
        }
    );
}

#[test]
fn embedder_errors_name_the_variable() {
    let e = err(&[("CPERSONA_EMBEDDING_MODE", "magic")]);
    assert!(
        e.starts_with("CPERSONA_EMBEDDING_MODE=\"magic\" is invalid"),
        "{e}"
    );
    let e = err(&[("CPERSONA_EMBEDDING_MODE", "http")]);
    assert!(e.starts_with("CPERSONA_EMBEDDING_URL must be set"), "{e}");
    let e = err(&[
        ("CPERSONA_EMBEDDING_MODE", "http"),
        ("EMBEDDING_HTTP_URL", "ftp://x"),
    ]);
    assert!(
        e.starts_with("EMBEDDING_HTTP_URL=\"ftp://x\" is invalid"),
        "{e}"
    );
}

#[test]
fn invalid_numbers_words_and_booleans_are_errors() {
    let cases: &[(&str, &str)] = &[
        ("CPERSONA_RRF_K", "sixty"),
        ("CPERSONA_RRF_K", "0"),
        ("CPERSONA_RRF_K", "-1"),
        ("CPERSONA_MAX_MEMORIES", "0"),
        ("CPERSONA_RECALL_MODE", "bm25"),
        ("CPERSONA_RECALL_MODE", "cascade"),
        ("CPERSONA_RECALL_PRECISION", "exact"),
        ("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", "sure"),
        ("CPERSONA_CALIBRATE_SAMPLE_SIZE", "2001"),
        ("CPERSONA_CALIBRATE_METHOD", "temporal"),
        ("CPERSONA_TASK_MAX_RETRIES", "0"),
        ("CPERSONA_NEAR_DUPLICATE_ROW_CAP", "1"),
        ("CPERSONA_HTTP_MAX_BODY_BYTES", "10"),
        ("CPERSONA_TRANSPORT", "websocket"),
        ("CPERSONA_RECONSTRUCT_MAX_HOPS", "6"),
        ("CPERSONA_FUTURE_TIMESTAMP_MODE", "ignore"),
    ];
    for (var, value) in cases {
        let e = err(&[(var, value)]);
        assert!(e.starts_with(var), "{var}={value}: {e}");
    }
}

#[test]
fn booleans_accept_the_reference_spellings() {
    for yes in ["true", "TRUE", "1", "yes", "on"] {
        let c = parse(&[("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", yes)]).unwrap();
        assert!(c.http.allow_unauthenticated, "{yes}");
    }
    for no in ["false", "0", "no", "off"] {
        let c = parse(&[("CPERSONA_DEGRADED_ADVISORY", no)]).unwrap();
        assert!(!c.recall.degraded_advisory, "{no}");
    }
}

#[test]
fn precision_sets_beta_unless_beta_is_given() {
    let c = parse(&[("CPERSONA_RECALL_PRECISION", "strict")]).unwrap();
    assert_eq!(c.recall.fused_gate_beta, 2.0);
    let c = parse(&[
        ("CPERSONA_RECALL_PRECISION", "strict"),
        ("CPERSONA_FUSED_GATE_BETA", "0.7"),
    ])
    .unwrap();
    assert_eq!(c.recall.fused_gate_beta, 0.7);
}

#[test]
fn transport_env_gives_a_bind_address() {
    let c = parse(&[("CPERSONA_TRANSPORT", "streamable-http")]).unwrap();
    assert_eq!(c.http.env_bind, Some("127.0.0.1:8402".parse().unwrap()));
    let c = parse(&[
        ("CPERSONA_TRANSPORT", "streamable-http"),
        ("CPERSONA_HTTP_HOST", "0.0.0.0"),
        ("CPERSONA_HTTP_PORT", "9000"),
    ])
    .unwrap();
    assert_eq!(c.http.env_bind, Some("0.0.0.0:9000".parse().unwrap()));
    let e = err(&[
        ("CPERSONA_TRANSPORT", "streamable-http"),
        ("CPERSONA_HTTP_PORT", "70000"),
    ]);
    assert!(e.starts_with("CPERSONA_HTTP_PORT"), "{e}");
}

#[test]
fn allowed_origin_and_host_lists() {
    let c = parse(&[
        (
            "CPERSONA_HTTP_ALLOWED_ORIGINS",
            "https://claude.ai, https://app.example.com:443 ,",
        ),
        ("CPERSONA_HTTP_ALLOWED_HOSTS", "mem.example.com"),
    ])
    .unwrap();
    assert_eq!(
        c.http.extra_allowed_origins,
        vec!["https://claude.ai", "https://app.example.com:443"]
    );
    assert_eq!(c.http.extra_allowed_hosts, vec!["mem.example.com"]);
}

#[test]
fn reconstruct_cross_checks() {
    let e = err(&[("CPERSONA_RECONSTRUCT_DEFAULT_COUNT", "11")]);
    assert!(
        e.starts_with("CPERSONA_RECONSTRUCT_DEFAULT_COUNT conflicts with"),
        "{e}"
    );
    let e = err(&[("CPERSONA_RECONSTRUCT_FORCED_COUNT", "12")]);
    assert!(
        e.starts_with("CPERSONA_RECONSTRUCT_FORCED_COUNT conflicts with"),
        "{e}"
    );
    let e = err(&[("CPERSONA_RECONSTRUCT_MAX_BUDGET", "400")]);
    assert!(
        e.starts_with("CPERSONA_RECONSTRUCT_MAX_BUDGET conflicts with"),
        "{e}"
    );
    let e = err(&[("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", "30000")]);
    assert!(e.contains("above the maximum budget"), "{e}");
    let e = err(&[("CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS", "900")]);
    assert!(
        e.starts_with("CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS"),
        "{e}"
    );
    // The default count follows a lowered maximum down.
    let c = parse(&[("CPERSONA_RECONSTRUCT_MAX_COUNT", "4")]).unwrap();
    assert_eq!(c.reconstruct.default_count, 4);
    let c = parse(&[("CPERSONA_RECONSTRUCT_FORCED_BUDGET", "5000")]).unwrap();
    assert_eq!(c.reconstruct.forced_budget, Some(5_000));
}

#[test]
fn cosine_ceil_must_be_above_floor() {
    let e = err(&[("CPERSONA_COSINE_FLOOR", "0.8")]);
    assert!(
        e.starts_with("CPERSONA_COSINE_CEIL conflicts with CPERSONA_COSINE_FLOOR"),
        "{e}"
    );
}

#[test]
fn index_stale_warn_share_is_a_share() {
    assert_eq!(parse(&[]).unwrap().recall.index_stale_warn_share, 0.2);
    let c = parse(&[("CPERSONA_INDEX_STALE_WARN_SHARE", "0.5")]).unwrap();
    assert_eq!(c.recall.index_stale_warn_share, 0.5);
    let e = err(&[("CPERSONA_INDEX_STALE_WARN_SHARE", "1.5")]);
    assert!(e.starts_with("CPERSONA_INDEX_STALE_WARN_SHARE="), "{e}");
}

#[test]
fn lexical_cap_is_off_or_at_least_the_depth_maximum() {
    assert_eq!(parse(&[]).unwrap().recall.lexical_cap, Some(100));
    let c = parse(&[("CPERSONA_RECALL_LEXICAL_CAP", "off")]).unwrap();
    assert_eq!(c.recall.lexical_cap, None);
    let c = parse(&[("CPERSONA_RECALL_LEXICAL_CAP", "500")]).unwrap();
    assert_eq!(c.recall.lexical_cap, Some(500));
    for bad in ["99", "0", "many", "-1"] {
        let e = err(&[("CPERSONA_RECALL_LEXICAL_CAP", bad)]);
        assert!(e.starts_with("CPERSONA_RECALL_LEXICAL_CAP="), "{bad}: {e}");
    }
}

#[test]
fn adaptive_fusion_is_a_switch_off_by_default() {
    assert!(!parse(&[]).unwrap().recall.adaptive_fusion);
    let c = parse(&[("CPERSONA_RECALL_ADAPTIVE_FUSION", "true")]).unwrap();
    assert!(c.recall.adaptive_fusion);
    let c = parse(&[("CPERSONA_RECALL_ADAPTIVE_FUSION", "false")]).unwrap();
    assert!(!c.recall.adaptive_fusion);
    let e = err(&[("CPERSONA_RECALL_ADAPTIVE_FUSION", "sometimes")]);
    assert!(e.starts_with("CPERSONA_RECALL_ADAPTIVE_FUSION="), "{e}");
}

#[test]
fn prior_age_rate_is_the_recency_setting() {
    let c = parse(&[]).unwrap();
    assert_eq!(c.recall.prior_age_rate, 0.0);
    assert_eq!(c.recall.prior_age_floor, 0.3);
    let c = parse(&[("CPERSONA_PRIOR_AGE_RATE", "0.005")]).unwrap();
    assert_eq!(c.recall.prior_age_rate, 0.005);
    for bad in ["-0.1", "NaN", "inf", "soon", "11"] {
        let e = err(&[("CPERSONA_PRIOR_AGE_RATE", bad)]);
        assert!(e.starts_with("CPERSONA_PRIOR_AGE_RATE="), "{bad}: {e}");
    }
    // The engine reads no clock: `now` is refused once the prior is on, accepted while off.
    let e = err(&[
        ("CPERSONA_PRIOR_AGE_RATE", "0.005"),
        ("CPERSONA_PRIOR_AGE_ANCHOR", "now"),
    ]);
    assert!(e.contains("CPERSONA_PRIOR_AGE_ANCHOR"), "{e}");
    assert!(parse(&[("CPERSONA_PRIOR_AGE_ANCHOR", "now")]).is_ok());
}

#[test]
fn index_upkeep_defaults_on_and_bounds_its_period() {
    let c = parse(&[]).unwrap();
    assert!(c.index.auto_merge);
    assert_eq!(c.index.flush_every_ms, 500);
    let c = parse(&[
        ("CPERSONA_INDEX_AUTO_MERGE", "false"),
        ("CPERSONA_INDEX_FLUSH_MS", "2000"),
    ])
    .unwrap();
    assert!(!c.index.auto_merge);
    assert_eq!(c.index.flush_every_ms, 2000);
    let e = err(&[("CPERSONA_INDEX_FLUSH_MS", "10")]);
    assert!(e.starts_with("CPERSONA_INDEX_FLUSH_MS="), "{e}");
    let e = err(&[("CPERSONA_INDEX_AUTO_MERGE", "sometimes")]);
    assert!(e.starts_with("CPERSONA_INDEX_AUTO_MERGE="), "{e}");
}
