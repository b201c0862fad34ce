//! Per-client access control, CPersona's ACL mode (`CPERSONA_ACL_FILE`, reference §7.4): who a
//! caller is (`Principal`), what each client may do per agent (`Acl`, parsed in `parse.rs`),
//! and what each tool call demands and whether the grants cover it (`resolve.rs`, pure).
//! This module decides; it never reads a request or a store, so a new way of naming the
//! caller (an OAuth access token) only has to produce a `Principal`.

use std::collections::BTreeMap;
use std::sync::Arc;

use subtle::ConstantTimeEq;

mod parse;
mod resolve;

pub use self::parse::{AclError, load, parse};
pub use self::resolve::{
    Decision, Demand, Denial, Scope, classified_tools, connection_agent, decide, demands, effective,
};

/// The variable naming the ACL file; every start-up refusal names it.
pub const ACL_VAR: &str = "CPERSONA_ACL_FILE";

/// The reserved client id of the stdio transport: no credential, the peer is whoever spawned
/// the process (CPersona's `local`). Its grants come from the same file; without an entry it
/// is granted nothing.
pub const LOCAL_CLIENT_ID: &str = "local";

/// The grant key that stands for every agent.
pub const WILDCARD: &str = "*";

/// What a grant allows on one agent; ordered, so a demand is met by any level at or above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    None,
    Read,
    ReadWrite,
}

impl Permission {
    /// CPersona's word for it, as the file and a denial spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::ReadWrite => "read-write",
        }
    }

    /// The level a file's word names, if it names one.
    pub fn from_word(word: &str) -> Option<Permission> {
        match word {
            "none" => Some(Permission::None),
            "read" => Some(Permission::Read),
            "read-write" => Some(Permission::ReadWrite),
            _ => None,
        }
    }
}

/// One client's grants: agent id (or [`WILDCARD`]) → permission.
pub type Grants = BTreeMap<String, Permission>;

/// Who is calling, as a transport established it; tools never see how. Today a static bearer
/// token (the ACL file's `token`) or the stdio transport (`local`) produce one; an OAuth
/// resolver would produce one from a verified access token (CPersona names those
/// `oauth:<issuer>:<client_id>`) and the grant check would not change.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Principal {
    client_id: Arc<str>,
}

impl Principal {
    /// The principal of the client named `client_id` in the ACL file.
    pub fn client(client_id: &str) -> Principal {
        Principal {
            client_id: Arc::from(client_id),
        }
    }

    /// The stdio transport's principal.
    pub fn local() -> Principal {
        Principal::client(LOCAL_CLIENT_ID)
    }

    /// The id its grants are looked up by.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }
}

/// A loaded, validated ACL file: each client's grants, and the token table the HTTP transport
/// resolves a bearer token against.
#[derive(Clone, Debug)]
pub struct Acl {
    grants: BTreeMap<String, Grants>,
    /// `(token, client_id)`; tokens are unique (checked at load).
    tokens: Vec<(String, String)>,
}

impl Acl {
    /// The grants of `principal`, `None` for a client the file does not name (the stdio
    /// principal without a `local` entry).
    pub fn grants(&self, principal: &Principal) -> Option<&Grants> {
        self.grants.get(principal.client_id())
    }

    /// How many clients the file names.
    pub fn client_count(&self) -> usize {
        self.grants.len()
    }

    /// The principal whose token `presented` is. Every entry is compared, in constant time
    /// each and with no early exit, so the answer's timing says nothing about which entry
    /// (or how much of one) matched.
    pub fn principal_for_token(&self, presented: &str) -> Option<Principal> {
        if presented.is_empty() {
            return None;
        }
        let mut matched: Option<&str> = None;
        for (token, client_id) in &self.tokens {
            if bool::from(presented.as_bytes().ct_eq(token.as_bytes())) {
                matched = Some(client_id);
            }
        }
        matched.map(Principal::client)
    }
}

#[cfg(test)]
mod tests;
