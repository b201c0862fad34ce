//! Reading an ACL file: CPersona's JSON `{"clients": [{"client_id", "token", "grants"}]}` into
//! an [`Acl`], or a start-up error naming `CPERSONA_ACL_FILE` and the problem. A file that
//! could be read two ways is refused, never guessed at: the server must serve the policy
//! written or none. Errors name clients, agents and environment variables, never a token.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Acl, Grants, LOCAL_CLIENT_ID, Permission};
use crate::transport::http::{WeakToken, check_token};

/// Why an ACL file is refused; each message starts with the variable's name.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AclError {
    #[error("CPERSONA_ACL_FILE={path:?} cannot be read: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    /// Group or other users may read (or write) the file: it holds every client's token.
    #[error(
        "CPERSONA_ACL_FILE={path:?} is accessible to other users (mode {mode:o}); it holds \
         bearer tokens: make it private to the service user (chmod 600)"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error("CPERSONA_ACL_FILE is not valid JSON: {reason}")]
    NotJson { reason: String },
    /// The document's shape is not CPersona's (`what` says where).
    #[error("CPERSONA_ACL_FILE: {what}")]
    Shape { what: String },
    #[error("CPERSONA_ACL_FILE: client_id {client_id:?} appears twice")]
    DuplicateClient { client_id: String },
    #[error(
        "CPERSONA_ACL_FILE: client {client_id:?} grants {agent:?} the unknown permission \
         {permission}; expected \"none\", \"read\" or \"read-write\""
    )]
    UnknownPermission {
        client_id: String,
        agent: String,
        permission: String,
    },
    #[error(
        "CPERSONA_ACL_FILE: client \"local\" is the stdio principal and must not carry a token \
         (leave it out or set it to null)"
    )]
    LocalToken,
    #[error(
        "CPERSONA_ACL_FILE: client {client_id:?} has no token: give a literal token or \
         \"${{ENV_VAR}}\""
    )]
    MissingToken { client_id: String },
    /// A `${NAME}` reference whose variable is unset or empty.
    #[error(
        "CPERSONA_ACL_FILE: client {client_id:?}'s token names ${{{var}}}, which is unset or empty"
    )]
    UnresolvedEnv { client_id: String, var: String },
    /// `${` inside a longer string: CPersona resolves whole-string references only.
    #[error(
        "CPERSONA_ACL_FILE: client {client_id:?}'s token must be a literal or one whole \
         \"${{ENV_VAR}}\" reference"
    )]
    PartialEnvRef { client_id: String },
    /// The token fails the hygiene every bearer token must pass.
    #[error("CPERSONA_ACL_FILE: client {client_id:?}'s token is refused: {reason}")]
    WeakToken {
        client_id: String,
        reason: WeakToken,
    },
    /// Two clients present the same token, so it would not say which one is calling.
    #[error("CPERSONA_ACL_FILE: clients {first:?} and {second:?} have the same token")]
    DuplicateToken { first: String, second: String },
}

/// The keys a client entry may carry (CPersona's `per_subject` belongs to OAuth, which this
/// server does not have, so it is refused as unknown rather than ignored).
const CLIENT_KEYS: &[&str] = &["client_id", "token", "grants"];

/// Reads and parses the file at `path`, refusing one other users can access; `lookup` reads
/// the environment for `${NAME}` tokens.
pub fn load(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Acl, AclError> {
    let unreadable = |e: std::io::Error| AclError::Unreadable {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let metadata = std::fs::metadata(path).map_err(unreadable)?;
    check_private(path, &metadata)?;
    let text = std::fs::read_to_string(path).map_err(unreadable)?;
    parse(&text, lookup)
}

/// Parses an ACL document (see the module doc).
pub fn parse(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Acl, AclError> {
    let document: Value = serde_json::from_str(text).map_err(|e| AclError::NotJson {
        reason: e.to_string(),
    })?;
    let clients = match &document {
        Value::Object(top) if top.len() == 1 => top.get("clients"),
        _ => None,
    }
    .ok_or_else(|| shape("the top level must be exactly {\"clients\": [...]}"))?;
    let clients = clients
        .as_array()
        .filter(|list| !list.is_empty())
        .ok_or_else(|| shape("\"clients\" must be a non-empty list"))?;
    let mut acl = Acl {
        grants: Default::default(),
        tokens: Vec::new(),
    };
    for (index, entry) in clients.iter().enumerate() {
        let entry = entry
            .as_object()
            .ok_or_else(|| shape(format!("clients[{index}] must be an object")))?;
        if let Some(key) = entry.keys().find(|k| !CLIENT_KEYS.contains(&k.as_str())) {
            return Err(shape(format!(
                "clients[{index}] has the unknown key {key:?}"
            )));
        }
        let client_id = match entry.get("client_id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => {
                return Err(shape(format!(
                    "clients[{index}].client_id must be a non-empty string"
                )));
            }
        };
        if acl.grants.contains_key(&client_id) {
            return Err(AclError::DuplicateClient { client_id });
        }
        let grants = parse_grants(&client_id, entry)?;
        if let Some(token) = parse_token(&client_id, entry, lookup)? {
            if let Some((_, first)) = acl.tokens.iter().find(|(t, _)| *t == token) {
                return Err(AclError::DuplicateToken {
                    first: first.clone(),
                    second: client_id,
                });
            }
            acl.tokens.push((token, client_id.clone()));
        }
        acl.grants.insert(client_id, grants);
    }
    Ok(acl)
}

fn shape(what: impl Into<String>) -> AclError {
    AclError::Shape { what: what.into() }
}

fn parse_grants(client_id: &str, entry: &Map<String, Value>) -> Result<Grants, AclError> {
    let raw = entry
        .get("grants")
        .and_then(Value::as_object)
        .ok_or_else(|| shape(format!("client {client_id:?}: grants must be an object")))?;
    let mut grants = Grants::new();
    for (agent, permission) in raw {
        if agent.is_empty() {
            return Err(shape(format!(
                "client {client_id:?}: a grant has an empty agent"
            )));
        }
        let level = permission
            .as_str()
            .and_then(Permission::from_word)
            .ok_or_else(|| AclError::UnknownPermission {
                client_id: client_id.to_owned(),
                agent: agent.clone(),
                permission: permission.to_string(),
            })?;
        grants.insert(agent.clone(), level);
    }
    Ok(grants)
}

/// The entry's resolved token; `None` for `local`, which must have none. Any other client
/// needs one: a row nothing can present would be a policy that never applies.
fn parse_token(
    client_id: &str,
    entry: &Map<String, Value>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, AclError> {
    let raw = entry.get("token").filter(|t| !t.is_null());
    if client_id == LOCAL_CLIENT_ID {
        return match raw {
            None => Ok(None),
            Some(_) => Err(AclError::LocalToken),
        };
    }
    let raw = match raw {
        Some(Value::String(raw)) if !raw.is_empty() => raw,
        _ => {
            return Err(AclError::MissingToken {
                client_id: client_id.to_owned(),
            });
        }
    };
    let token = match env_reference(raw) {
        Some(var) => {
            lookup(var)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| AclError::UnresolvedEnv {
                    client_id: client_id.to_owned(),
                    var: var.to_owned(),
                })?
        }
        None if raw.contains("${") => {
            return Err(AclError::PartialEnvRef {
                client_id: client_id.to_owned(),
            });
        }
        None => raw.clone(),
    };
    check_token(&token).map_err(|reason| AclError::WeakToken {
        client_id: client_id.to_owned(),
        reason,
    })?;
    Ok(Some(token))
}

/// `NAME` when `raw` is exactly `${NAME}` with NAME a shell variable name.
fn env_reference(raw: &str) -> Option<&str> {
    let name = raw.strip_prefix("${")?.strip_suffix('}')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// Refuses a file group or other users can access. CPersona only warns; the file holds every
/// client's bearer token, and one readable by other local users hands them every grant.
#[cfg(unix)]
fn check_private(path: &Path, metadata: &std::fs::Metadata) -> Result<(), AclError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(AclError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Where mode bits are not the access control, there is nothing to check.
#[cfg(not(unix))]
fn check_private(_path: &Path, _metadata: &std::fs::Metadata) -> Result<(), AclError> {
    Ok(())
}
