//! Issue 19's gaps, through the real binary over HTTP where they were found: a call on a row
//! id must name its owner and another agent's row reads as missing; one client's pause never
//! skips another client's writes; the `Bearer` scheme in any case, weak or non-ASCII tokens
//! refused at start-up; CORS as CPersona serves it, preflight answered before the token.
// See: issue 19

use std::path::Path;

use serde_json::{Value, json};

use crate::crash::harness::command;
use crate::transport::client::{RawHttp, StoreView, TOKEN, good_headers};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cpersona"))
}

fn served() -> RawHttp {
    let raw = RawHttp::spawn(bin());
    raw.initialize();
    raw
}

fn stored_id(raw: &RawHttp, agent: &str, content: &str) -> i64 {
    let (is_error, body) = raw.call_tool(
        &[],
        "store",
        &json!({"agent_id": agent, "content": content}),
    );
    assert!(!is_error, "{body}");
    body["id"].as_i64().unwrap()
}

/// The error text with the id written as `N`.
fn error_of(body: &Value, id: i64) -> String {
    body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error: {body}"))
        .replace(&id.to_string(), "N")
}

#[test]
fn r19_row_tools_need_their_owner_and_foreign_rows_read_as_missing() {
    let raw = served();
    let id = stored_id(&raw, "a", "a's locked secret");
    let (is_error, body) = raw.call_tool(
        &[],
        "lock_memory",
        &json!({"memory_id": id, "agent_id": "a"}),
    );
    assert!(!is_error, "{body}");
    let (is_error, body) = raw.call_tool(
        &[],
        "archive_episode",
        &json!({"agent_id": "a", "summary": "a's session"}),
    );
    assert!(!is_error, "{body}");
    let episode = body["episode_id"].as_i64().unwrap();
    let view = StoreView::open(&raw.db).unwrap();
    let before = view.fingerprint();

    let missing = 987_654_321;
    let answers = |agent: Option<&str>, memory_id: i64, episode_id: i64| -> Vec<String> {
        let with = |mut args: Value| {
            if let Some(agent) = agent {
                args["agent_id"] = json!(agent);
            }
            args
        };
        [
            (
                "update_memory",
                with(json!({"memory_id": memory_id, "content": "rewritten"})),
                memory_id,
            ),
            (
                "unlock_memory",
                with(json!({"memory_id": memory_id})),
                memory_id,
            ),
            (
                "delete_memory",
                with(json!({"memory_id": memory_id})),
                memory_id,
            ),
            (
                "lock_memory",
                with(json!({"memory_id": memory_id})),
                memory_id,
            ),
            (
                "delete_episode",
                with(json!({"episode_id": episode_id})),
                episode_id,
            ),
        ]
        .into_iter()
        .map(|(tool, args, id)| {
            let (is_error, body) = raw.call_tool(&[], tool, &args);
            assert!(is_error, "{tool} {args}: {body}");
            assert_eq!(body["ok"], false, "{tool}: {body}");
            format!("{tool}: {}", error_of(&body, id))
        })
        .collect()
    };
    // Another agent's rows (the memory is locked) read exactly as rows that do not exist.
    let foreign = answers(Some("b"), id, episode);
    assert_eq!(foreign, answers(Some("b"), missing, missing));
    assert!(
        foreign
            .iter()
            .all(|a| a.ends_with("not found") && !a.contains("locked")),
        "{foreign:?}"
    );
    // Leaving the owner out (or blank) is refused, never a skipped owner check.
    for agent in [None, Some("")] {
        for answer in answers(agent, id, episode) {
            assert!(answer.contains("agent_id"), "{answer}");
        }
    }
    assert_eq!(view.fingerprint(), before, "a refused call wrote");
    // The owner still can, and the lock held.
    let (is_error, body) = raw.call_tool(
        &[],
        "delete_memory",
        &json!({"memory_id": id, "agent_id": "a"}),
    );
    assert!(
        is_error && body["error"].as_str().unwrap().contains("locked"),
        "{body}"
    );
    let (is_error, body) = raw.call_tool(
        &[],
        "delete_episode",
        &json!({"episode_id": episode, "agent_id": "a"}),
    );
    assert!(!is_error, "{body}");
    raw.stop();
}

#[test]
fn r19_one_clients_pause_never_skips_another_clients_writes() {
    let raw = served();
    // Client A goes off the record without a key: refused over HTTP, since every request
    // stands alone and the process bucket would pause every client.
    let (is_error, body) = raw.call_tool(&[], "pause_persistence", &json!({}));
    assert!(is_error, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("session_key"),
        "{body}"
    );
    let (_, status) = raw.call_tool(&[], "persistence_status", &json!({}));
    assert_eq!(status["paused"], false, "{status}");
    // With its key, A's pause skips A's keyed writes only.
    let (is_error, body) = raw.call_tool(
        &[],
        "pause_persistence",
        &json!({"session_key": "client-a", "ttl_seconds": 600}),
    );
    assert!(!is_error, "{body}");
    assert_eq!(body["scope"], "session");
    let (_, a) = raw.call_tool(
        &[],
        "store",
        &json!({"agent_id": "a", "content": "off the record", "session_key": "client-a"}),
    );
    assert_eq!(a["result"], "skipped", "{a}");
    assert_eq!(a["persisted"], false, "{a}");
    for key in [None, Some("client-b")] {
        let mut args = json!({"agent_id": "b", "content": format!("b writes with {key:?}")});
        if let Some(key) = key {
            args["session_key"] = json!(key);
        }
        let (is_error, b) = raw.call_tool(&[], "store", &args);
        assert!(!is_error, "{b}");
        assert_eq!(b["result"], "stored", "{key:?}: {b}");
    }
    let (_, status) = raw.call_tool(
        &[],
        "persistence_status",
        &json!({"session_key": "client-a"}),
    );
    assert_eq!(status["paused"], true, "{status}");
    let (_, resumed) = raw.call_tool(
        &[],
        "resume_persistence",
        &json!({"session_key": "client-a"}),
    );
    assert_eq!(resumed["was_active"], true, "{resumed}");
    raw.stop();
}

#[test]
fn r19_the_bearer_scheme_is_read_in_any_case() {
    let raw = served();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let mut headers = good_headers();
        headers[0] = ("Authorization", format!("{scheme} {TOKEN}"));
        let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{scheme}: {reply:?}");
    }
    for value in [
        format!("bearer{TOKEN}"),
        format!("Basic {TOKEN}"),
        format!("bearer {TOKEN}x"),
    ] {
        let mut headers = good_headers();
        headers[0] = ("Authorization", value.clone());
        // A 401 leaves the body unread, so the server may close the connection: never pool it.
        headers.push(("Connection", "close".to_owned()));
        let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
        assert_eq!(reply.status, 401, "{value}: {reply:?}");
    }
    raw.stop();
}

#[test]
fn r19_weak_or_non_ascii_tokens_refuse_to_start_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    for (token, expect) in [
        ("aaaaaaaaaaaaaaaa", "distinct characters"),
        ("éééééééééééééééé", "non-ASCII"),
        ("abcdefghabcdefgh", "repeats one pattern of 8 characters"),
        ("short", "use at least 16"),
        ("a long token with spaces", "a space"),
    ] {
        let out = command(bin(), &db)
            .env("CPERSONA_AUTH_TOKEN", token)
            .args(["serve", "--http", "127.0.0.1:0"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{token}: {stderr}");
        assert!(
            stderr.contains("CPERSONA_AUTH_TOKEN") && stderr.contains(expect),
            "{token}: {stderr}"
        );
        assert!(
            !stderr.contains(token),
            "the refusal echoed the token: {stderr}"
        );
        assert!(!db.exists(), "{token}: the store was opened");
    }
}

/// The CORS headers of a reply, as (allow-origin, expose-headers).
fn grant(reply: &crate::transport::client::HttpReply) -> (Option<&str>, Option<&str>) {
    (
        reply.header("access-control-allow-origin"),
        reply.header("access-control-expose-headers"),
    )
}

#[test]
fn r19_cors_preflight_is_answered_before_the_token_for_allowed_origins_only() {
    let raw = RawHttp::spawn_with(
        bin(),
        &[(
            "CPERSONA_HTTP_ALLOWED_ORIGINS",
            "https://app.example.com:443",
        )],
    );
    raw.initialize();
    let preflight = |origin: &str| {
        raw.options(&[
            ("Origin", origin.to_owned()),
            ("Access-Control-Request-Method", "POST".to_owned()),
            (
                "Access-Control-Request-Headers",
                "authorization, content-type, mcp-protocol-version".to_owned(),
            ),
        ])
        .unwrap()
    };
    for origin in [
        "https://claude.ai",
        "https://www.claude.ai",
        "https://app.example.com",
    ] {
        let reply = preflight(origin);
        assert_eq!(reply.status, 204, "{origin}: {reply:?}");
        assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
        let methods = reply.header("access-control-allow-methods").unwrap();
        assert!(methods.contains("POST"), "{methods}");
        let headers = reply.header("access-control-allow-headers").unwrap();
        for h in [
            "Authorization",
            "Content-Type",
            "Mcp-Session-Id",
            "Mcp-Protocol-Version",
        ] {
            assert!(headers.contains(h), "{headers}");
        }
    }
    for origin in [
        "https://evil.example",
        "http://claude.ai",
        "https://claude.ai.evil.example",
    ] {
        let reply = preflight(origin);
        assert_ne!(reply.status, 401, "{origin}: {reply:?}");
        assert_eq!(
            reply.header("access-control-allow-origin"),
            None,
            "{origin}"
        );
    }
    // Real requests: an allowed page can read the answer (401 included) and Mcp-Session-Id.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let mut headers = good_headers();
    headers.push(("Origin", "https://claude.ai".to_owned()));
    let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        grant(&reply),
        (Some("https://claude.ai"), Some("Mcp-Session-Id"))
    );
    headers.remove(0);
    // A 401 leaves the body unread, so the server may close the connection: never pool it.
    headers.push(("Connection", "close".to_owned()));
    let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
    assert_eq!(reply.status, 401, "{reply:?}");
    assert_eq!(grant(&reply).0, Some("https://claude.ai"));
    // A foreign page gets no grant and no answer.
    let mut headers = good_headers();
    headers.push(("Origin", "https://evil.example".to_owned()));
    let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
    assert_eq!(reply.status, 403, "{reply:?}");
    assert_eq!(grant(&reply), (None, None));
    raw.stop();
}

#[test]
fn r19_token_new_prints_a_token_the_server_serves_and_its_acl_entry() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(bin(), &dir.path().join("never.db"))
        .args(["token", "new", "--client", "laptop", "--grant", "*=read"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (token, entry) = stdout.split_once('\n').unwrap();
    assert!(token.len() >= 32, "{token}");
    let entry: Value = serde_json::from_str(entry).unwrap();
    assert_eq!(
        entry,
        json!({"client_id": "laptop", "token": token, "grants": {"*": "read"}})
    );
    // The token serves: the server starts with it and answers a request carrying it.
    let raw = RawHttp::spawn_with(bin(), &[("CPERSONA_AUTH_TOKEN", token)]);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let mut headers = good_headers();
    headers[0] = ("Authorization", format!("Bearer {token}"));
    let reply = raw.post_with(&headers, ping.as_bytes()).unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
    raw.stop();
    let refused = command(bin(), &dir.path().join("never.db"))
        .args(["token", "new", "--client", "local"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
}
