//! The ACL file's start-up errors (one test each), the grant arithmetic, the classification,
//! and a property test: no random grant table lets a call reach an agent it has no grant on.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

const TOKEN_A: &str = "Vq3xL9pT2mWc8rYd4kZf7hNb";
const TOKEN_B: &str = "Hs6Jt1Gw5Qe0Ux2Ap9Lm3Kc8";

fn no_env(_: &str) -> Option<String> {
    None
}

fn parsed(document: Value) -> Result<Acl, AclError> {
    parse(&document.to_string(), &no_env)
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn grants(pairs: &[(&str, Permission)]) -> Grants {
    pairs.iter().map(|(a, p)| ((*a).to_owned(), *p)).collect()
}

#[test]
fn a_cpersona_file_parses_and_tokens_pick_their_client() {
    let acl = parse(
        &json!({"clients": [
            {"client_id": "laptop", "token": TOKEN_A, "grants": {"*": "read", "alice": "read-write"}},
            {"client_id": "ci", "token": "${CI_TOKEN}", "grants": {}},
            {"client_id": "local", "grants": {"*": "read-write"}},
            {"client_id": "local2", "token": TOKEN_B, "grants": {"bob": "none"}},
        ]})
        .to_string(),
        &|var| (var == "CI_TOKEN").then(|| "Pz4Rn8Dx2Vb6Yq0Tm5Wk9Hc3".to_owned()),
    )
    .unwrap();
    assert_eq!(acl.client_count(), 4);
    assert_eq!(
        acl.principal_for_token(TOKEN_A),
        Some(Principal::client("laptop"))
    );
    assert_eq!(
        acl.principal_for_token("Pz4Rn8Dx2Vb6Yq0Tm5Wk9Hc3"),
        Some(Principal::client("ci"))
    );
    assert_eq!(acl.principal_for_token(""), None);
    assert_eq!(acl.principal_for_token(&TOKEN_A[1..]), None);
    assert_eq!(acl.principal_for_token("${CI_TOKEN}"), None);
    let local = acl.grants(&Principal::local()).unwrap();
    assert_eq!(local.get("*"), Some(&Permission::ReadWrite));
    // `local` has no token, so nothing over HTTP can become it.
    assert!(acl.tokens.iter().all(|(_, c)| c != "local"));
}

/// Each refusal, with the variable named and never the token.
#[test]
fn every_start_up_error_names_the_variable_and_the_problem() {
    let entry = |extra: Value| {
        let mut e = json!({"client_id": "c", "token": TOKEN_A, "grants": {}});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        json!({"clients": [e]})
    };
    let cases: Vec<(Result<Acl, AclError>, &str)> = vec![
        (parse("{not json", &no_env), "not valid JSON"),
        (parsed(json!([])), "top level"),
        (parsed(json!({"clients": [], "x": 1})), "top level"),
        (parsed(json!({"clients": []})), "non-empty list"),
        (parsed(json!({"clients": [7]})), "must be an object"),
        (
            parsed(entry(json!({"per_subject": true}))),
            "unknown key \"per_subject\"",
        ),
        (parsed(entry(json!({"client_id": ""}))), "client_id must be"),
        (
            parsed(entry(json!({"grants": ["a"]}))),
            "grants must be an object",
        ),
        (
            parsed(entry(json!({"grants": {"": "read"}}))),
            "empty agent",
        ),
        (
            parsed(entry(json!({"grants": {"a": "write"}}))),
            "unknown permission \"write\"",
        ),
        (
            parsed(entry(json!({"grants": {"a": 2}}))),
            "unknown permission 2",
        ),
        (
            parsed(json!({"clients": [
                {"client_id": "c", "token": TOKEN_A, "grants": {}},
                {"client_id": "c", "token": TOKEN_B, "grants": {}}]})),
            "client_id \"c\" appears twice",
        ),
        (
            parsed(json!({"clients": [
                {"client_id": "c", "token": TOKEN_A, "grants": {}},
                {"client_id": "d", "token": TOKEN_A, "grants": {}}]})),
            "clients \"c\" and \"d\" have the same token",
        ),
        (parsed(entry(json!({"token": null}))), "has no token"),
        (parsed(entry(json!({"token": ""}))), "has no token"),
        (parsed(entry(json!({"token": 5}))), "has no token"),
        (
            parsed(json!({"clients": [{"client_id": "local", "token": TOKEN_A, "grants": {}}]})),
            "stdio principal",
        ),
        (
            parsed(entry(json!({"token": "${NOPE}"}))),
            "names ${NOPE}, which is unset",
        ),
        (
            parsed(entry(json!({"token": "prefix-${NOPE}"}))),
            "one whole \"${ENV_VAR}\"",
        ),
        (parsed(entry(json!({"token": "short"}))), "is 5 characters"),
        (
            parsed(entry(json!({"token": "aaaaaaaaaaaaaaaaaaaa"}))),
            "distinct characters",
        ),
        (
            parsed(entry(json!({"token": "ééééééééééééééééxyzxyz"}))),
            "non-ASCII",
        ),
    ];
    for (result, expected) in cases {
        let message = result.map(|_| ()).unwrap_err().to_string();
        assert!(message.starts_with("CPERSONA_ACL_FILE"), "{message}");
        assert!(message.contains(expected), "{expected:?} not in {message}");
        assert!(
            !message.contains(TOKEN_A) && !message.contains(TOKEN_B),
            "{message}"
        );
    }
}

#[test]
fn an_empty_environment_value_is_unresolved_too() {
    let document = json!({"clients": [{"client_id": "c", "token": "${T}", "grants": {}}]});
    let error = parse(&document.to_string(), &|_| Some(String::new())).unwrap_err();
    assert_eq!(
        error,
        AclError::UnresolvedEnv {
            client_id: "c".into(),
            var: "T".into()
        }
    );
    // A resolved value passes the same hygiene as a literal one.
    let error = parse(&document.to_string(), &|_| Some("weak".into())).unwrap_err();
    assert!(matches!(error, AclError::WeakToken { .. }), "{error}");
}

#[cfg(unix)]
#[test]
fn a_file_other_users_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acl.json");
    let document = json!({"clients": [{"client_id": "c", "token": TOKEN_A, "grants": {}}]});
    std::fs::write(&path, document.to_string()).unwrap();
    for (mode, refused) in [(0o600, false), (0o400, false), (0o640, true), (0o604, true)] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let result = load(&path, &no_env);
        assert_eq!(
            matches!(result, Err(AclError::Exposed { .. })),
            refused,
            "{mode:o}"
        );
    }
    let missing = load(&dir.path().join("none.json"), &no_env).unwrap_err();
    assert!(matches!(missing, AclError::Unreadable { .. }), "{missing}");
}

#[test]
fn exact_beats_wildcard_both_ways_and_sweeps_take_the_minimum() {
    use Permission::*;
    let g = grants(&[("*", ReadWrite), ("prod", None), ("audit", Read)]);
    let one = |a: &str| Scope::Agent(a.to_owned());
    assert_eq!(effective(&g, &one("x")), ReadWrite);
    assert_eq!(effective(&g, &one("prod")), None);
    assert_eq!(effective(&g, &one("audit")), Read);
    assert_eq!(effective(&g, &Scope::Every), None);
    let g = grants(&[("*", None), ("alice", ReadWrite)]);
    assert_eq!(effective(&g, &one("alice")), ReadWrite);
    assert_eq!(effective(&g, &one("bob")), None);
    // Named grants never add up to the wildcard.
    let g = grants(&[("alice", ReadWrite), ("bob", ReadWrite)]);
    assert_eq!(effective(&g, &Scope::Every), None);
    let g = grants(&[("*", ReadWrite), ("alice", Read)]);
    assert_eq!(effective(&g, &Scope::Every), Read);
    assert_eq!(effective(&Grants::new(), &Scope::Authenticated), ReadWrite);
}

#[test]
fn the_connection_agent_is_never_a_guess() {
    use Permission::*;
    assert_eq!(
        connection_agent(&grants(&[("a", ReadWrite), ("*", Read)])),
        Some("a")
    );
    assert_eq!(
        connection_agent(&grants(&[("a", ReadWrite), ("b", ReadWrite)])),
        Option::None
    );
    assert_eq!(
        connection_agent(&grants(&[("a", ReadWrite), ("*", ReadWrite)])),
        Option::None
    );
    assert_eq!(connection_agent(&grants(&[("a", Read)])), Option::None);
}

#[test]
fn tools_demand_what_cpersona_classifies() {
    use Permission::*;
    let on = |agent: &str, required| Demand {
        scope: Scope::Agent(agent.to_owned()),
        required,
    };
    let every = |required| Demand {
        scope: Scope::Every,
        required,
    };
    let cases = [
        ("recall", json!({"agent_id": "a"}), vec![on("a", Read)]),
        ("recall", json!({}), vec![every(Read)]),
        ("recall", json!({"agent_id": ""}), vec![every(Read)]),
        ("recall", json!({"agent_id": 7}), vec![every(Read)]),
        ("recall", json!({"agent_id": "*"}), vec![every(Read)]),
        ("store", json!({"agent_id": "a"}), vec![on("a", ReadWrite)]),
        (
            "export_memories",
            json!({"agent_id": "a"}),
            vec![every(ReadWrite)],
        ),
        (
            "import_memories",
            json!({"target_agent_id": "a"}),
            vec![every(ReadWrite)],
        ),
        (
            "pause_persistence",
            json!({"session_key": "k"}),
            vec![every(ReadWrite)],
        ),
        (
            "merge_memories",
            json!({"source_agent_id": "s", "target_agent_id": "t"}),
            vec![on("s", Read), on("t", ReadWrite)],
        ),
        (
            "merge_memories",
            json!({"source_agent_id": "s", "target_agent_id": "t", "mode": "move"}),
            vec![on("s", ReadWrite), on("t", ReadWrite)],
        ),
        (
            "check_health",
            json!({"agent_id": "a"}),
            vec![on("a", Read)],
        ),
        (
            "check_health",
            json!({"agent_id": "a", "fix": true}),
            vec![on("a", ReadWrite), every(ReadWrite)],
        ),
        (
            "check_health",
            json!({"agent_id": "a", "fix": true, "checks": ["fts_integrity"]}),
            vec![on("a", ReadWrite), every(ReadWrite)],
        ),
        (
            "check_health",
            json!({"agent_id": "a", "fix": true, "checks": ["duplicate_content"]}),
            vec![on("a", ReadWrite)],
        ),
        (
            "persistence_status",
            json!({}),
            vec![Demand {
                scope: Scope::Authenticated,
                required: Read,
            }],
        ),
    ];
    for (tool, call, expected) in cases {
        assert_eq!(
            demands(tool, &args(call.clone())),
            Some(expected),
            "{tool} {call}"
        );
    }
    assert_eq!(demands("no_such_tool", &Map::new()), Option::None);
}

#[test]
fn denials_have_cpersonas_shape() {
    let acl = parsed(json!({"clients": [
        {"client_id": "reader", "token": TOKEN_A, "grants": {"a": "read"}}]}))
    .unwrap();
    let reader = Principal::client("reader");
    let mut call = args(json!({"agent_id": "a", "content": "x", "lock": true}));
    let Decision::Deny(denial) = decide(&acl, Some(&reader), "store", &mut call) else {
        panic!("a read grant allowed store");
    };
    assert_eq!(
        denial.body(&call),
        json!({"ok": false, "error": "permission_denied", "tool": "store", "agent_id": "a",
               "required": "read-write", "client_id": "reader", "result": "rejected",
               "locked": false})
    );
    let mut call = args(json!({"query": "x"}));
    let Decision::Deny(denial) = decide(&acl, Some(&reader), "recall", &mut call) else {
        panic!("an unscoped recall passed a named grant");
    };
    assert_eq!(denial.agent_id.as_deref(), Some("*"));
    assert!(denial.detail.contains("pass agent_id"), "{}", denial.detail);
    // A missing principal and an unclassified tool are denied, whatever the grants.
    let mut call = args(json!({"agent_id": "a"}));
    let Decision::Deny(denial) = decide(&acl, Option::None, "recall", &mut call) else {
        panic!("no principal, allowed");
    };
    assert_eq!(denial.client_id, "");
    let Decision::Deny(denial) = decide(&acl, Some(&reader), "get_secret", &mut call) else {
        panic!("unclassified, allowed");
    };
    assert!(
        denial.detail.contains("not classified"),
        "{}",
        denial.detail
    );
    // `local` without an entry reaches no agent, but may ask what needs no agent.
    let local = Principal::local();
    assert!(matches!(
        decide(&acl, Some(&local), "recall", &mut call),
        Decision::Deny(_)
    ));
    assert!(matches!(
        decide(&acl, Some(&local), "persistence_status", &mut Map::new()),
        Decision::Allow { .. }
    ));
}

#[test]
fn an_omitted_store_agent_resolves_to_the_one_writable_agent() {
    let acl = parsed(json!({"clients": [
        {"client_id": "one", "token": TOKEN_A, "grants": {"a": "read-write", "*": "read"}},
        {"client_id": "two", "token": TOKEN_B, "grants": {"a": "read-write", "b": "read-write"}}]}))
    .unwrap();
    let mut call = args(json!({"content": "x"}));
    assert_eq!(
        decide(&acl, Some(&Principal::client("one")), "store", &mut call),
        Decision::Allow {
            resolved_agent_id: Some("a".into())
        }
    );
    assert_eq!(call["agent_id"], "a");
    let mut call = args(json!({"content": "x"}));
    assert!(matches!(
        decide(&acl, Some(&Principal::client("two")), "store", &mut call),
        Decision::Deny(Denial { ref agent_id, .. }) if agent_id.as_deref() == Some("*")
    ));
    assert!(!call.contains_key("agent_id"));
    // Only store: a reader never lands on an agent it did not name (its sweep is judged as
    // one, here allowed by the wildcard read).
    let mut call = args(json!({"query": "x"}));
    assert_eq!(
        decide(&acl, Some(&Principal::client("one")), "recall", &mut call),
        Decision::Allow {
            resolved_agent_id: None
        }
    );
    assert!(!call.contains_key("agent_id"));
}

const AGENTS: &[&str] = &["a", "b", "c", "d"];

fn permission() -> impl Strategy<Value = Permission> {
    prop_oneof![
        Just(Permission::None),
        Just(Permission::Read),
        Just(Permission::ReadWrite)
    ]
}

fn grant_table() -> impl Strategy<Value = Grants> {
    proptest::collection::btree_map(
        prop_oneof![Just("*"), Just("a"), Just("b"), Just("c")].prop_map(str::to_owned),
        permission(),
        0..4,
    )
}

/// An agent argument as a caller might send it: a name, empty, `*`, absent or not a string.
fn agent_value() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        proptest::sample::select(AGENTS).prop_map(|a| Some(json!(a))),
        Just(Some(json!(""))),
        Just(Some(json!("*"))),
        Just(Some(json!(3))),
        Just(Option::None),
    ]
}

fn call() -> impl Strategy<Value = (String, Map<String, Value>)> {
    let tools: Vec<&'static str> = classified_tools().chain(["unknown_tool"]).collect();
    (
        proptest::sample::select(tools),
        agent_value(),
        agent_value(),
        agent_value(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(tool, agent, source, target, fix, moving, own_checks)| {
            let mut args = Map::new();
            for (key, value) in [
                ("agent_id", agent),
                ("source_agent_id", source),
                ("target_agent_id", target),
            ] {
                if let Some(value) = value {
                    args.insert(key.to_owned(), value);
                }
            }
            args.insert("fix".to_owned(), json!(fix));
            if moving {
                args.insert("mode".to_owned(), json!("move"));
            }
            if own_checks {
                args.insert("checks".to_owned(), json!(["duplicate_content"]));
            }
            (tool.to_owned(), args)
        })
}

/// The levels an allowed call can reach on `agent` at most, judged from the arguments the
/// tool runs with (after any resolution) and independently of `decide`'s own arithmetic:
/// an agent named by an argument, or every agent when one is left unnamed.
fn reached(tool: &str, args: &Map<String, Value>, agent: &str) -> bool {
    let names = |key: &str| match args.get(key) {
        Some(Value::String(a)) if !a.is_empty() && a != "*" => a == agent,
        _ => true,
    };
    match tool {
        "persistence_status" | "get_queue_status" | "get_operating_context" | "check_update" => {
            false
        }
        "pause_persistence"
        | "resume_persistence"
        | "export_memories"
        | "import_memories"
        | "get_session_findings" => true,
        "merge_memories" => names("source_agent_id") || names("target_agent_id"),
        "check_health"
            if args.get("fix") == Some(&json!(true))
                && args.get("checks") != Some(&json!(["duplicate_content"])) =>
        {
            true
        }
        _ => names("agent_id"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// An allowed call never reaches an agent whose effective grant is `none`: neither one it
    /// names nor, through a sweep, one excepted from the wildcard. A write tool allowed on an
    /// agent always had read-write there.
    #[test]
    fn no_call_reaches_an_agent_without_a_grant(table in grant_table(), (tool, mut args) in call()) {
        let document = json!({"clients": [
            {"client_id": "p", "token": TOKEN_A, "grants": table.iter()
                .map(|(a, p)| (a.clone(), json!(p.as_str()))).collect::<Map<_, _>>()}]});
        let acl = parsed(document).unwrap();
        let principal = Principal::client("p");
        let decision = decide(&acl, Some(&principal), &tool, &mut args);
        if let Decision::Allow { .. } = decision {
            prop_assert!(tool != "unknown_tool");
            for agent in AGENTS.iter().chain(["e"].iter()) {
                let own = table.get(*agent).or_else(|| table.get("*")).copied()
                    .unwrap_or(Permission::None);
                if reached(&tool, &args, agent) {
                    prop_assert!(own > Permission::None,
                        "{tool} {args:?} reached {agent} with grants {table:?}");
                }
            }
            let read_only = matches!(tool.as_str(), "recall" | "reconstruct" | "traverse"
                | "recall_with_context" | "get_contents" | "get_profile" | "get_recall_precision"
                | "list_memories" | "list_episodes" | "check_health" | "merge_memories"
                | "persistence_status" | "get_queue_status" | "get_operating_context"
                | "check_update" | "get_session_findings")
                || (tool == "deep_check" && args.get("fix") != Some(&json!(true)));
            let writes = !read_only;
            if writes {
                for agent in AGENTS {
                    if reached(&tool, &args, agent) {
                        let own = table.get(*agent).or_else(|| table.get("*")).copied()
                            .unwrap_or(Permission::None);
                        prop_assert_eq!(own, Permission::ReadWrite,
                            "{} {:?} wrote {} with grants {:?}", tool, args, agent, table);
                    }
                }
            }
        }
    }

    /// Whatever the table, a call with no principal is denied.
    #[test]
    fn no_principal_is_always_denied(table in grant_table(), (tool, mut args) in call()) {
        let document = json!({"clients": [
            {"client_id": "p", "token": TOKEN_A, "grants": table.iter()
                .map(|(a, p)| (a.clone(), json!(p.as_str()))).collect::<Map<_, _>>()}]});
        let acl = parsed(document).unwrap();
        let denied = matches!(decide(&acl, None, &tool, &mut args), Decision::Deny(_));
        prop_assert!(denied);
    }
}
