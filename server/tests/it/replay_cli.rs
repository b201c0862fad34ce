//! `cpersona recall --trace-out` and `cpersona replay` through the real binary, and the
//! `recall` tool's `trace` replaying offline to the response it came with.

use std::process::Command;

use serde_json::{Value, json};

use crate::binary::{call_tools, cpersona_in, run_ok};

const TEXTS: &[&str] = &[
    "apple river stone",
    "apple cloud engine",
    "river garden winter",
    "copper signal harbor",
    "apple lantern meadow",
    "stone winter apple",
];

fn replay(dir: &std::path::Path, trace: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = cpersona_in(dir);
    cmd.arg("replay").arg(trace).args(args);
    cmd
}

#[test]
fn recall_trace_out_then_replay_changes_and_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls: Vec<(&str, Value)> = TEXTS
        .iter()
        .map(|t| ("store", json!({"agent_id": "a", "content": t})))
        .collect();
    calls.push((
        "recall",
        json!({"agent_id": "a", "query": "apple", "limit": 3, "trace": true}),
    ));
    let bodies = call_tools(dir.path(), &calls);
    let tool = bodies.last().unwrap();
    assert_eq!(
        tool["trace"]["format"], "cpersona-rs.recall-trace",
        "{tool}"
    );
    // The trace carries the rows' refs, scores and reasons, never their text.
    let refs = |rows: &Value| -> Vec<Value> {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|m| m["ref"].clone())
            .collect()
    };
    assert_eq!(
        refs(&tool["trace"]["response"]["messages"]),
        refs(&tool["messages"])
    );
    for (saved, sent) in tool["trace"]["response"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .zip(tool["messages"].as_array().unwrap())
    {
        assert_eq!(saved["match_reason"], sent["match_reason"]);
        assert!(saved.get("content").is_none(), "{saved}");
        assert!(sent["content"].as_str().is_some_and(|c| !c.is_empty()));
    }

    // The tool's trace replays offline to the response it came with.
    let tool_trace = dir.path().join("tool.json");
    std::fs::write(&tool_trace, tool["trace"].to_string()).unwrap();
    let same: Value =
        serde_json::from_str(&run_ok(&mut replay(dir.path(), &tool_trace, &[]))).unwrap();
    assert_eq!(same["unchanged"], true, "{same}");
    assert_eq!(same["before"], same["after"]);

    let trace = dir.path().join("t.json");
    let out: Value = serde_json::from_str(&run_ok(
        cpersona_in(dir.path())
            .args([
                "recall",
                "--agent",
                "a",
                "apple",
                "--limit",
                "2",
                "--trace-out",
            ])
            .arg(&trace),
    ))
    .unwrap();
    assert_eq!(
        out["response"]["messages"].as_array().unwrap().len(),
        2,
        "{out}"
    );

    let cut = json!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&trace).unwrap()).unwrap()["exclusions"]
            [0]["ref"]
    );
    let cut = cut
        .as_str()
        .expect("limit 2 leaves an excluded candidate")
        .to_owned();
    let report: Value = serde_json::from_str(&run_ok(&mut replay(
        dir.path(),
        &trace,
        &["--set", "gate=off", "--set", "limit=6", "--expect", &cut],
    )))
    .unwrap();
    assert_eq!(report["before"].as_array().unwrap().len(), 2, "{report}");
    assert!(report["after"].as_array().unwrap().len() > 2, "{report}");
    assert_eq!(report["unchanged"], false);
    let code = report["attribution"]["code"].as_str().unwrap();
    assert!(["RANKING_MISS", "FILTER_DROP"].contains(&code), "{report}");

    let bad = replay(dir.path(), &trace, &["--set", "sideways=1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("sideways"));
}

#[test]
fn replay_expect_with_the_intended_cue_names_intent_misleading() {
    let dir = tempfile::tempdir().unwrap();
    // 60 rows near the query fill the vector arm's depth of 50, so the expected row (no word
    // in common) is never a candidate the gate could refuse a seat to.
    let mut calls: Vec<(&str, Value)> = (0..60)
        .map(|n| {
            (
                "store",
                json!({"agent_id": "a", "content": format!("amber stone d{n}"),
                       "timestamp": format!("2024-04-{:02}T{:02}:00:00Z", 1 + n % 28, n / 28)}),
            )
        })
        .collect();
    calls.push((
        "store",
        json!({"agent_id": "a", "content": "violet lantern",
               "timestamp": "2024-05-29T12:00:00Z"}),
    ));
    let bodies = call_tools(dir.path(), &calls);
    let expected = format!("mem:{}", bodies.last().unwrap()["id"].as_i64().unwrap());
    // The cue names a day with no rows; the caller meant the expected row's day.
    let trace = dir.path().join("t.json");
    run_ok(
        cpersona_in(dir.path())
            .args(["recall", "--agent", "a", "amber stone", "--limit", "3"])
            .args([
                "--time-cue",
                r#"{"after": "2024-03-20", "before": "2024-03-20", "confidence": "sure"}"#,
                "--trace-out",
            ])
            .arg(&trace),
    );
    let intended = r#"{"after": "2024-05-29", "before": "2024-05-29", "confidence": "sure"}"#;
    let args = ["--expect", &expected, "--store", "--intended-cue", intended];
    let report: Value =
        serde_json::from_str(&run_ok(&mut replay(dir.path(), &trace, &args))).unwrap();
    assert_eq!(
        report["attribution"]["code"], "INTENT_MISLEADING",
        "{report}"
    );
    // Without the intended cue nothing says what was meant.
    let report: Value = serde_json::from_str(&run_ok(&mut replay(
        dir.path(),
        &trace,
        &["--expect", &expected, "--store"],
    )))
    .unwrap();
    assert_eq!(report["attribution"]["code"], "CANDIDATE_MISS", "{report}");
    let bad = replay(dir.path(), &trace, &["--intended-cue", intended])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
