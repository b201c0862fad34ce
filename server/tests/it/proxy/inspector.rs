//! The npm client `@modelcontextprotocol/inspector-cli` (what MCP's own docs use to try a
//! server) drives `cpersona proxy` as its stdio server, against a real `cpersona serve --http`:
//! it lists the server's tools (every one, by name, as the server lists them itself) and calls
//! `store` then `recall`, which finds the stored text. One run reads a desktop client's
//! `mcpServers` config file, the shape the README shows; the others pass the command and `-e`
//! settings on the command line. It needs `CPERSONA_TEST_INSPECTOR`, the package's
//! `build/cli.js` (`scripts/test` installs it), and fails with that instruction when unset.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::{bin, names, tool_names_of};
use crate::transport::client::{RawHttp, TOKEN};

/// The inspector CLI's entry (`node_modules/@modelcontextprotocol/inspector-cli/build/cli.js`).
fn inspector() -> String {
    std::env::var("CPERSONA_TEST_INSPECTOR").unwrap_or_else(|_| {
        panic!(
            "CPERSONA_TEST_INSPECTOR is not set: point it to the inspector CLI's entry, e.g.\n  \
             npm install --prefix target/test-deps/npm @modelcontextprotocol/inspector-cli@1.0.3\n  \
             CPERSONA_TEST_INSPECTOR=$PWD/target/test-deps/npm/node_modules/@modelcontextprotocol/inspector-cli/build/cli.js \
             cargo test --workspace\n(scripts/test does both)"
        )
    })
}

/// Runs `node <inspector> --cli <args>` with no inherited `CPERSONA_*` setting; its stdout
/// as JSON (the method's result), or a panic with what it printed.
fn run(args: &[&str]) -> Value {
    let mut cmd = Command::new("node");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CPERSONA_") {
            cmd.env_remove(key);
        }
    }
    let entry = inspector();
    // The CLI finds its own package.json by testing `../package.json` against the working
    // directory, then importing it relative to its module: run it from its `build/` folder,
    // where both name the same file (anywhere else it fails with "Cannot find module").
    let build_dir = Path::new(&entry).parent().unwrap().to_path_buf();
    let out = cmd
        .current_dir(build_dir)
        .arg(&entry)
        .arg("--cli")
        .args(args)
        .output()
        .expect("run node (Node.js 18 or later must be on PATH)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector {args:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("inspector {args:?}: stdout is not JSON ({e}):\n{stdout}\nstderr:\n{stderr}")
    })
}

/// A tool result's JSON body (this server answers each call with one JSON text item).
fn body(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"));
    serde_json::from_str(text).unwrap()
}

#[test]
fn inspector_cli_lists_and_calls_tools_through_the_proxy() {
    let served = RawHttp::spawn(bin());
    let expected = tool_names_of(&served);
    let dir = tempfile::tempdir().unwrap();
    let cpersona = bin().to_str().unwrap();

    // A desktop client's config: the proxy as a stdio server, the shared server in its env.
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"cpersona": {
        "command": cpersona, "args": ["proxy"],
        "env": {"CPERSONA_REMOTE_URL": served.url, "CPERSONA_AUTH_TOKEN": TOKEN}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap();
    let listed = run(&[
        "--config",
        config,
        "--server",
        "cpersona",
        "--method",
        "tools/list",
    ]);
    let listed = json!({"result": listed});
    assert_eq!(names(&listed), expected);
    for tool in listed["result"]["tools"].as_array().unwrap() {
        assert!(tool["inputSchema"].is_object(), "{tool}");
    }

    let url = format!("CPERSONA_REMOTE_URL={}", served.url);
    let token = format!("CPERSONA_AUTH_TOKEN={TOKEN}");
    let through_proxy = |method_args: &[&str]| {
        let mut args = vec!["-e", url.as_str(), "-e", token.as_str(), cpersona, "proxy"];
        args.extend_from_slice(method_args);
        run(&args)
    };
    let content = "the inspector's note: the release train leaves on Thursday";
    let stored = body(&through_proxy(&[
        "--method",
        "tools/call",
        "--tool-name",
        "store",
        "--tool-arg",
        "agent_id=inspector",
        &format!("content={content}"),
    ]));
    let id = stored["id"].as_i64().unwrap_or_else(|| panic!("{stored}"));
    let recalled = body(&through_proxy(&[
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-arg",
        "agent_id=inspector",
        "query=release train Thursday",
    ]));
    let found = recalled["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("{recalled}"));
    assert!(
        found
            .iter()
            .any(|m| m["ref"] == format!("mem:{id}") && m["content"] == content),
        "{recalled}"
    );
}

/// The inspector reads a resource, lists and gets a prompt and reads structured output over
/// the three ways a client reaches the server (issue 21): through the proxy, straight over
/// streamable HTTP with the token, and over stdio.
#[test]
fn inspector_cli_reads_resources_and_prompts_over_every_transport() {
    let served = RawHttp::spawn(bin());
    let cpersona = bin().to_str().unwrap();
    let url = format!("CPERSONA_REMOTE_URL={}", served.url);
    let token = format!("CPERSONA_AUTH_TOKEN={TOKEN}");
    let proxy = |method_args: &[&str]| {
        let mut args = vec!["-e", url.as_str(), "-e", token.as_str(), cpersona, "proxy"];
        args.extend_from_slice(method_args);
        run(&args)
    };
    let content = "the inspector read this back as a resource";
    let stored = proxy(&[
        "--method",
        "tools/call",
        "--tool-name",
        "store",
        "--tool-arg",
        "agent_id=inspector",
        &format!("content={content}"),
    ]);
    // Structured output: the body is also `structuredContent`.
    assert_eq!(stored["structuredContent"], body(&stored), "{stored}");
    let uri = format!(
        "cpersona://agents/inspector/memories/{}",
        body(&stored)["id"]
    );
    let read = proxy(&["--method", "resources/read", "--uri", &uri]);
    assert_eq!(read["contents"][0]["text"], content, "{read}");
    let prompt = proxy(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "what_do_i_know",
        "--prompt-args",
        "agent_id=inspector",
        "topic=resources",
    ]);
    let text = prompt["messages"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("`recall`"), "{prompt}");

    // Straight over streamable HTTP with the token.
    let header = format!("Authorization: Bearer {TOKEN}");
    let listed = run(&[
        &served.url,
        "--transport",
        "http",
        "--header",
        &header,
        "--method",
        "resources/list",
    ]);
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&uri.as_str()), "{listed}");

    // Over stdio, on a store of its own.
    let dir = tempfile::tempdir().unwrap();
    let db = format!("CPERSONA_DB_PATH={}", dir.path().join("stdio.db").display());
    let prompts = run(&[
        "-e",
        &db,
        "-e",
        "CPERSONA_EMBEDDING_MODE=none",
        cpersona,
        "serve",
        "--method",
        "prompts/list",
    ]);
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{prompts}"))
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"start_session"), "{prompts}");
}
