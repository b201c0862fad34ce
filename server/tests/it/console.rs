//! The console (issue 22) against the real binary on a seeded store: every page answers 200
//! with a session (cookie or bearer) and the login page with 401 without one; a forged form
//! (no CSRF token), a cross-site post, an agent without a grant and a 1 MB field are refused
//! and leave the database as it was; an edit, a lock and a delete land in it; an open console
//! refuses a non-loopback address; `serve --http` mounts the pages. The real-browser test
//! (headless Chromium through selenium, `console/browser.py`) is in `console/browser.rs`.

mod browser;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use crate::binary::{call_tools, cpersona_in};

/// The console's token in these tests (passes the start-up checks).
pub(crate) const TOKEN: &str = "console-test-token-Q7x9K2mP4vR8";
/// An ACL client that may read alice, and nothing of bob.
const VIEWER_TOKEN: &str = "viewer-token-H3k8Lm2Np9Qr5Ts";

/// A store with memories of alice (several channels and sources), one of bob, an episode and
/// a profile, written by the binary's own tools over stdio.
pub(crate) fn seed(dir: &Path) {
    let mut tools = Vec::new();
    for n in 0..12 {
        tools.push((
            "store",
            json!({"agent_id": "alice",
                   "content": format!("alice remembers the blue kettle number {n} <b>not markup</b>"),
                   "channel": if n % 2 == 0 { "ops" } else { "general" },
                   "source": {"type": "User", "id": format!("discord:{}", n % 3), "name": "Ann"}}),
        ));
    }
    tools.push((
        "store",
        json!({"agent_id": "alice", "content": "a note about trains and stations"}),
    ));
    tools.push((
        "store",
        json!({"agent_id": "bob", "content": "bob likes trains"}),
    ));
    tools.push((
        "archive_episode",
        json!({"agent_id": "alice", "summary": "a chat about kettles",
               "history": [{"role": "user", "content": "kettle?"}], "keywords": "kettle"}),
    ));
    tools.push((
        "update_profile",
        json!({"agent_id": "alice", "profile": "Alice likes tea."}),
    ));
    let bodies = call_tools(dir, &tools);
    for body in &bodies {
        assert_eq!(body["ok"], true, "seeding failed: {body}");
    }
}

/// The store's file (as `cpersona_in` sets it).
pub(crate) fn db(dir: &Path) -> PathBuf {
    dir.join("store").join("test.db")
}

/// One memory's content and lock flag, `None` when it is gone.
pub(crate) fn memory(dir: &Path, id: i64) -> Option<(String, bool)> {
    let conn = rusqlite::Connection::open(db(dir)).unwrap();
    conn.query_row(
        "SELECT content, locked FROM memories WHERE id = ?1",
        [id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
    .ok()
}

/// Every memory row, for "nothing was written".
fn all_memories(dir: &Path) -> Vec<(i64, String, bool)> {
    let conn = rusqlite::Connection::open(db(dir)).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, content, locked FROM memories ORDER BY id")
        .unwrap();
    stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The id of alice's memory whose content contains `text`.
pub(crate) fn id_of(dir: &Path, text: &str) -> i64 {
    let conn = rusqlite::Connection::open(db(dir)).unwrap();
    conn.query_row(
        "SELECT id FROM memories WHERE agent_id = 'alice' AND content LIKE ?1 ORDER BY id LIMIT 1",
        [format!("%{text}%")],
        |row| row.get(0),
    )
    .unwrap()
}

/// A running console (or `serve --http`), killed on drop.
pub(crate) struct Running {
    child: Child,
    pub(crate) base: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` (args included) and waits for the log line naming the bound address.
fn start(mut cmd: Command, marker: &str) -> Result<Running, String> {
    let mut child = cmd
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let marker = marker.to_owned();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find(&marker) {
                let rest = &line[at + marker.len()..];
                let addr: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(Ok(format!("http://{addr}")));
                }
            }
        }
        if let Some(tx) = tx.take() {
            let _ = tx.send(Err(seen));
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(base)) => Ok(Running { child, base }),
        Ok(Err(log)) => {
            let _ = child.wait();
            Err(log)
        }
        Err(_) => {
            let _ = child.kill();
            Err("no address within 60 s".to_owned())
        }
    }
}

/// `cpersona console` over the store in `dir` with `env`.
pub(crate) fn console(dir: &Path, env: &[(&str, &str)]) -> Running {
    try_console(dir, "127.0.0.1:0", env)
        .unwrap_or_else(|log| panic!("console did not start:\n{log}"))
}

fn try_console(dir: &Path, bind: &str, env: &[(&str, &str)]) -> Result<Running, String> {
    let mut cmd = cpersona_in(dir);
    cmd.args(["console", "--bind", bind]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    start(cmd, "serving the console at http://")
}

/// An HTTP client that reports every status and follows no redirect.
pub(crate) fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// A page: status and body.
pub(crate) fn get(agent: &ureq::Agent, url: &str, cookie: Option<&str>) -> (u16, String) {
    let mut req = agent.get(url);
    if let Some(c) = cookie {
        req = req.header("Cookie", c);
    }
    let mut res = req.call().unwrap();
    let status = res.status().as_u16();
    (status, res.body_mut().read_to_string().unwrap_or_default())
}

/// A form post with extra headers: status and body.
pub(crate) fn post(
    agent: &ureq::Agent,
    url: &str,
    cookie: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut req = agent
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded");
    if let Some(c) = cookie {
        req = req.header("Cookie", c);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut res = req.send(body).unwrap();
    let status = res.status().as_u16();
    (status, res.body_mut().read_to_string().unwrap_or_default())
}

/// Logs in with `token`: the session cookie (`name=value`).
pub(crate) fn login(agent: &ureq::Agent, base: &str, token: &str) -> String {
    let res = agent
        .post(format!("{base}/console/login"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .send(format!("token={token}"))
        .unwrap();
    assert_eq!(res.status().as_u16(), 303, "login refused");
    let cookie = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(
        !cookie.contains(token),
        "the cookie carries the token: {cookie}"
    );
    cookie.split(';').next().unwrap().to_owned()
}

/// The CSRF token a page's forms carry.
pub(crate) fn csrf_of(page: &str) -> String {
    let at = page
        .find(r#"name="csrf" value=""#)
        .expect("a form with a CSRF field");
    page[at + 19..].chars().take_while(|c| *c != '"').collect()
}

#[test]
fn every_page_answers_with_a_session_and_the_login_page_without() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let running = console(dir.path(), &[("CPERSONA_AUTH_TOKEN", TOKEN)]);
    let base = &running.base;
    let http = client();
    let cookie = login(&http, base, TOKEN);
    let id = id_of(dir.path(), "number 3 ");
    let (status, search) = get(
        &http,
        &format!("{base}/console/agents/alice/search?q=blue+kettle&limit=3"),
        Some(&cookie),
    );
    assert_eq!(status, 200, "{search}");
    let at = search.find("/console/trace/").expect("a trace link");
    let trace: String = search[at..].chars().take_while(|c| *c != '"').collect();
    let pages = [
        "/console".to_owned(),
        "/console/agents/alice".to_owned(),
        "/console/agents/alice/memories".to_owned(),
        "/console/agents/alice/memories?project=&channel=ops&source=discord%3A1&after=2000-01-01&before=2999-01-01".to_owned(),
        format!("/console/agents/alice/memories/{id}"),
        "/console/agents/alice/episodes".to_owned(),
        "/console/agents/alice/profile".to_owned(),
        "/console/agents/alice/search".to_owned(),
        "/console/agents/alice/search?q=kettle&ago_value=2&ago_unit=weeks&confidence=vague".to_owned(),
        "/console/agents/alice/search?q=kettle&after=2020-01-01&before=2999-01-01&confidence=sure".to_owned(),
        "/console/health".to_owned(),
        "/console/trace".to_owned(),
        trace.clone(),
        format!("{trace}?expect=mem:{id}"),
        format!("{trace}?key=depth&value=100"),
        format!("{trace}?key=arm_off&value=vector_near"),
        format!("{trace}/json"),
    ];
    for page in &pages {
        let (status, body) = get(&http, &format!("{base}{page}"), Some(&cookie));
        assert_eq!(status, 200, "{page}: {body}");
        let (status, body) = get(&http, &format!("{base}{page}"), None);
        assert_eq!(status, 401, "{page} without a session");
        assert!(
            body.contains(r#"action="/console/login""#),
            "{page}: {body}"
        );
        assert!(
            !body.contains("kettle"),
            "{page} leaked a row without a session"
        );
    }
    // What the pages must show: stored text escaped, the histogram, the attribution.
    let (_, list) = get(
        &http,
        &format!("{base}/console/agents/alice/memories"),
        Some(&cookie),
    );
    assert!(
        list.contains("&lt;b&gt;not markup&lt;/b&gt;") && !list.contains("<b>not markup"),
        "{list}"
    );
    let (_, filtered) = get(
        &http,
        &format!("{base}/console/agents/alice/memories?channel=ops"),
        Some(&cookie),
    );
    assert!(
        filtered.contains("number 4 ") && !filtered.contains("number 3 "),
        "{filtered}"
    );
    let (_, agent) = get(
        &http,
        &format!("{base}/console/agents/alice"),
        Some(&cookie),
    );
    assert!(
        agent.contains("<svg") && agent.contains("per week"),
        "{agent}"
    );
    let (_, attributed) = get(
        &http,
        &format!("{base}{trace}?expect=mem:{id}"),
        Some(&cookie),
    );
    assert!(attributed.contains("Failure code"), "{attributed}");
    let (_, replayed) = get(
        &http,
        &format!("{base}{trace}?key=depth&value=1"),
        Some(&cookie),
    );
    assert!(replayed.contains("Replayed answer"), "{replayed}");
    // A bearer token works without a cookie; a wrong one does not.
    let res = http
        .get(format!("{base}/console/agents/alice/memories"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let res = http
        .get(format!("{base}/console"))
        .header("Authorization", "Bearer not-the-token-at-all-xyz")
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    // A wrong token at the login form gets no session.
    let (status, _) = post(
        &http,
        &format!("{base}/console/login"),
        None,
        &[],
        "token=wrong-token-123456789",
    );
    assert_eq!(status, 401);
}

/// A refused post: what it is, where it goes, its headers, its fields, the status owed.
type Forged<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, &'a str, u16);

#[test]
fn forged_cross_site_and_oversized_posts_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let running = console(dir.path(), &[("CPERSONA_AUTH_TOKEN", TOKEN)]);
    let base = &running.base;
    let http = client();
    let cookie = login(&http, base, TOKEN);
    let id = id_of(dir.path(), "number 5 ");
    let detail = format!("{base}/console/agents/alice/memories/{id}");
    let (_, page) = get(&http, &detail, Some(&cookie));
    let csrf = csrf_of(&page);
    let before = all_memories(dir.path());
    let host = base.trim_start_matches("http://");
    let same_origin = format!("http://{host}");
    let cases: Vec<Forged> = vec![
        (
            "no CSRF token",
            format!("{detail}/edit"),
            vec![],
            "content=forged",
            403,
        ),
        (
            "a wrong CSRF token",
            format!("{detail}/edit"),
            vec![],
            "content=forged&csrf=0000",
            403,
        ),
        (
            "a cross-site Origin",
            format!("{detail}/edit"),
            vec![("Origin", "http://evil.example")],
            "",
            403,
        ),
        (
            "cross-site fetch metadata",
            format!("{detail}/delete"),
            vec![("Sec-Fetch-Site", "cross-site")],
            "confirm=yes",
            403,
        ),
        (
            "a delete without its confirmation",
            format!("{detail}/delete"),
            vec![("Origin", same_origin.as_str())],
            "",
            400,
        ),
        ("no CSRF on lock", format!("{detail}/lock"), vec![], "", 403),
    ];
    for (what, url, headers, fields, expected) in &cases {
        // The forged ones carry no token of ours (or a wrong one); the others the real one.
        let body = match *what {
            "no CSRF token" | "no CSRF on lock" | "a wrong CSRF token" => (*fields).to_owned(),
            _ => format!("csrf={csrf}&{fields}")
                .trim_end_matches('&')
                .to_owned(),
        };
        let (status, page) = post(&http, url, Some(&cookie), headers, &body);
        assert_eq!(status, *expected, "{what}: {page}");
        assert!(page.contains("Nothing was written"), "{what}: {page}");
        assert_eq!(all_memories(dir.path()), before, "{what} wrote");
    }
    // A 1 MB field: 413 with the limit named, nothing written.
    let big = format!("csrf={csrf}&content={}", "a".repeat(1_000_000));
    let (status, page) = post(&http, &format!("{detail}/edit"), Some(&cookie), &[], &big);
    assert_eq!(status, 413, "{page}");
    assert!(page.contains("byte limit"), "{page}");
    assert_eq!(all_memories(dir.path()), before, "the 1 MB edit wrote");
    // The engine's own validation still applies: an empty text is refused.
    let (status, page) = post(
        &http,
        &format!("{detail}/edit"),
        Some(&cookie),
        &[],
        &format!("csrf={csrf}&content="),
    );
    assert_eq!(status, 400, "{page}");
    assert_eq!(all_memories(dir.path()), before, "the empty edit wrote");
    // A cross-site login is refused too (login CSRF).
    let (status, _) = post(
        &http,
        &format!("{base}/console/login"),
        None,
        &[("Origin", "http://evil.example")],
        &format!("token={TOKEN}"),
    );
    assert_eq!(status, 403);
}

#[test]
fn edit_lock_and_delete_land_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let running = console(dir.path(), &[("CPERSONA_AUTH_TOKEN", TOKEN)]);
    let base = &running.base;
    let http = client();
    let cookie = login(&http, base, TOKEN);
    let host = base.trim_start_matches("http://");
    let origin = [
        ("Origin", format!("http://{host}")),
        ("Sec-Fetch-Site", "same-origin".to_owned()),
    ];
    let origin: Vec<(&str, &str)> = origin.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let id = id_of(dir.path(), "number 7 ");
    let detail = format!("{base}/console/agents/alice/memories/{id}");
    let (_, page) = get(&http, &detail, Some(&cookie));
    let csrf = csrf_of(&page);
    let (status, _) = post(
        &http,
        &format!("{detail}/edit"),
        Some(&cookie),
        &origin,
        &format!("csrf={csrf}&content=corrected+by+a+person"),
    );
    assert_eq!(status, 303);
    assert_eq!(
        memory(dir.path(), id),
        Some(("corrected by a person".to_owned(), false))
    );
    let (status, _) = post(
        &http,
        &format!("{detail}/lock"),
        Some(&cookie),
        &origin,
        &format!("csrf={csrf}"),
    );
    assert_eq!(status, 303);
    assert_eq!(memory(dir.path(), id).map(|m| m.1), Some(true));
    let (_, page) = get(&http, &detail, Some(&cookie));
    assert!(
        page.contains("corrected by a person") && page.contains(">locked<"),
        "{page}"
    );
    let (status, _) = post(
        &http,
        &format!("{detail}/unlock"),
        Some(&cookie),
        &origin,
        &format!("csrf={csrf}"),
    );
    assert_eq!(status, 303);
    assert_eq!(memory(dir.path(), id).map(|m| m.1), Some(false));
    let (status, page) = post(
        &http,
        &format!("{detail}/delete"),
        Some(&cookie),
        &origin,
        &format!("csrf={csrf}&confirm=yes"),
    );
    assert_eq!(status, 200, "{page}");
    assert_eq!(memory(dir.path(), id), None, "the delete did not land");
    let (status, _) = get(&http, &detail, Some(&cookie));
    assert_eq!(status, 404);
    // Log out: the cookie no longer opens anything.
    let (status, _) = post(
        &http,
        &format!("{base}/console/logout"),
        Some(&cookie),
        &origin,
        &format!("csrf={csrf}"),
    );
    assert_eq!(status, 200);
    let (status, _) = get(&http, &format!("{base}/console"), Some(&cookie));
    assert_eq!(status, 401);
}

#[cfg(unix)]
fn private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[cfg(not(unix))]
fn private(_path: &Path) {}

#[test]
fn an_acl_client_sees_and_changes_only_what_its_grants_allow() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let acl = dir.path().join("acl.json");
    std::fs::write(
        &acl,
        json!({"clients": [
            {"client_id": "viewer", "token": VIEWER_TOKEN, "grants": {"alice": "read"}},
            {"client_id": "admin", "token": TOKEN, "grants": {"*": "read-write"}}
        ]})
        .to_string(),
    )
    .unwrap();
    private(&acl);
    let running = console(dir.path(), &[("CPERSONA_ACL_FILE", acl.to_str().unwrap())]);
    let base = &running.base;
    let http = client();
    let cookie = login(&http, base, VIEWER_TOKEN);
    let (status, index) = get(&http, &format!("{base}/console"), Some(&cookie));
    assert_eq!(status, 200);
    assert!(
        index.contains("/console/agents/alice") && !index.contains("/console/agents/bob"),
        "{index}"
    );
    for page in [
        "/console/agents/bob",
        "/console/agents/bob/memories",
        "/console/agents/bob/search?q=trains",
        "/console/agents/bob/profile",
    ] {
        let (status, body) = get(&http, &format!("{base}{page}"), Some(&cookie));
        assert_eq!(status, 403, "{page}: {body}");
        assert!(!body.contains("bob likes trains"), "{page} leaked");
    }
    let id = id_of(dir.path(), "number 2 ");
    let detail = format!("{base}/console/agents/alice/memories/{id}");
    let (status, page) = get(&http, &detail, Some(&cookie));
    assert_eq!(status, 200);
    assert!(page.contains("read-only"), "{page}");
    let csrf = csrf_of(&page);
    let before = all_memories(dir.path());
    for action in ["edit", "lock", "delete"] {
        let (status, body) = post(
            &http,
            &format!("{detail}/{action}"),
            Some(&cookie),
            &[],
            &format!("csrf={csrf}&content=x&confirm=yes"),
        );
        assert_eq!(status, 403, "{action}: {body}");
        assert!(body.contains("viewer"), "{body}");
    }
    let bob = {
        let conn = rusqlite::Connection::open(db(dir.path())).unwrap();
        conn.query_row("SELECT id FROM memories WHERE agent_id = 'bob'", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
    };
    let (status, _) = post(
        &http,
        &format!("{base}/console/agents/bob/memories/{bob}/delete"),
        Some(&cookie),
        &[],
        &format!("csrf={csrf}&confirm=yes"),
    );
    assert_eq!(status, 403);
    assert_eq!(all_memories(dir.path()), before, "a refused client wrote");
    // The admin client (wildcard read-write) sees both.
    let admin = login(&http, base, TOKEN);
    let (_, index) = get(&http, &format!("{base}/console"), Some(&admin));
    assert!(index.contains("/console/agents/bob"), "{index}");
}

#[test]
fn an_open_console_binds_loopback_only_and_a_tokenless_one_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let refused = try_console(
        dir.path(),
        "0.0.0.0:0",
        &[("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", "true")],
    )
    .map(|_| ())
    .expect_err("an open console on every interface started");
    assert!(refused.contains("loopback"), "{refused}");
    let refused = try_console(dir.path(), "127.0.0.1:0", &[])
        .map(|_| ())
        .expect_err("a console without a token started");
    assert!(refused.contains("CPERSONA_AUTH_TOKEN"), "{refused}");
    // Open on loopback when asked: no login, but forms still need their CSRF token.
    seed(dir.path());
    let running = console(
        dir.path(),
        &[("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", "true")],
    );
    let http = client();
    let res = http
        .get(format!("{}/console", running.base))
        .call()
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let id = id_of(dir.path(), "number 1 ");
    let before = all_memories(dir.path());
    let (status, _) = post(
        &http,
        &format!("{}/console/agents/alice/memories/{id}/delete", running.base),
        None,
        &[],
        "confirm=yes",
    );
    assert_eq!(status, 403);
    assert_eq!(all_memories(dir.path()), before);
}

#[test]
fn serve_http_mounts_the_console_beside_mcp() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let mut cmd = cpersona_in(dir.path());
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("CPERSONA_AUTH_TOKEN", TOKEN);
    let running = start(cmd, "console at http://")
        .unwrap_or_else(|log| panic!("serve did not start:\n{log}"));
    let http = client();
    let (status, _) = get(&http, &format!("{}/console", running.base), None);
    assert_eq!(status, 401);
    let cookie = login(&http, &running.base, TOKEN);
    let (status, page) = get(
        &http,
        &format!("{}/console/agents/alice/memories", running.base),
        Some(&cookie),
    );
    assert_eq!(status, 200);
    assert!(page.contains("kettle"));
    // `/mcp` keeps its own bearer check: the console's cookie opens nothing there.
    let res = http
        .post(format!("{}/mcp", running.base))
        .header("Cookie", &cookie)
        .header("Content-Type", "application/json")
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
}
