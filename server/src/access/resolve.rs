//! The grant check, pure: what a tool call demands (CPersona's classification of every tool),
//! what a client's grants allow on one agent or on all of them, and the decision with its
//! denial. Nothing here reads a request, the environment or the store.

use serde_json::{Map, Value, json};

use super::{Acl, Grants, Permission, Principal, WILDCARD};

/// Which agents a demand is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// No agent's data: any authenticated principal (CPersona's `""` pattern).
    Authenticated,
    /// One named agent.
    Agent(String),
    /// Every agent at once, the excepted ones included (a sweep, CPersona's `"*"`).
    Every,
}

/// One permission a call needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demand {
    pub scope: Scope,
    pub required: Permission,
}

/// What the check decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run the call; `resolved_agent_id` is the agent filled in for an omitted `agent_id`
    /// (echoed in the response, as CPersona does).
    Allow { resolved_agent_id: Option<String> },
    /// Refuse it, writing nothing.
    Deny(Denial),
}

/// A refusal, carrying what CPersona's `permission_denied` body says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    pub tool: String,
    /// `""` when no principal was resolved.
    pub client_id: String,
    /// The agent (or `*`) whose grant fell short; `None` when no grant was consulted.
    pub agent_id: Option<String>,
    pub required: Option<Permission>,
    /// Why, in words a caller or operator can act on; never a token.
    pub detail: String,
}

impl Denial {
    /// CPersona's body: `{"ok": false, "error": "permission_denied", "tool", "agent_id"?,
    /// "required"?, "client_id", "detail"?}`; `store` and `declare_associations` also say
    /// `result: "rejected"` (and `store` under `lock: true`, `locked: false`), the fields their
    /// callers branch on.
    pub fn body(&self, args: &Map<String, Value>) -> Value {
        let mut body = json!({"ok": false, "error": "permission_denied", "tool": self.tool});
        if let Some(agent) = &self.agent_id {
            body["agent_id"] = json!(agent);
        }
        if let Some(required) = self.required {
            body["required"] = json!(required.as_str());
        }
        body["client_id"] = json!(self.client_id);
        if !self.detail.is_empty() {
            body["detail"] = json!(self.detail);
        }
        if matches!(self.tool.as_str(), "store" | "declare_associations") {
            body["result"] = json!("rejected");
            if self.tool == "store" && args.get("lock") == Some(&Value::Bool(true)) {
                body["locked"] = json!(false);
            }
        }
        body
    }
}

/// How a tool's demands follow from its arguments.
#[derive(Clone, Copy, Debug)]
enum Class {
    /// Touches no agent's data.
    Authenticated,
    /// The agent named by the argument `key`; omitted, empty or not a string: every agent.
    Scoped(&'static str, Permission),
    /// Every agent, whatever the arguments, for the reason given.
    Sweep(Permission, &'static str),
    /// `merge_memories`: read the source and write the target (`mode: "move"`: write both).
    Merge,
    /// `check_health`: read; `fix: true` repairs the store for every agent.
    Health,
    /// `deep_check`: read on `agent_id`; `fix: true` writes it (both repairs stay inside the
    /// agent named, so nothing wider is demanded).
    DeepCheck,
}

const READ: Permission = Permission::Read;
const WRITE: Permission = Permission::ReadWrite;

/// Why export and import demand every agent. CPersona escalates only while
/// `CPERSONA_EXPORT_DIR` is unset (paths anywhere); ours are confined by default, but the
/// folder is one namespace every agent shares: an import brings in whatever agents its file
/// names and an export may replace another agent's file. CPersona answers that with demands
/// read from the file; until those are built here, the call demands every agent.
const FILE_IO: &str = "export and import read or write files in the export folder every agent \
shares (an import brings in every agent its file names), so the call is not confined to one \
agent";
const PAUSE: &str = "a pause or resume switches writes for a whole session bucket of this \
process, not one agent's data, so no argument narrows it";
const PROCESS_WIDE: &str = "check_update reports on the running server, which is no one \
agent's data, so no argument narrows it";
const WHOLE_STORE_FINDINGS: &str = "findings are reported over the whole store by contract \
(the channel surfaces forgotten state), so no argument narrows it to one agent; scope a repair \
with check_health(agent_id=...) instead";
const HEALTH_FIX: &str = "check_health with fix=true runs a repair whose effect reaches every \
agent (the full-text index is one for all agents; queueing embeddings drains the whole queue), \
so no agent_id narrows it; naming only duplicate_content in `checks` does";

/// The checks whose `fix` writes beyond the agent named: `fts_integrity` rebuilds a full-text
/// table every agent shares, and the embedding repairs end by draining the whole queue. Only
/// `duplicate_content` stays inside its agent (engine `health/repair.rs`).
const CROSS_AGENT_FIXES: &[&str] = &[
    "fts_integrity",
    "null_embedding",
    "null_episode_embedding",
    "stale_pending_tasks",
];

/// Every tool and its class, CPersona 2.6.14's table restricted to the tools served here.
const CLASSIFICATION: &[(&str, Class)] = &[
    ("persistence_status", Class::Authenticated),
    ("get_queue_status", Class::Authenticated),
    ("get_operating_context", Class::Authenticated),
    ("pause_persistence", Class::Sweep(WRITE, PAUSE)),
    ("resume_persistence", Class::Sweep(WRITE, PAUSE)),
    ("recall", Class::Scoped("agent_id", READ)),
    ("reconstruct", Class::Scoped("agent_id", READ)),
    ("traverse", Class::Scoped("agent_id", READ)),
    ("recall_with_context", Class::Scoped("agent_id", READ)),
    ("get_contents", Class::Scoped("agent_id", READ)),
    ("get_profile", Class::Scoped("agent_id", READ)),
    ("get_recall_precision", Class::Scoped("agent_id", READ)),
    ("list_memories", Class::Scoped("agent_id", READ)),
    ("list_episodes", Class::Scoped("agent_id", READ)),
    ("store", Class::Scoped("agent_id", WRITE)),
    ("declare_associations", Class::Scoped("agent_id", WRITE)),
    ("update_profile", Class::Scoped("agent_id", WRITE)),
    ("archive_episode", Class::Scoped("agent_id", WRITE)),
    ("update_memory", Class::Scoped("agent_id", WRITE)),
    ("lock_memory", Class::Scoped("agent_id", WRITE)),
    ("unlock_memory", Class::Scoped("agent_id", WRITE)),
    ("delete_memory", Class::Scoped("agent_id", WRITE)),
    ("delete_episode", Class::Scoped("agent_id", WRITE)),
    ("delete_agent_data", Class::Scoped("agent_id", WRITE)),
    ("calibrate_threshold", Class::Scoped("agent_id", WRITE)),
    ("set_recall_precision", Class::Scoped("agent_id", WRITE)),
    ("export_memories", Class::Sweep(WRITE, FILE_IO)),
    ("import_memories", Class::Sweep(WRITE, FILE_IO)),
    ("merge_memories", Class::Merge),
    ("check_health", Class::Health),
    // Process-wide, as CPersona classifies it (the running code is no agent's data); its
    // `apply` escalation to a write is moot here, where `apply` is refused before anything.
    ("check_update", Class::Sweep(READ, PROCESS_WIDE)),
    (
        "get_session_findings",
        Class::Sweep(READ, WHOLE_STORE_FINDINGS),
    ),
    ("deep_check", Class::DeepCheck),
    ("migrate_channel_axis", Class::Scoped("agent_id", WRITE)),
];

/// The tools CPersona's table classifies (a tool served but missing here is denied).
pub fn classified_tools() -> impl Iterator<Item = &'static str> {
    CLASSIFICATION.iter().map(|(name, _)| *name)
}

/// What a call of `tool` with `args` demands; `None` for a tool no class covers.
pub fn demands(tool: &str, args: &Map<String, Value>) -> Option<Vec<Demand>> {
    let class = class_of(tool)?;
    let demand = |scope, required| Demand { scope, required };
    Some(match class {
        Class::Authenticated => vec![demand(Scope::Authenticated, READ)],
        Class::Scoped(key, required) => vec![demand(agent_arg(args, key), required)],
        Class::Sweep(required, _) => vec![demand(Scope::Every, required)],
        Class::Merge => {
            let source = if args.get("mode").and_then(Value::as_str) == Some("move") {
                WRITE
            } else {
                READ
            };
            vec![
                demand(agent_arg(args, "source_agent_id"), source),
                demand(agent_arg(args, "target_agent_id"), WRITE),
            ]
        }
        Class::Health if args.get("fix") == Some(&Value::Bool(true)) => {
            let mut demands = vec![demand(agent_arg(args, "agent_id"), WRITE)];
            if fixes_across_agents(args) {
                demands.push(demand(Scope::Every, WRITE));
            }
            demands
        }
        Class::Health => vec![demand(agent_arg(args, "agent_id"), READ)],
        Class::DeepCheck => {
            let required = if args.get("fix") == Some(&Value::Bool(true)) {
                WRITE
            } else {
                READ
            };
            vec![demand(agent_arg(args, "agent_id"), required)]
        }
    })
}

/// What `grants` allow on `scope`. An exact grant beats the wildcard both ways; a sweep is
/// allowed only at the weakest level any row grants (the wildcard and every named exception),
/// and named grants never add up to a wildcard one.
pub fn effective(grants: &Grants, scope: &Scope) -> Permission {
    match scope {
        Scope::Authenticated => Permission::ReadWrite,
        Scope::Agent(agent) => grants
            .get(agent)
            .or_else(|| grants.get(WILDCARD))
            .copied()
            .unwrap_or(Permission::None),
        Scope::Every => match grants.get(WILDCARD) {
            None => Permission::None,
            Some(_) => grants.values().copied().min().unwrap_or(Permission::None),
        },
    }
}

/// The one agent `grants` let a client write to, which an omitted `agent_id` of `store`
/// stands for; none when the wildcard allows writing or two agents do (never a guess).
pub fn connection_agent(grants: &Grants) -> Option<&str> {
    if grants.get(WILDCARD).copied().unwrap_or(Permission::None) >= WRITE {
        return None;
    }
    let mut writable = grants
        .iter()
        .filter(|(agent, level)| agent.as_str() != WILDCARD && **level >= WRITE);
    match (writable.next(), writable.next()) {
        (Some((agent, _)), None) => Some(agent),
        _ => None,
    }
}

/// Decides one call. `args` may gain the `agent_id` an omitted one resolves to (so the tool
/// runs on the agent the grant was checked on). A missing principal or an unclassified tool
/// is denied.
pub fn decide(
    acl: &Acl,
    principal: Option<&Principal>,
    tool: &str,
    args: &mut Map<String, Value>,
) -> Decision {
    let deny = |client_id: &str, agent_id: Option<String>, required, detail: String| {
        Decision::Deny(Denial {
            tool: tool.to_owned(),
            client_id: client_id.to_owned(),
            agent_id,
            required,
            detail,
        })
    };
    let Some(principal) = principal else {
        return deny("", None, None, "no principal resolved".to_owned());
    };
    let client_id = principal.client_id();
    let Some(class) = class_of(tool) else {
        return deny(
            client_id,
            None,
            None,
            "tool not classified for ACL enforcement".to_owned(),
        );
    };
    let empty = Grants::new();
    let (grants, known) = match acl.grants(principal) {
        Some(grants) => (grants, true),
        None => (&empty, false),
    };
    let mut resolved_agent_id = None;
    if tool == "store"
        && args.get("agent_id").is_none_or(Value::is_null)
        && let Some(agent) = connection_agent(grants)
    {
        args.insert("agent_id".to_owned(), json!(agent));
        resolved_agent_id = Some(agent.to_owned());
    }
    for demand in demands(tool, args).unwrap_or_default() {
        if effective(grants, &demand.scope) >= demand.required {
            continue;
        }
        let agent = match &demand.scope {
            Scope::Agent(agent) => agent.clone(),
            Scope::Every | Scope::Authenticated => WILDCARD.to_owned(),
        };
        let detail = if !known {
            "this client has no entry in the ACL grant table, so no agent is reachable at any \
             level"
                .to_owned()
        } else if demand.scope == Scope::Every {
            sweep_detail(class, args, grants)
        } else {
            String::new()
        };
        return deny(client_id, Some(agent), Some(demand.required), detail);
    }
    Decision::Allow { resolved_agent_id }
}

/// Whether `check_health(fix=true)` may run a repair of [`CROSS_AGENT_FIXES`]: `checks`
/// absent or empty runs them all (as in CPersona), and a name that is not a string counts.
fn fixes_across_agents(args: &Map<String, Value>) -> bool {
    match args.get("checks") {
        Some(Value::Array(checks)) if !checks.is_empty() => checks.iter().any(|check| {
            check
                .as_str()
                .is_none_or(|name| CROSS_AGENT_FIXES.contains(&name))
        }),
        _ => true,
    }
}

fn class_of(tool: &str) -> Option<Class> {
    CLASSIFICATION
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, class)| *class)
}

/// The scope an agent argument names: a non-empty string other than `*` is one agent;
/// absent, empty, `*` or not a string, every agent (the broadest demand, as CPersona).
fn agent_arg(args: &Map<String, Value>, key: &str) -> Scope {
    match args.get(key) {
        Some(Value::String(agent)) if !agent.is_empty() && agent != WILDCARD => {
            Scope::Agent(agent.clone())
        }
        _ => Scope::Every,
    }
}

/// Why a sweep was refused: the scope argument left out (the caller can fix it), or a tool
/// that demands every agent by its nature, with how far the grants reach.
fn sweep_detail(class: Class, args: &Map<String, Value>, grants: &Grants) -> String {
    let keys: &[&str] = match class {
        Class::Scoped(key, _) => &[key][..],
        Class::Merge => &["source_agent_id", "target_agent_id"],
        Class::Health if args.get("fix") != Some(&Value::Bool(true)) => &["agent_id"],
        _ => &[],
    };
    let unscoped: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|key| agent_arg(args, key) == Scope::Every)
        .collect();
    if !unscoped.is_empty() {
        return format!(
            "no single agent was named, so the call resolved to the all-agents demand; pass {} \
             naming one agent to scope it",
            unscoped.join(" and ")
        );
    }
    let cause = match class {
        Class::Sweep(_, cause) => cause,
        _ => HEALTH_FIX,
    };
    let reach = if grants.contains_key(WILDCARD) {
        "a sweep is allowed only at the weakest grant this client holds"
    } else {
        "this client holds no all-agents grant, and named grants never add up to one"
    };
    format!("{cause}; {reach}")
}
