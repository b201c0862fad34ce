//! `check_health` on degraded stores built through SQL or the API: each finding appears, and
//! after `fix` (or the cause's removal) it is gone or says why it stays. Each test names its
//! check, so removing the check turns it red.

use cpersona_engine::{
    ArchiveEpisodeRequest, DeepRequest, Engine, EngineConfig, HealthReport, HealthRequest,
    HealthSeverity, IndexTable, MemoryIdRequest, SCORING_VERSION, StoreRequest,
};
use serde_json::Value;

use crate::common::{DIM, TestEmbedder, conn, fixture, fixture_with, store};

fn request(fix: bool) -> HealthRequest {
    HealthRequest {
        fix,
        ..HealthRequest::default()
    }
}

fn health(engine: &Engine, fix: bool) -> HealthReport {
    engine
        .check_health(&request(fix), &cpersona_engine::progress::Progress::none())
        .unwrap()
}

fn severity(report: &HealthReport, check: &str) -> HealthSeverity {
    report
        .finding(check)
        .unwrap_or_else(|| panic!("no {check} finding: {report:?}"))
        .severity
}

fn body(report: &HealthReport) -> Value {
    serde_json::to_value(report).unwrap()
}

#[test]
fn a_clean_store_is_healthy_and_says_what_it_checked() {
    let f = fixture();
    store(&f, "a", "the cat is called Miso");
    store(&f, "a", "I live in Kyoto");
    let report = health(&f.engine, false);
    let json = body(&report);
    assert_eq!(json["status"], "healthy", "{json}");
    // A store never calibrated is a note, which never degrades.
    assert_eq!(json["severity_summary"]["warn"], 0, "{json}");
    assert_eq!(json["severity_summary"]["critical"], 0, "{json}");
    assert_eq!(
        json["checks"].as_array().unwrap().len(),
        json["checks_run"].as_array().unwrap().len()
    );
    assert_eq!(json["stats"]["memories"], 2);
    assert_eq!(severity(&report, "vector_coverage"), HealthSeverity::Ok);
    assert_eq!(
        report.finding("vector_coverage").unwrap().detail["share"],
        1.0
    );
}

#[test]
fn rows_of_another_model_are_a_warning_never_healthy() {
    let f = fixture();
    for text in ["my cat is called Miso", "I live in Kyoto", "green tea"] {
        store(&f, "a", text);
    }
    // Adoption off: the store keeps its model's target (with it on, the new model is adopted
    // and its re-embedding reported instead: `tests/it/reembed.rs`).
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.reembed_on_model_change = false;
    let other = Engine::open(config, TestEmbedder::new("another-model", DIM)).unwrap();
    let report = health(&other, false);
    let json = body(&report);
    assert_eq!(json["status"], "degraded", "{json}");
    let model = report.finding("embedding_model").unwrap();
    assert_eq!(model.severity, HealthSeverity::Warning, "{model:?}");
    assert!(model.reason.contains("vector arm skipped"), "{model:?}");
    assert_eq!(model.count, Some(3));
    let coverage = report.finding("vector_coverage").unwrap();
    assert_eq!(coverage.severity, HealthSeverity::Warning);
    assert_eq!(coverage.detail["searchable"], 0);
    assert_eq!(coverage.detail["rows"], 3);
    // fix cannot re-embed with another model: it reports, and the verdict stays.
    let fixed = health(&other, true);
    assert_eq!(severity(&fixed, "embedding_model"), HealthSeverity::Warning);
    assert_eq!(
        fixed
            .finding("embedding_model")
            .unwrap()
            .fixed
            .as_ref()
            .unwrap()
            .action,
        "report_only"
    );
    // The embedder that wrote them: the arm covers the store again.
    assert_eq!(
        severity(&health(&f.engine, false), "embedding_model"),
        HealthSeverity::Ok
    );
}

#[test]
fn a_partly_re_embedded_store_reports_its_share() {
    let f = fixture();
    for i in 0..4 {
        store(&f, "a", &format!("note number {i}"));
    }
    // Two rows carry an older model's vector: the arm searches the other two.
    conn(&f)
        .execute(
            "UPDATE memories SET embedding_model = 'old-model' WHERE id IN (SELECT id FROM memories ORDER BY id LIMIT 2)",
            [],
        )
        .unwrap();
    let report = health(&f.engine, false);
    let coverage = report.finding("vector_coverage").unwrap();
    assert_eq!(coverage.severity, HealthSeverity::Warning, "{coverage:?}");
    assert_eq!(coverage.detail["share"], 0.5);
    let model = report.finding("embedding_model").unwrap();
    assert!(model.reason.contains("vector arm partial"), "{model:?}");
    assert_eq!(
        model.detail["tables"][0]["other"][0]["model_id"],
        "old-model"
    );
}

#[test]
fn rows_without_vectors_are_queued_and_embedded_by_fix() {
    let f = fixture();
    let ids: Vec<i64> = (0..3)
        .map(|i| store(&f, "a", &format!("fact {i}")))
        .collect();
    f.engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a session about tea".into(),
            ..Default::default()
        })
        .unwrap();
    let db = conn(&f);
    db.execute_batch(
        "UPDATE memories SET embedding = NULL; UPDATE episodes SET embedding = NULL; \
         DELETE FROM embedding_queue;",
    )
    .unwrap();
    let report = health(&f.engine, false);
    let null = report.finding("null_embedding").unwrap();
    assert_eq!(null.severity, HealthSeverity::Warning);
    assert_eq!(null.count, Some(3));
    assert_eq!(
        severity(&report, "null_episode_embedding"),
        HealthSeverity::Warning
    );
    let fixed = health(&f.engine, true);
    let null = fixed.finding("null_embedding").unwrap();
    assert_eq!(null.severity, HealthSeverity::Ok, "{null:?}");
    let repair = null.fixed.as_ref().unwrap();
    assert_eq!(
        (repair.action.as_str(), repair.rows, repair.landed),
        ("queued_for_embedding", 3, true)
    );
    assert_eq!(
        severity(&fixed, "null_episode_embedding"),
        HealthSeverity::Ok
    );
    let missing: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM memories WHERE embedding IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(missing, 0, "{ids:?}");
    assert!(body(&fixed)["fixed"].as_u64().unwrap() >= 4);
}

#[test]
fn a_stuck_queue_warns_and_fix_retries_it() {
    let f = fixture();
    f.embedder
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    store(&f, "a", "stored while the embedder was down");
    store(&f, "a", "also stored while it was down");
    conn(&f)
        .execute(
            "UPDATE embedding_queue SET attempts = 3, last_error = 'timeout'",
            [],
        )
        .unwrap();
    let report = health(&f.engine, false);
    let stuck = report.finding("stale_pending_tasks").unwrap();
    assert_eq!(stuck.severity, HealthSeverity::Warning, "{stuck:?}");
    assert_eq!(stuck.count, Some(2));
    assert!(stuck.reason.contains("timeout"), "{stuck:?}");
    // Still down: fix gives the attempts back, the drain fails, the rows stay queued.
    let still = health(&f.engine, true);
    assert_eq!(
        still
            .finding("stale_pending_tasks")
            .unwrap()
            .fixed
            .as_ref()
            .unwrap()
            .rows,
        2
    );
    f.embedder
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    conn(&f)
        .execute("UPDATE embedding_queue SET attempts = 3", [])
        .unwrap();
    let fixed = health(&f.engine, true);
    assert_eq!(severity(&fixed, "stale_pending_tasks"), HealthSeverity::Ok);
    assert_eq!(severity(&fixed, "null_embedding"), HealthSeverity::Ok);
    assert_eq!(f.engine.get_queue_status().unwrap().pending, 0);
}

#[test]
fn an_fts_index_missing_a_row_is_rebuilt_by_fix() {
    let f = fixture();
    let id = store(&f, "a", "lanterns along the river");
    store(&f, "a", "a quiet morning");
    let db = conn(&f);
    db.execute(
        "INSERT INTO memories_fts(memories_fts, rowid, content) \
         SELECT 'delete', id, content FROM memories WHERE id = ?",
        [id],
    )
    .unwrap();
    let report = health(&f.engine, false);
    let fts = report.finding("fts_integrity").unwrap();
    assert!(fts.severity >= HealthSeverity::Warning, "{fts:?}");
    assert_ne!(body(&report)["status"], "healthy");
    let fixed = health(&f.engine, true);
    let fts = fixed.finding("fts_integrity").unwrap();
    assert_eq!(fts.severity, HealthSeverity::Ok, "{fts:?}");
    assert_eq!(fts.fixed.as_ref().unwrap().action, "fts_rebuild");
    let found: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'lanterns'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(found, 1);
}

#[test]
fn exact_copies_are_removed_keeping_the_oldest_and_locked_ones() {
    let f = fixture();
    let first = store(&f, "a", "the same sentence");
    let db = conn(&f);
    // Only a store without its unique content index can hold copies in one scope.
    db.execute_batch("DROP INDEX idx_memories_dedup_content")
        .unwrap();
    let copy = "INSERT INTO memories(agent_id, project_id, channel, content, source, metadata, \
                timestamp, timestamp_ms, created_at_ms, locked) SELECT agent_id, project_id, channel, \
                content, source, metadata, timestamp, timestamp_ms, created_at_ms, ?2 FROM memories WHERE id = ?1";
    db.execute(copy, [first, 0]).unwrap();
    db.execute(copy, [first, 1]).unwrap();
    let report = health(&f.engine, false);
    let dup = report.finding("duplicate_content").unwrap();
    assert_eq!(dup.severity, HealthSeverity::Warning, "{dup:?}");
    assert_eq!(dup.repairable, Some(1));
    let fixed = health(&f.engine, true);
    let dup = fixed.finding("duplicate_content").unwrap();
    assert_eq!(dup.fixed.as_ref().unwrap().rows, 1, "{dup:?}");
    assert_eq!(dup.repairable, Some(0));
    assert!(
        dup.needs_human_review,
        "the locked copy is left to a person: {dup:?}"
    );
    let left: Vec<(i64, i64)> = db
        .prepare("SELECT id, locked FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(left.len(), 2, "{left:?}");
    assert_eq!(left[0], (first, 0));
    assert_eq!(left[1].1, 1);
    // Unlocked, the last copy goes too and the finding clears.
    f.engine
        .unlock_memory(&MemoryIdRequest {
            agent_id: "a".into(),
            memory_id: left[1].0,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        severity(&health(&f.engine, true), "duplicate_content"),
        HealthSeverity::Ok
    );
}

#[test]
fn the_same_text_in_two_projects_is_a_note_never_removed() {
    let f = fixture();
    for project in ["p1", "p2"] {
        crate::common::store_request(
            &f,
            &cpersona_engine::StoreRequest {
                agent_id: "a".into(),
                content: "shared note".into(),
                project_id: project.into(),
                ..Default::default()
            },
        );
    }
    let fixed = health(&f.engine, true);
    let dup = fixed.finding("duplicate_content").unwrap();
    assert_eq!(dup.severity, HealthSeverity::Info, "{dup:?}");
    assert_eq!(dup.count, Some(2));
    assert_eq!(f.engine.store_stats("a").unwrap().memories, 2);
}

#[test]
fn oversize_future_and_malformed_rows_are_reported_and_left_alone() {
    let f = fixture_with(|c| c.max_content_chars = 40);
    let long = store(&f, "a", "short enough");
    let ahead = store(&f, "a", "dated ahead");
    let bad = store(&f, "a", "bad metadata");
    let db = conn(&f);
    db.execute(
        "UPDATE memories SET content = ?2 WHERE id = ?1",
        rusqlite::params![long, "x".repeat(60)],
    )
    .unwrap();
    db.execute(
        "UPDATE memories SET created_at_ms = created_at_ms + 3600000 WHERE id = ?",
        [ahead],
    )
    .unwrap();
    db.execute(
        "UPDATE memories SET metadata = '{not json' WHERE id = ?",
        [bad],
    )
    .unwrap();
    let before: Vec<String> = db
        .prepare("SELECT content || metadata || created_at_ms FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let fixed = health(&f.engine, true);
    for (check, count) in [
        ("oversized_content", 1),
        ("future_timestamp", 1),
        ("invalid_json", 1),
    ] {
        let finding = fixed.finding(check).unwrap();
        assert_eq!(finding.severity, HealthSeverity::Warning, "{finding:?}");
        assert_eq!(finding.count, Some(count), "{finding:?}");
        let repair = finding.fixed.as_ref().unwrap();
        assert_eq!(
            (repair.action.as_str(), repair.landed),
            ("report_only", false)
        );
    }
    assert_eq!(
        fixed.finding("invalid_json").unwrap().detail["columns"][1]["sample_ids"][0],
        bad
    );
    let after: Vec<String> = db
        .prepare("SELECT content || metadata || created_at_ms FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(before, after, "a report-only check touched the rows");
}

#[test]
fn a_calibration_of_another_model_or_scoring_is_stale() {
    let f = fixture();
    store(&f, "a", "one");
    let db = conn(&f);
    assert_eq!(
        severity(&health(&f.engine, false), "calibration_staleness"),
        HealthSeverity::Info
    );
    db.execute(
        "INSERT INTO calibration(agent_id, payload, embedding_model, embedding_dim, scoring_version, calibrated_at_ms) \
         VALUES ('a', '{}', 'old-model', 32, ?1, 0)",
        [SCORING_VERSION],
    )
    .unwrap();
    let stale = health(&f.engine, false);
    let finding = stale.finding("calibration_staleness").unwrap();
    assert_eq!(finding.severity, HealthSeverity::Warning, "{finding:?}");
    assert!(finding.reason.contains("old-model"), "{finding:?}");
    db.execute(
        "UPDATE calibration SET embedding_model = 'test-hash-32', scoring_version = 'old-scoring', \
         calibrated_at_ms = CAST(strftime('%s','now') AS INTEGER) * 1000",
        [],
    )
    .unwrap();
    assert_eq!(
        severity(&health(&f.engine, false), "calibration_staleness"),
        HealthSeverity::Warning
    );
    db.execute(
        "UPDATE calibration SET scoring_version = ?1",
        [SCORING_VERSION],
    )
    .unwrap();
    assert_eq!(
        severity(&health(&f.engine, false), "calibration_staleness"),
        HealthSeverity::Ok
    );
}

#[test]
fn index_freshness_warns_past_the_share_per_table() {
    let f = fixture();
    for i in 0..10 {
        store(&f, "a", &format!("indexed row {i}"));
    }
    f.engine
        .rebuild_index(IndexTable::Memories, &mut |_, _| {})
        .unwrap();
    assert_eq!(
        severity(&health(&f.engine, false), "index_freshness"),
        HealthSeverity::Ok
    );
    for i in 0..5 {
        store(&f, "a", &format!("later row {i}"));
    }
    let stale = health(&f.engine, false);
    let finding = stale.finding("index_freshness").unwrap();
    assert_eq!(finding.severity, HealthSeverity::Warning, "{finding:?}");
    assert_eq!(finding.count, Some(5));
    assert_eq!(finding.detail["table"], "memories");
}

#[test]
fn fix_while_paused_only_reads_and_unknown_checks_are_refused() {
    let f = fixture();
    store(&f, "a", "a row");
    conn(&f)
        .execute("UPDATE memories SET embedding = NULL", [])
        .unwrap();
    f.engine.pause_persistence(Some(60), "");
    let report = health(&f.engine, true);
    assert_eq!(severity(&report, "null_embedding"), HealthSeverity::Warning);
    assert_eq!(body(&report)["repairs_skipped"], true);
    let err = f
        .engine
        .check_health(
            &HealthRequest {
                checks: vec!["nope".into()],
                ..request(false)
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap_err();
    assert!(
        err.is_user_error() && err.to_string().contains("fts_integrity"),
        "{err}"
    );
    let one = f
        .engine
        .check_health(
            &HealthRequest {
                checks: vec!["integrity".into()],
                ..request(false)
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!(one.checks_run, ["sqlite_integrity"]);
}

#[test]
fn session_findings_deliver_what_check_health_finds_with_static_kinds() {
    let f = crate::common::fixture();
    for i in 0..4 {
        crate::common::store(&f, "a", &format!("row {i} about the harbour"));
    }
    crate::common::conn(&f)
        .execute(
            "UPDATE memories SET embedding = NULL WHERE id IN (1, 2)",
            [],
        )
        .unwrap();
    let req = HealthRequest::default();
    let report = f
        .engine
        .check_health(&req, &cpersona_engine::progress::Progress::none())
        .unwrap();
    let issues = report
        .findings
        .iter()
        .filter(|x| x.severity != HealthSeverity::Ok)
        .count();
    let delivered = f.engine.session_findings(&req, 5, true).unwrap();
    assert_eq!(delivered.total, issues);
    let null = delivered
        .findings
        .iter()
        .find(|x| x["check"] == "null_embedding")
        .expect("the NULL vectors are a finding");
    assert!(null["kind"].as_str().unwrap().starts_with("null_embedding"));
    assert!(["critical", "warn", "info"].contains(&null["severity"].as_str().unwrap()));
    assert!(null["health_severity"].is_string());
    assert!(f.engine.session_findings(&req, 0, true).is_err());
}

#[test]
fn deep_check_names_speakers_and_removes_trivial_rows_but_never_locked_ones() {
    let f = crate::common::fixture();
    let anonymous = serde_json::json!({"type": "User", "id": "", "name": ""});
    let stored = |content: &str, lock: bool| {
        crate::common::store_request(
            &f,
            &StoreRequest {
                agent_id: "a".into(),
                content: content.into(),
                source: Some(anonymous.clone()),
                lock,
                ..StoreRequest::default()
            },
        )
    };
    let named = stored("[Dana] the ferry leaves at nine", false);
    let trivial = stored("ok", false);
    let kept = stored("hm", true);
    stored("a long enough statement without a speaker", false);
    let report = |fix: bool| {
        f.engine
            .deep_check(&DeepRequest {
                agent_id: "a".into(),
                fix,
                ..DeepRequest::default()
            })
            .unwrap()
    };
    let read = report(false);
    assert_eq!(read.checks_run.len(), 8);
    assert_eq!(read.results["anonymous_source"]["recoverable"], 1);
    assert_eq!(read.results["short_content"]["count"], 2);
    let fixed = report(true);
    assert_eq!(fixed.results["anonymous_source"]["fixed"], 1);
    assert_eq!(fixed.results["short_content"]["fixed"], 1);
    let conn = crate::common::conn(&f);
    let source: String = conn
        .query_row("SELECT source FROM memories WHERE id = ?", [named], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(source.contains("Dana"), "{source}");
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!ids.contains(&trivial) && ids.contains(&kept), "{ids:?}");
    let unknown = f.engine.deep_check(&DeepRequest {
        agent_id: "a".into(),
        checks: vec!["nope".into()],
        ..DeepRequest::default()
    });
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("unknown check name")
    );
}

#[test]
fn agent_summary_counts_in_sql_what_the_listings_hold() {
    let f = crate::common::fixture();
    for i in 0..7 {
        crate::common::store(&f, "a", &format!("row {i} about the orchard"));
    }
    crate::common::store(&f, "b", "someone else's row");
    f.engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a session".into(),
            ..Default::default()
        })
        .unwrap();
    let summary = f.engine.agent_summary("a").unwrap();
    assert_eq!(
        (summary.memories, summary.episodes, summary.profile),
        (7, 1, false)
    );
    // Every memory is in one week bucket, the bucket of its creation time.
    assert_eq!(summary.weekly.iter().map(|(_, n)| n).sum::<usize>(), 7);
    let now_week = cpersona_engine::time::now_ms().div_euclid(cpersona_engine::WEEK_MS);
    assert!(
        summary
            .weekly
            .iter()
            .all(|(w, _)| (now_week - 1..=now_week).contains(w))
    );
    assert_eq!(
        f.engine.agent_summary("nobody").unwrap(),
        Default::default()
    );
}
