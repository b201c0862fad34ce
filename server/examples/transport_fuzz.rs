//! The transport fuzz of `tests/it/transport.rs`, long: random bytes, random JSON, broken and
//! valid envelopes, other methods with odd params and hostile calls of every tool, through the
//! real binary on stdio and over streamable HTTP, with a table of figures.
//!
//! `cargo build --workspace --example transport_fuzz && target/debug/examples/transport_fuzz
//! [--count 20000] [--seed N] [--transport stdio|http|both] [--bin PATH] [--verbose]`
//!
//! Every case must get what it is owed (one answer with its id, one error with a null id, or
//! none for a notification or response), the process must still answer `ping` and exit
//! cleanly, and no refused call may change the store (compared after each refusal). It exits
//! non-zero on any failure. It never touches a store it did not create.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../tests/it/crash/check.rs"]
mod check;
#[allow(dead_code)]
#[path = "../tests/it/crash/harness.rs"]
mod harness;
/// The crash harness's `Rng` and `command`, where the shared modules look for them.
mod crash {
    pub(crate) use super::harness;
}
#[allow(dead_code)]
#[path = "../tests/it/transport/client.rs"]
mod client;
#[allow(dead_code)]
#[path = "../tests/it/transport/fuzz.rs"]
mod fuzz;
#[allow(dead_code)]
#[path = "../tests/it/transport/hostile.rs"]
mod hostile;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fuzz::{FuzzConfig, FuzzReport};

fn main() -> ExitCode {
    let mut config = FuzzConfig {
        bin: PathBuf::new(),
        seed: 0x18_F022,
        count: 20_000,
        verbose: false,
    };
    let mut transport = "both".to_owned();
    let mut bin = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--count" => config.count = number(&value("--count")) as usize,
            "--seed" => config.seed = number(&value("--seed")),
            "--transport" => transport = value("--transport"),
            "--bin" => bin = Some(PathBuf::from(value("--bin"))),
            "--verbose" => config.verbose = true,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    config.bin = bin.unwrap_or_else(sibling_binary);
    let reports: Vec<FuzzReport> = match transport.as_str() {
        "stdio" => vec![fuzz::run_stdio(&config)],
        "http" => vec![fuzz::run_http(&config)],
        "both" => vec![fuzz::run_stdio(&config), fuzz::run_http(&config)],
        other => usage(&format!("--transport {other}: stdio, http or both")),
    };
    println!(
        "transport_fuzz seed={:#x} count={} binary {}",
        config.seed,
        config.count,
        config.bin.display()
    );
    println!(
        "{:<9} {:>7} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>12} {:>8} {:>7}",
        "transport",
        "sent",
        "answered",
        "no answer",
        "refusals",
        "-32700",
        "-32600",
        "-32602",
        "tool ok",
        "rows changed",
        "crashes",
        "seconds"
    );
    for r in &reports {
        let code = |c: i64| r.rpc_errors.get(&c).copied().unwrap_or(0);
        println!(
            "{:<9} {:>7} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>12} {:>8} {:>7.1}",
            r.transport,
            r.sent,
            r.answered,
            r.silent,
            r.refusals(),
            code(-32700),
            code(-32600),
            code(-32602),
            r.tool_ok,
            format!("{}/{}", r.rows_changed_by_refusals, r.refusals_checked),
            r.crashes,
            r.elapsed.as_secs_f64()
        );
    }
    for r in &reports {
        println!();
        println!("{}", r.summary());
        println!("  cases by kind: {:?}", r.kinds);
        println!("  tool refusals (ok: false): {}", r.tool_refusals);
        for failure in &r.failures {
            println!("  FAILURE {failure}");
        }
    }
    if reports.iter().all(|r| r.failures.is_empty()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn number(text: &str) -> u64 {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.replace('_', "").parse(),
    };
    parsed.unwrap_or_else(|_| usage(&format!("{text:?} is not a number")))
}

/// `target/<profile>/cpersona`, beside `target/<profile>/examples/transport_fuzz`.
fn sibling_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| usage(&format!("current_exe: {e}")));
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("cpersona"))
        .unwrap_or_default();
    if !bin.exists() {
        usage(&format!(
            "{} is missing: build it (cargo build --workspace) or pass --bin",
            bin.display()
        ));
    }
    bin
}

fn usage(problem: &str) -> ! {
    eprintln!("transport_fuzz: {problem}");
    eprintln!(
        "usage: transport_fuzz [--count N] [--seed N] [--transport stdio|http|both] [--bin PATH] [--verbose]"
    );
    std::process::exit(2)
}
