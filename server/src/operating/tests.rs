//! The sidecar's parse (strict on known shapes, dormant on a typo) and the project gate's
//! table: explicit ids validated never rewritten, `@auto` resolved, reject refusing writes
//! only.

use super::*;

const FILE: &str = r#"
version = 1
context_revision = "r7"
[instructions]
summary = "Store decisions under the project they belong to."
[registry]
project_ids = ["alpha", "beta"]
enforce = "reject"
[defaults]
ann = "alpha"
[[doctrine]]
name = "naming"
body = "Use kebab-case."
"#;

#[test]
fn a_sidecar_parses_and_a_typo_is_an_error_not_half_applied() {
    let context = parse(FILE).unwrap();
    assert_eq!(context.revision, "r7");
    assert_eq!(context.enforce, Enforce::Reject);
    assert_eq!(context.defaults["ann"], "alpha");
    assert_eq!(context.doctrine["naming"], "Use kebab-case.");
    assert!(parse("version = 2").unwrap_err().contains("version"));
    assert!(parse("version = 1\n[registry]\nenforce = \"loud\"").is_err());
    assert!(parse("version = 1\n[registry]\nproject_ids = [1]").is_err());
    assert!(parse("version = 1\n[[doctrine]]\nname = \"a\"\nbody = \"x\"\n[[doctrine]]\nname = \"a\"\nbody = \"y\"").is_err());
    assert!(parse("not toml at all [").is_err());
    // Unknown keys are allowed; enforce defaults to warn.
    assert_eq!(
        parse("version = 1\nfuture = true").unwrap().enforce,
        Enforce::Warn
    );
}

#[test]
fn the_gate_validates_resolves_and_refuses_only_writes() {
    let context = parse(FILE).unwrap();
    let pass = |p: &str, w: Option<&str>| Gate::Pass {
        project_id: p.to_owned(),
        warning: w.map(str::to_owned),
    };
    assert_eq!(context.gate("alpha", "bob", true), pass("alpha", None));
    assert_eq!(context.gate(AUTO, "ann", true), pass("alpha", None));
    assert!(matches!(
        context.gate("gamma", "bob", true),
        Gate::Refuse { .. }
    ));
    assert!(matches!(
        context.gate("gamma", "bob", false),
        Gate::Pass { ref project_id, warning: Some(_) } if project_id == "gamma"
    ));
    assert!(matches!(
        context.gate(AUTO, "bob", true),
        Gate::Refuse { .. }
    ));
    assert!(matches!(
        context.gate(AUTO, "bob", false),
        Gate::Pass { ref project_id, warning: Some(_) } if project_id.is_empty()
    ));
    let off = OperatingContext {
        enforce: Enforce::Off,
        ..context.clone()
    };
    assert_eq!(off.gate("gamma", "bob", true), pass("gamma", None));
    assert_eq!(off.gate(AUTO, "bob", true), pass("", None));
}

#[test]
fn the_loader_is_dormant_without_a_file_and_follows_edits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oc.toml");
    let loader = Loader::new(Some(path.clone()));
    assert!(loader.current().unwrap_err().contains("no sidecar file"));
    assert!(!loader.answer("").ok);
    std::fs::write(&path, FILE).unwrap();
    assert_eq!(loader.current().unwrap().revision, "r7");
    assert_eq!(
        loader.answer("naming").body.as_deref(),
        Some("Use kebab-case.")
    );
    assert!(!loader.answer("nope").ok);
    assert!(loader.summary().unwrap().contains("Store decisions"));
    // An edit that breaks the file makes it dormant (a later mtime).
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, "version = 3").unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert!(loader.current().unwrap_err().contains("unusable"));
    assert!(
        Loader::new(None)
            .current()
            .unwrap_err()
            .contains("disabled")
    );
}
