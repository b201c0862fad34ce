//! The console in a real browser: headless Chromium (Debian's `chromium` and
//! `chromium-driver`) driven by Python's selenium (`browser.py`, installed into the test
//! venv by `scripts/test`) logs in, loads every page, runs a search, opens its trace,
//! attributes a missed row, replays a change, edits and deletes a memory (the database is
//! checked here), and is refused without the token; screenshots of the main pages land in
//! `target/console-screenshots/`. Without Chromium the test says so and passes, except under
//! CI (`CI` set), where a missing browser fails it.

use std::path::Path;
use std::process::Command;

use super::{TOKEN, console, id_of, memory, seed};

/// Why the browser test cannot run here, if it cannot.
fn missing() -> Option<String> {
    let python = std::env::var("CPERSONA_TEST_PYTHON").ok();
    let mut why = Vec::new();
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        if !Path::new(tool).exists() {
            why.push(format!(
                "{tool} is missing (apt-get install chromium chromium-driver)"
            ));
        }
    }
    match &python {
        None => why.push("CPERSONA_TEST_PYTHON is unset (scripts/test sets it)".to_owned()),
        Some(python) => {
            let ok = Command::new(python)
                .args(["-c", "import selenium"])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                why.push(format!(
                    "{python} has no selenium (scripts/test installs it)"
                ));
            }
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[test]
fn a_real_browser_browses_searches_traces_and_corrects() {
    if let Some(why) = missing() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the browser test cannot run under CI: {why}"
        );
        eprintln!("SKIPPED the console's browser test: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let edit = id_of(dir.path(), "number 8 ");
    let delete = id_of(dir.path(), "number 9 ");
    let missed = id_of(dir.path(), "trains and stations");
    let running = console(dir.path(), &[("CPERSONA_AUTH_TOKEN", TOKEN)]);
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/console/browser.py");
    let python = std::env::var("CPERSONA_TEST_PYTHON").unwrap();
    let out = Command::new(python)
        .arg(script)
        .args([
            "--base",
            &running.base,
            "--token",
            TOKEN,
            "--agent",
            "alice",
        ])
        .args(["--edit", &edit.to_string(), "--delete", &delete.to_string()])
        .args(["--missed", &format!("mem:{missed}")])
        .arg("--screenshots")
        .arg(&shots)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser script failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        memory(dir.path(), edit),
        Some(("edited in a real browser".to_owned(), false)),
        "the browser's edit did not land"
    );
    assert_eq!(
        memory(dir.path(), delete),
        None,
        "the browser's delete did not land"
    );
    for shot in [
        "login", "agents", "agent", "memories", "memory", "search", "trace", "health",
    ] {
        let file = shots.join(format!("{shot}.png"));
        let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        assert!(len > 1000, "no screenshot {}", file.display());
    }
}
