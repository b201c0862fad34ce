//! Every request gets an answer (issue 18), through the real binary on both transports:
//! - `transport/stdio_lines.rs`: each line that is not JSON, not a request or carries bad
//!   params gets its JSON-RPC error (-32700, -32600, -32602) with the id when one can be read;
//!   a valid notification or response gets none; the server keeps serving and exits cleanly;
//! - `transport/http_bodies.rs`: the same bodies over streamable HTTP get 400 with a JSON-RPC
//!   body (-32602 on a request: 200, as any answered request), while the token, Origin, Accept
//!   and size checks answer first exactly as before;
//! - `transport/numbers.rs`: a number beyond what an argument can hold is refused with the
//!   argument's name;
//! - `transport/limits.rs`: a text over the one content limit is refused with the limit (never
//!   cut, so never skipped as a duplicate of its cut self), a duplicate names the memory it
//!   matched, and an `ago` cue past about 1,000 years is refused naming `time_cue.ago.value`;
//! - the seeded transport fuzz (`transport/fuzz.rs`), short here; the long run is
//!   `cargo build --workspace --example transport_fuzz && target/debug/examples/transport_fuzz --count 20000`.

pub(crate) mod client;
pub(crate) mod fuzz;
pub(crate) mod hostile;
mod http_bodies;
mod limits;
mod numbers;
mod stdio_lines;

use std::path::Path;

use fuzz::{FuzzConfig, FuzzReport};

/// Fuzz cases per transport in CI (a few seconds each on a debug build).
const CI_FUZZ_CASES: usize = 1500;

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cpersona"))
}

fn check_report(report: &FuzzReport) {
    assert!(report.failures.is_empty(), "{report:#?}");
    assert_eq!(report.sent, CI_FUZZ_CASES, "{report:#?}");
    assert_eq!(report.crashes, 0, "{report:#?}");
    assert_eq!(report.rows_changed_by_refusals, 0, "{report:#?}");
    // Every case that must be answered was, once; the rest are the valid notifications and
    // responses, which JSON-RPC never answers.
    assert_eq!(report.answered + report.silent, report.sent, "{report:#?}");
    // The run reached every layer, or it proves little: parse errors, invalid requests, bad
    // params, tool refusals, accepted calls, refused calls checked against the store.
    for code in [-32700, -32600, -32602] {
        assert!(
            report.rpc_errors.get(&code).copied().unwrap_or(0) > 0,
            "no {code}: {report:#?}"
        );
    }
    assert!(report.tool_refusals > 20, "{report:#?}");
    assert!(report.tool_ok > 5, "{report:#?}");
    assert!(report.silent > 0, "{report:#?}");
    assert!(report.refusals_checked > 50, "{report:#?}");
}

#[test]
fn stdio_fuzz_answers_every_line_and_refused_calls_write_nothing() {
    let report = fuzz::run_stdio(&FuzzConfig {
        bin: bin().to_path_buf(),
        seed: 0x18_5710,
        count: CI_FUZZ_CASES,
        verbose: false,
    });
    eprintln!("{}", report.summary());
    check_report(&report);
}

#[test]
fn http_fuzz_answers_every_body_and_refused_calls_write_nothing() {
    let report = fuzz::run_http(&FuzzConfig {
        bin: bin().to_path_buf(),
        seed: 0x18_4770,
        count: CI_FUZZ_CASES,
        verbose: false,
    });
    eprintln!("{}", report.summary());
    check_report(&report);
}
