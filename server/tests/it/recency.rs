//! The recency prior through the real binary: `CPERSONA_PRIOR_AGE_RATE` reaches recall (a
//! `recency` block says what moved; the same rows come back), unset it says nothing, and a
//! bad value or the unsupported `now` anchor is a start-up error naming the variable.

use serde_json::{Value, json};

use crate::binary::{call_tools_with, cpersona_in};

fn stores() -> Vec<(&'static str, Value)> {
    (0..5)
        .map(|i| {
            let content = if i == 4 {
                "a short line about the harbor".to_owned()
            } else {
                format!("harbor ferry lights, harbor ferry note {i}")
            };
            (
                "store",
                json!({"agent_id": "a", "content": content,
                       "timestamp": format!("202{i}-03-01T00:00:00Z")}),
            )
        })
        .collect()
}

/// The recall body (stores first), with `rate` set or not.
fn recall(rate: Option<&str>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cpersona_in(dir.path());
    if let Some(rate) = rate {
        cmd.env("CPERSONA_PRIOR_AGE_RATE", rate);
    }
    let mut tools = stores();
    tools.push((
        "recall",
        json!({"agent_id": "a", "query": "harbor", "limit": 4}),
    ));
    let (is_error, body) = call_tools_with(cmd, &tools).pop().unwrap();
    assert!(!is_error, "{body}");
    body
}

fn refs(body: &Value) -> Vec<String> {
    let mut out: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ref"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn the_setting_reaches_recall_and_keeps_the_answer_s_rows() {
    let off = recall(None);
    assert!(off.get("recency").is_none(), "{off}");
    let on = recall(Some("0.01"));
    let block = &on["recency"];
    assert_eq!(block["max_up"], 3, "{on}");
    assert_eq!(block["rate_per_h"], 0.01, "{on}");
    assert!(block["moved"].is_u64(), "{on}");
    assert_eq!(refs(&off), refs(&on));
    assert_eq!(refs(&on).len(), 4);
}

#[test]
fn a_bad_rate_or_the_now_anchor_is_a_start_up_error() {
    for (vars, named) in [
        (
            vec![("CPERSONA_PRIOR_AGE_RATE", "-1")],
            "CPERSONA_PRIOR_AGE_RATE",
        ),
        (
            vec![("CPERSONA_PRIOR_AGE_RATE", "soon")],
            "CPERSONA_PRIOR_AGE_RATE",
        ),
        (
            vec![
                ("CPERSONA_PRIOR_AGE_RATE", "0.01"),
                ("CPERSONA_PRIOR_AGE_ANCHOR", "now"),
            ],
            "CPERSONA_PRIOR_AGE_ANCHOR",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = cpersona_in(dir.path());
        cmd.envs(vars.iter().copied());
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{vars:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{vars:?}: {stderr}");
    }
}
