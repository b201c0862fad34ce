//! The transport fuzz runner, shared by the CI tests (`tests/it/transport.rs`, a short seeded
//! run per transport) and `examples/transport_fuzz.rs` (long runs with `--count`/`--seed`).
//! It drives the real binary with the cases of `hostile.rs`, one at a time, and checks:
//! - every case gets exactly what it is owed: one answer carrying its id, one error with a
//!   null id, or none for a notification or response (stdio: no line; HTTP: 202, or a 4xx
//!   with a body for a response a stateless server cannot take); every stdout line and every
//!   HTTP body is JSON-RPC; no 5xx and no 415 for a JSON body;
//! - no crash: the process still answers `ping` at the end and exits cleanly (stdin closed;
//!   SIGTERM for HTTP);
//! - no row changed by a refused call: after each refusal (a JSON-RPC error or a tool's
//!   `ok: false`) the store's fingerprint equals the one before it.
//!
//! A run stops early after a handful of failures, so a broken build fails fast.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::{RawHttp, RawStdio, StdoutLine, StoreView};
use super::hostile::{Case, Expect, Tool, next_case};
use crate::crash::harness::Rng;

/// What a run is asked to do.
#[derive(Clone, Debug)]
pub(crate) struct FuzzConfig {
    /// The `cpersona` binary.
    pub(crate) bin: PathBuf,
    /// Seed of every choice.
    pub(crate) seed: u64,
    /// Cases to send.
    pub(crate) count: usize,
    /// One line per case on stderr.
    pub(crate) verbose: bool,
}

/// What a run saw.
#[derive(Debug, Default)]
pub(crate) struct FuzzReport {
    pub(crate) transport: &'static str,
    pub(crate) sent: usize,
    /// Cases that got their one answer (a line on stdio; a JSON-RPC body over HTTP).
    pub(crate) answered: usize,
    /// Notifications and responses, owed no answer and given none (HTTP: 202, or a refusal
    /// of a response counted in `answered`).
    pub(crate) silent: usize,
    /// JSON-RPC errors by code.
    pub(crate) rpc_errors: BTreeMap<i64, usize>,
    /// Tool calls answered `ok: false`.
    pub(crate) tool_refusals: usize,
    /// Tool calls answered with a result.
    pub(crate) tool_ok: usize,
    /// Refusals after which the store was compared with its state before.
    pub(crate) refusals_checked: usize,
    /// Refusals after which the store had changed (must be 0).
    pub(crate) rows_changed_by_refusals: usize,
    /// Times the process died or stopped answering (must be 0).
    pub(crate) crashes: usize,
    /// HTTP statuses seen.
    pub(crate) statuses: BTreeMap<u16, usize>,
    /// Cases by kind.
    pub(crate) kinds: BTreeMap<&'static str, usize>,
    pub(crate) failures: Vec<String>,
    pub(crate) elapsed: Duration,
}

impl FuzzReport {
    /// Refusals of every kind: JSON-RPC errors and tool refusals.
    pub(crate) fn refusals(&self) -> usize {
        self.rpc_errors.values().sum::<usize>() + self.tool_refusals
    }

    /// One paragraph of figures.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} fuzz: {} sent, {} answered, {} owed no answer, {} refusals (JSON-RPC errors \
             {:?}, tool refusals {}), {} tool results, {} crashes, {} of {} refusals changed \
             rows, statuses {:?}, {} failures, {:.1}s",
            self.transport,
            self.sent,
            self.answered,
            self.silent,
            self.refusals(),
            self.rpc_errors,
            self.tool_refusals,
            self.tool_ok,
            self.crashes,
            self.rows_changed_by_refusals,
            self.refusals_checked,
            self.statuses,
            self.failures.len(),
            self.elapsed.as_secs_f64()
        )
    }

    fn fail(&mut self, n: usize, case: &Case, what: String) {
        let head = String::from_utf8_lossy(&case.bytes[..case.bytes.len().min(160)]).into_owned();
        self.failures
            .push(format!("#{n} {} [{head}]: {what}", case.kind));
    }

    /// Counts a JSON-RPC answer; true when it is a refusal.
    fn count_answer(&mut self, reply: &Value) -> bool {
        if let Some(code) = reply["error"]["code"].as_i64() {
            *self.rpc_errors.entry(code).or_default() += 1;
            return true;
        }
        let result = &reply["result"];
        if result.get("content").is_none() {
            return false;
        }
        if result["isError"] == true {
            self.tool_refusals += 1;
            true
        } else {
            self.tool_ok += 1;
            false
        }
    }
}

/// The most failures a run collects before it stops.
const STOP_AFTER_FAILURES: usize = 5;

/// Whether `reply` is a JSON-RPC answer: version, an id member, one of result and error.
fn is_answer(reply: &Value) -> bool {
    reply["jsonrpc"] == "2.0"
        && reply.get("id").is_some()
        && (reply.get("result").is_some() != reply.get("error").is_some())
}

fn seed_rows() -> Vec<Vec<u8>> {
    let calls = [
        (
            "store",
            json!({"agent_id": "fz", "content": "the kettle is copper"}),
        ),
        (
            "store",
            json!({"agent_id": "fz", "content": "the orchard floods in spring"}),
        ),
        (
            "archive_episode",
            json!({"agent_id": "fz", "summary": "we mapped the harbour", "keywords": "harbour map"}),
        ),
        (
            "update_profile",
            json!({"agent_id": "fz", "profile": "prefers violet"}),
        ),
    ];
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| {
            json!({"jsonrpc": "2.0", "id": format!("seed-{i}"), "method": "tools/call",
                "params": {"name": tool, "arguments": args}})
            .to_string()
            .into_bytes()
        })
        .collect()
}

fn tools_of(list: &Value) -> Vec<Tool> {
    list["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| Tool {
                    name: t["name"].as_str().unwrap_or_default().to_owned(),
                    schema: t["inputSchema"].clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The fuzz over stdio: one line per case, each answered before the next is sent.
pub(crate) fn run_stdio(config: &FuzzConfig) -> FuzzReport {
    let started = Instant::now();
    let mut report = FuzzReport {
        transport: "stdio",
        ..FuzzReport::default()
    };
    let mut raw = RawStdio::spawn(&config.bin);
    raw.handshake();
    let mut stray: Vec<StdoutLine> = Vec::new();
    // One at a time: answers to concurrent calls may come in any order.
    for (i, line) in seed_rows().iter().enumerate() {
        raw.send(line);
        let reply = raw.reply_to(&json!(format!("seed-{i}")), &mut stray);
        assert!(
            reply
                .as_ref()
                .is_some_and(|r| r["result"]["isError"] != true),
            "seeding failed: {reply:?}"
        );
    }
    raw.send(
        json!({"jsonrpc": "2.0", "id": "tools", "method": "tools/list"})
            .to_string()
            .as_bytes(),
    );
    let tools = tools_of(
        &raw.reply_to(&json!("tools"), &mut stray)
            .unwrap_or_default(),
    );
    assert!(tools.len() > 20, "tools/list: {} tools", tools.len());
    let view = StoreView::open(&raw.db).unwrap();
    let mut last = view.fingerprint();
    let mut rng = Rng::new(config.seed);
    for n in 0..config.count {
        if report.failures.len() >= STOP_AFTER_FAILURES {
            break;
        }
        let case = next_case(&mut rng, &tools, n);
        *report.kinds.entry(case.kind).or_default() += 1;
        report.sent += 1;
        if !raw.send(&case.bytes) {
            report.crashes += 1;
            report.fail(n, &case, "stdin closed: the process is gone".into());
            break;
        }
        let mut others = Vec::new();
        let reply = match &case.expect {
            Expect::Keyed(id) => raw.reply_to(id, &mut others),
            Expect::Unkeyed => raw.reply_to(&Value::Null, &mut others),
            Expect::Notification | Expect::OddNotification | Expect::Response => {
                report.silent += 1;
                None
            }
        };
        for other in others {
            report.fail(n, &case, format!("a line it was not owed: {other:?}"));
        }
        let owed = matches!(case.expect, Expect::Keyed(_) | Expect::Unkeyed);
        let Some(reply) = reply else {
            if owed {
                if !raw.is_running() {
                    report.crashes += 1;
                    report.fail(n, &case, "no answer: the process died".into());
                    break;
                }
                report.fail(n, &case, "no answer".into());
            }
            continue;
        };
        report.answered += 1;
        if !is_answer(&reply) {
            report.fail(n, &case, format!("not a JSON-RPC answer: {reply}"));
        }
        if case.expect == Expect::Unkeyed && reply.get("error").is_none() {
            report.fail(
                n,
                &case,
                format!("a result for what is no request: {reply}"),
            );
        }
        let refused = report.count_answer(&reply);
        let now = view.fingerprint();
        if refused {
            report.refusals_checked += 1;
            if now != last {
                report.rows_changed_by_refusals += 1;
                report.fail(n, &case, format!("a refusal changed the store: {reply}"));
            }
        }
        last = now;
        if config.verbose {
            eprintln!("#{n} {}: {}", case.kind, truncate(&reply.to_string()));
        }
    }
    let mut others = Vec::new();
    if raw.ping("final-ping", &mut others).is_none() {
        report.crashes += 1;
        report.failures.push("no answer to the final ping".into());
    }
    let (status, rest) = raw.close();
    others.extend(rest);
    if !others.is_empty() {
        report.failures.push(format!(
            "{} lines owed to no case: {others:?}",
            others.len()
        ));
    }
    if !status.success() {
        report.crashes += 1;
        report.failures.push(format!("exit status {status}"));
    }
    report.elapsed = started.elapsed();
    report
}

/// The fuzz over streamable HTTP: one POST per case.
pub(crate) fn run_http(config: &FuzzConfig) -> FuzzReport {
    let started = Instant::now();
    let mut report = FuzzReport {
        transport: "http",
        ..FuzzReport::default()
    };
    let mut http = RawHttp::spawn(&config.bin);
    http.initialize();
    for line in seed_rows() {
        let reply = http.post(&line).and_then(|r| r.json);
        assert!(
            reply
                .as_ref()
                .is_some_and(|r| r["result"]["isError"] != true),
            "seeding failed: {reply:?}"
        );
    }
    let list = json!({"jsonrpc": "2.0", "id": "tools", "method": "tools/list"}).to_string();
    let tools = tools_of(
        &http
            .post(list.as_bytes())
            .and_then(|r| r.json)
            .unwrap_or_default(),
    );
    assert!(tools.len() > 20, "tools/list: {} tools", tools.len());
    let view = StoreView::open(&http.db).unwrap();
    let mut last = view.fingerprint();
    let mut rng = Rng::new(config.seed);
    for n in 0..config.count {
        if report.failures.len() >= STOP_AFTER_FAILURES {
            break;
        }
        let case = next_case(&mut rng, &tools, n);
        *report.kinds.entry(case.kind).or_default() += 1;
        report.sent += 1;
        let Some(reply) = http.post(&case.bytes) else {
            if !http.is_running() {
                report.crashes += 1;
                report.fail(n, &case, "no HTTP answer: the process died".into());
                break;
            }
            report.fail(n, &case, "no HTTP answer".into());
            continue;
        };
        *report.statuses.entry(reply.status).or_default() += 1;
        if reply.status >= 500 || reply.status == 415 {
            report.fail(
                n,
                &case,
                format!("HTTP {}: {}", reply.status, truncate(&reply.body)),
            );
        }
        if case.expect == Expect::Notification {
            if reply.status == 202 && reply.body.is_empty() {
                report.silent += 1;
            } else {
                report.fail(n, &case, format!("a notification got {reply:?}"));
            }
            continue;
        }
        if case.expect == Expect::OddNotification {
            // Valid JSON-RPC the server cannot take: over HTTP a status is owed, 400 with
            // the reason and no id to match.
            if reply.status == 400
                && reply
                    .json
                    .as_ref()
                    .is_some_and(|j| j["id"].is_null() && j["error"].is_object())
            {
                report.answered += 1;
            } else {
                report.fail(n, &case, format!("an odd notification got {reply:?}"));
            }
            continue;
        }
        if case.expect == Expect::Response {
            // A stateless server has no request a response could answer: rmcp refuses it
            // with a 400 and a JSON-RPC error that has no id (as the transport allows).
            if reply.status == 400 && reply.json.as_ref().is_some_and(|j| j["error"].is_object()) {
                report.answered += 1;
            } else {
                report.fail(n, &case, format!("a response got {reply:?}"));
            }
            continue;
        }
        let Some(json) = reply.json.as_ref().filter(|j| is_answer(j)) else {
            report.fail(n, &case, format!("no JSON-RPC body: {reply:?}"));
            continue;
        };
        report.answered += 1;
        let fits = match &case.expect {
            Expect::Keyed(id) => json.get("id") == Some(id) && matches!(reply.status, 200 | 400),
            _ => json["id"].is_null() && json.get("error").is_some() && reply.status == 400,
        };
        if !fits {
            report.fail(n, &case, format!("owed {:?}, got {reply:?}", case.expect));
        }
        let refused = report.count_answer(json);
        let now = view.fingerprint();
        if refused {
            report.refusals_checked += 1;
            if now != last {
                report.rows_changed_by_refusals += 1;
                report.fail(n, &case, format!("a refusal changed the store: {json}"));
            }
        }
        last = now;
        if config.verbose {
            eprintln!(
                "#{n} {} {}: {}",
                case.kind,
                reply.status,
                truncate(&json.to_string())
            );
        }
    }
    if !http.ping() {
        report.crashes += 1;
        report.failures.push("no answer to the final ping".into());
    }
    let status = http.stop();
    if !status.success() {
        report.crashes += 1;
        report.failures.push(format!("exit status {status}"));
    }
    report.elapsed = started.elapsed();
    report
}

fn truncate(text: &str) -> String {
    text.chars().take(200).collect()
}
