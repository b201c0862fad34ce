//! "Every setting honoured or refused, none silent", through the real binary: a set
//! `CPERSONA_*` variable that changes no answer here (inert) or that neither CPersona nor this
//! server knows is listed once on stderr at start-up and in `check_health`; one whose value
//! asks for a behaviour this server does not offer stops the server before the store is
//! opened, naming it and what to set instead. The newly honoured ones answer as CPersona's.

use serde_json::json;

use crate::binary::{call_tools_capturing, cpersona_in, session_note};

const UNHONOURED: [(&str, &str, &str); 3] = [
    ("CPERSONA_NOT_A_SETTING", "1", "unknown name"),
    (
        "CPERSONA_SCOPE_STATS_TTL_SECONDS",
        "60",
        "accepted, inert here",
    ),
    (
        "CPERSONA_VECTOR_SCAN_CHUNK_ROWS",
        "64",
        "accepted, inert here",
    ),
];

#[test]
fn unhonoured_settings_are_listed_once_on_stderr_and_in_check_health() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cpersona_in(dir.path());
    for (name, value, _) in UNHONOURED {
        cmd.env(name, value);
    }
    // Honoured, set to a value that asks for what this server does, or set to nothing:
    // never listed.
    cmd.env("CPERSONA_RRF_K", "30")
        .env("CPERSONA_FTS_ENABLED", "true")
        .env("CPERSONA_STORE_BLOB", "");
    let (bodies, stderr) = call_tools_capturing(
        cmd,
        &[("check_health", json!({})), ("check_health", json!({}))],
    );
    assert!(
        stderr.contains("3 CPERSONA_* settings are set but change no answer"),
        "{stderr}"
    );
    for (name, _, status) in UNHONOURED {
        assert_eq!(stderr.matches(name).count(), 1, "{name} once: {stderr}");
        assert!(stderr.contains(&format!("{name} ({status})")), "{stderr}");
    }
    for quiet in [
        "CPERSONA_RRF_K",
        "CPERSONA_FTS_ENABLED",
        "CPERSONA_STORE_BLOB",
    ] {
        assert!(!stderr.contains(quiet), "{quiet}: {stderr}");
    }
    let health = &bodies[0].1;
    assert_eq!(
        health["status"], "degraded",
        "an unknown name warns: {health}"
    );
    let issue = health["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == "settings")
        .unwrap_or_else(|| panic!("no settings issue: {health}"));
    assert_eq!(issue["severity"], "warn");
    let listed: Vec<&str> = issue["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, UNHONOURED.map(|(name, _, _)| name));
    assert_eq!(
        bodies[1].1["issues"], health["issues"],
        "the same list each time"
    );
}

/// A value that asks for what this server does not offer stops it, with what to set instead.
#[test]
fn a_setting_asking_for_an_absent_behaviour_stops_the_server_naming_the_alternative() {
    let dir = tempfile::tempdir().unwrap();
    for (var, value, expect) in [
        (
            "CPERSONA_FTS_ENABLED",
            "false",
            "accepted: `true`, or unset",
        ),
        (
            "CPERSONA_VECTOR_REACH",
            "50000",
            "the far list is always on",
        ),
        (
            "CPERSONA_RECALL_MODE",
            "cascade",
            "use rrf (CPersona's default) or rsf",
        ),
    ] {
        let out = cpersona_in(dir.path())
            .env(var, value)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}: {stderr}");
        assert!(stderr.contains(var) && stderr.contains(expect), "{stderr}");
        assert!(
            !dir.path().join("store").exists(),
            "the store was not opened"
        );
    }
}

/// The settings this issue moved from ignored to honoured, each observed in an answer.
#[test]
fn newly_honoured_settings_change_what_the_tools_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cpersona_in(dir.path());
    cmd.env("CPERSONA_EMBEDDING_MODE", "none")
        .env("CPERSONA_DEGRADED_ADVISORY", "false")
        .env("CPERSONA_FUTURE_TIMESTAMP_MODE", "reject")
        .env("CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS", "60")
        .env("CPERSONA_CALIBRATE_METHOD", "zscore")
        .env("CPERSONA_CALIBRATE_Z_FACTOR", "2.5")
        .env("CPERSONA_CALIBRATE_SAMPLE_SIZE", "12");
    let soon = cpersona_engine::time::format_ms_python(cpersona_engine::time::now_ms() + 30_000);
    let later = cpersona_engine::time::format_ms_python(cpersona_engine::time::now_ms() + 600_000);
    let mut calls = vec![
        (
            "store",
            json!({"agent_id": "a", "content": "inside the allowance", "timestamp": soon}),
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "ten minutes ahead", "timestamp": later}),
        ),
    ];
    calls.extend((0..30).map(|i| session_note("a", i)));
    calls.push(("recall", json!({"agent_id": "a", "query": "apple river"})));
    calls.push(("calibrate_threshold", json!({"agent_id": "a"})));
    calls.push((
        "calibrate_threshold",
        json!({"agent_id": "a", "method": "separation"}),
    ));
    let (bodies, _) = call_tools_capturing(cmd, &calls);
    assert_eq!(bodies[0].1["ok"], true, "{}", bodies[0].1);
    let refused = &bodies[1];
    assert!(
        refused.0,
        "a timestamp past the allowance is refused: {}",
        refused.1
    );
    assert!(
        refused.1.to_string().contains("allowance 60s"),
        "{}",
        refused.1
    );
    let recall = &bodies[32].1;
    assert!(
        !recall["messages"].as_array().unwrap().is_empty(),
        "{recall}"
    );
    assert!(
        recall.get("advisory").is_none(),
        "the hashed fallback is degraded, but the advisory is off: {recall}"
    );
    let calibrated = &bodies[33].1;
    assert_eq!(calibrated["method"], "zscore", "{calibrated}");
    assert_eq!(calibrated["z_factor"], 2.5, "{calibrated}");
    assert_eq!(calibrated["sampled_embeddings"], 12, "{calibrated}");
    assert_eq!(
        bodies[34].1["method"], "separation",
        "the call's own argument wins"
    );
}

/// See: issue 19. The ACL file is honoured now: one that cannot be used stops the server
/// before the store opens, naming the variable; the OAuth pair is still refused.
#[test]
fn a_bad_acl_file_or_an_oauth_setting_stops_the_server_before_the_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("acl.json");
    for (var, value, expect) in [
        (
            "CPERSONA_ACL_FILE",
            acl.display().to_string(),
            "cannot be read",
        ),
        (
            "CPERSONA_OAUTH_RESOURCE",
            "https://memory.example".to_owned(),
            "CPERSONA_OAUTH_RESOURCE: set, but not honoured",
        ),
    ] {
        let out = cpersona_in(dir.path())
            .env(var, &value)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(var) && stderr.contains(expect), "{stderr}");
        assert!(out.stdout.is_empty());
        assert!(
            !dir.path().join("store").exists(),
            "the store was not opened"
        );
    }
}
