//! `cpersona token new --client NAME`: a random bearer token for one client, and the entry to
//! add to a CPersona ACL file for it. It reads and writes nothing else; the token is printed
//! once and stored nowhere.

use std::collections::BTreeMap;
use std::io::Write;

use rand::Rng;
use rand::distr::Alphanumeric;
use serde_json::json;

use crate::transport::http::check_token;

/// Characters in a new token: 43 alphanumerics hold about 256 bits.
pub(crate) const NEW_TOKEN_CHARS: usize = 43;

/// The arguments of `token new`.
#[derive(Debug, clap::Args)]
pub struct TokenNewArgs {
    /// The client's id in the ACL file (`local` is reserved for stdio).
    #[arg(long, value_name = "NAME")]
    pub client: String,
    /// A grant to write into the entry, `AGENT=none|read|read-write` (`*` for every agent);
    /// repeatable. Without one the entry grants nothing (CPersona denies by default).
    #[arg(long, value_name = "AGENT=PERMISSION")]
    pub grant: Vec<String>,
}

/// A random token that passes the start-up checks (ThreadRng: ChaCha seeded from the OS).
pub(crate) fn new_token() -> String {
    loop {
        let token: String = rand::rng()
            .sample_iter(Alphanumeric)
            .take(NEW_TOKEN_CHARS)
            .map(char::from)
            .collect();
        if check_token(&token).is_ok() {
            return token;
        }
    }
}

/// The ACL entry for `client` with `token` and `grants` (`AGENT=PERMISSION`).
pub(crate) fn acl_entry(
    client: &str,
    token: &str,
    grants: &[String],
) -> Result<serde_json::Value, String> {
    let client = client.trim();
    if client.is_empty() {
        return Err("--client needs a name".to_owned());
    }
    if client == "local" {
        return Err("--client local is reserved for the stdio principal".to_owned());
    }
    let mut map = BTreeMap::new();
    for grant in grants {
        let Some((agent, permission)) = grant.split_once('=') else {
            return Err(format!("--grant {grant:?}: expected AGENT=PERMISSION"));
        };
        if !matches!(permission, "none" | "read" | "read-write") {
            return Err(format!(
                "--grant {grant:?}: the permission is none, read or read-write"
            ));
        }
        if agent.is_empty() || map.insert(agent, permission).is_some() {
            return Err(format!("--grant {grant:?}: empty or repeated agent"));
        }
    }
    Ok(json!({"client_id": client, "token": token, "grants": map}))
}

/// Prints the token, then the entry, on stdout; the how-to on stderr.
pub(crate) fn run(args: &TokenNewArgs) -> anyhow::Result<()> {
    let token = new_token();
    let entry = acl_entry(&args.client, &token, &args.grant).map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{token}")?;
    writeln!(out, "{}", serde_json::to_string_pretty(&entry)?)?;
    eprintln!(
        "The first line is the token (shown once; store it like a password). The JSON is the \
         entry to add to the \"clients\" list of a CPersona ACL file (CPERSONA_ACL_FILE, \
         private to the service user: chmod 600); or serve the token alone as \
         CPERSONA_AUTH_TOKEN."
    );
    Ok(())
}

#[cfg(test)]
mod tests;
