//! The crash-safety soak: the harness of `tests/it/crash.rs` with many iterations.
//!
//! `cargo run -p cpersona-server --example crash_soak -- --iterations 500 [--seed N]
//! [--max-kill-ms MS] [--dir PATH] [--bin PATH] [--verbose]`
//!
//! It spawns the real `cpersona` binary (built beside this example; `--bin` overrides),
//! SIGKILLs it at seeded random points and checks the store after every restart. It prints
//! a summary and exits non-zero when any invariant broke. It never touches a store it did not
//! create (the default folder is a fresh temporary one).

#![allow(clippy::print_stdout)]

#[allow(dead_code)]
#[path = "../tests/it/crash/check.rs"]
mod check;
#[allow(dead_code)]
#[path = "../tests/it/crash/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut config = harness::CrashConfig {
        bin: PathBuf::new(),
        dir: PathBuf::new(),
        seed: 0x5EED_0009,
        iterations: 100,
        max_kill_ms: 400,
        verbose: false,
    };
    let mut bin = None;
    let mut dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--iterations" => config.iterations = number(&value("--iterations")) as usize,
            "--seed" => config.seed = number(&value("--seed")),
            "--max-kill-ms" => config.max_kill_ms = number(&value("--max-kill-ms")),
            "--dir" => dir = Some(PathBuf::from(value("--dir"))),
            "--bin" => bin = Some(PathBuf::from(value("--bin"))),
            "--verbose" => config.verbose = true,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    config.bin = bin.unwrap_or_else(sibling_binary);
    let _tmp;
    config.dir = match dir {
        Some(dir) => dir,
        None => {
            let tmp = tempfile::tempdir().unwrap_or_else(|e| usage(&format!("tempdir: {e}")));
            let path = tmp.path().to_path_buf();
            _tmp = tmp;
            path
        }
    };
    let started = Instant::now();
    let report = harness::run(&config);
    let elapsed = started.elapsed();
    println!(
        "crash_soak seed={:#x} iterations={} in {:.1}s",
        config.seed,
        report.iterations,
        elapsed.as_secs_f64()
    );
    println!("  acknowledged writes      {}", report.acked_writes);
    println!(
        "  kills with a write in flight {} (landed whole: {})",
        report.in_flight_kills, report.in_flight_landed
    );
    println!(
        "  kills during index rebuild   {} (rebuilds finished: {})",
        report.rebuild_kills, report.rebuilds_finished
    );
    println!(
        "  new generations validated    {}",
        report.generations_validated
    );
    println!("  rows at the end              {}", report.final_rows);
    println!("  failures                     {}", report.failures.len());
    for failure in &report.failures {
        println!("    {failure}");
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn number(text: &str) -> u64 {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.unwrap_or_else(|_| usage(&format!("{text:?} is not a number")))
}

/// `target/<profile>/cpersona`, beside `target/<profile>/examples/crash_soak`; built with
/// cargo when missing.
fn sibling_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| usage(&format!("current_exe: {e}")));
    let profile_dir = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(PathBuf::from)
        .unwrap_or_default();
    let bin = profile_dir.join("cpersona");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "cpersona-server", "--bin", "cpersona"])
            .status();
        if !status.is_ok_and(|s| s.success()) || !bin.exists() {
            usage(&format!("{} is missing; pass --bin", bin.display()));
        }
    }
    bin
}

fn usage(problem: &str) -> ! {
    eprintln!("crash_soak: {problem}");
    eprintln!(
        "usage: crash_soak [--iterations N] [--seed N] [--max-kill-ms MS] [--dir PATH] [--bin PATH] [--verbose]"
    );
    std::process::exit(2)
}
