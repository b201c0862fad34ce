//! The real-client test: `scripts/mcp_client_test.py` drives the real binary with the Python
//! `mcp` SDK over stdio and HTTP. It needs `CPERSONA_TEST_PYTHON` pointing to a python with
//! `mcp` installed (`.ci/run` sets it) and fails with that instruction when it is unset.

use std::path::Path;
use std::process::Command;

/// The binary runs the engine: store, recall, get_contents, update, delete, export/import
/// through the real client.
const MODE: &str = "full";

#[test]
fn python_mcp_sdk_drives_the_binary_over_stdio_and_http() {
    let Some(python) = std::env::var_os("CPERSONA_TEST_PYTHON") else {
        panic!(
            "CPERSONA_TEST_PYTHON is not set: point it to a python with the `mcp` SDK, e.g.\n  \
             python3 -m venv /tmp/mcpvenv && /tmp/mcpvenv/bin/pip install mcp\n  \
             CPERSONA_TEST_PYTHON=/tmp/mcpvenv/bin/python cargo test -p cpersona-server"
        );
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp_client_test.py");
    let out = Command::new(python)
        .arg(script)
        .args(["--binary", env!("CARGO_BIN_EXE_cpersona"), "--mode", MODE])
        .output()
        .expect("run the python client");
    assert!(
        out.status.success(),
        "python client failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
