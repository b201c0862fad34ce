//! `check_update` in CPersona's shape. CPersona checks PyPI once per start and can run
//! `pip install -U` on request; this server never reaches a network it was not configured for
//! and never replaces its own binary: it is updated by whatever installed it. So the answer is
//! always `state: "disabled"` with the running version and how to update, `refresh` changes
//! nothing, and `apply` is refused (nothing runs).

use serde_json::json;

use crate::mcp::wire;

/// Why there is no check: said in `reason`, and in the refusal of `apply`.
const NO_SELF_UPDATE: &str = "cpersona-rs does not check for or install updates itself; it is \
updated by whatever installed it (cargo install, a release archive, a package manager)";

/// The `check_update` body, or why `apply` is refused (a caller's error).
pub(crate) fn check_update(args: &wire::CheckUpdateArgs) -> Result<wire::UpdateAnswer, String> {
    if args.apply {
        return Err(format!(
            "apply is not supported: {NO_SELF_UPDATE}; update it there and restart the server"
        ));
    }
    Ok(wire::UpdateAnswer {
        enabled: false,
        state: "disabled",
        kind: None,
        running: env!("CARGO_PKG_VERSION"),
        available: None,
        reason: NO_SELF_UPDATE,
        checked_at: None,
        refreshed: false,
        install: wire::UpdateInstall {
            method: "unknown",
            command: None,
            note: "update with the tool that installed this binary, e.g. `cargo install --force` \
                   from the source you installed from",
            restart_required: true,
        },
        message: format!(
            "cpersona-rs {} is running; {NO_SELF_UPDATE}.",
            env!("CARGO_PKG_VERSION")
        ),
        meta: json!({"server_version": env!("CARGO_PKG_VERSION")}),
    })
}
