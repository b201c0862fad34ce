//! CPersona's operating context (2.5.1): an operator-owned TOML sidecar
//! (`~/.cpersona/operating-context.toml`, or `CPERSONA_OPERATING_CONTEXT_PATH`;
//! `CPERSONA_OPERATING_CONTEXT=off` disables it) that every connected client receives.
//! - Soft layer: `[instructions].summary` follows the server's own text in `initialize`.
//! - Hard layer: `[registry].project_ids` validates explicit `project_id`s of the gated tools
//!   (`enforce` off|warn|reject; reads only ever warn, since a bad read filter loses nothing),
//!   and `"@auto"` resolves through `[defaults]` by `agent_id`.
//! - `get_operating_context` serves the preview or one `[[doctrine]]` section.
//!
//! An absent file, the kill switch or a file that does not parse leaves the feature dormant:
//! no instructions, no validation, nothing changes (a typo never takes memory down; the parse
//! error is logged and named by `get_operating_context`). The file is read again when its
//! modification time changes, so edits apply live (the instructions only at the next
//! `initialize`). The server never writes the file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;

/// The sentinel that resolves to the agent's default project.
pub const AUTO: &str = "@auto";
/// The sidecar's file-format version.
const FILE_FORMAT_VERSION: i64 = 1;
/// The gated tools and whether each writes.
pub const GATED: &[(&str, bool)] = &[
    ("store", true),
    ("declare_associations", true),
    ("archive_episode", true),
    ("traverse", false),
    ("list_memories", false),
    ("list_episodes", false),
    ("recall", false),
    ("reconstruct", false),
    ("recall_with_context", false),
];

/// How the registry is enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Enforce {
    /// Nothing is validated; `@auto` still resolves.
    Off,
    /// An unregistered project is used and warned about.
    Warn,
    /// A write to an unregistered project is refused (reads warn).
    Reject,
}

/// The parsed sidecar.
#[derive(Clone, Debug, PartialEq)]
pub struct OperatingContext {
    /// `context_revision`.
    pub revision: String,
    /// `[instructions].summary`.
    pub summary: String,
    /// `[registry].project_ids`.
    pub project_ids: Vec<String>,
    /// `[registry].enforce` (default warn).
    pub enforce: Enforce,
    /// `[defaults]`: agent id to project id, for `@auto`.
    pub defaults: BTreeMap<String, String>,
    /// `[[doctrine]]` sections by name.
    pub doctrine: BTreeMap<String, String>,
}

/// Parses and validates a sidecar: strict on the shape of what it knows, unknown keys allowed
/// (a newer file may carry more).
pub fn parse(text: &str) -> Result<OperatingContext, String> {
    let data: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    match data.get("version").and_then(toml::Value::as_integer) {
        Some(FILE_FORMAT_VERSION) => {}
        other => {
            return Err(format!(
                "unsupported file-format version {other:?} (expected {FILE_FORMAT_VERSION})"
            ));
        }
    }
    let string = |value: Option<&toml::Value>, what: &str| -> Result<String, String> {
        match value {
            None => Ok(String::new()),
            Some(toml::Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{what} must be a string")),
        }
    };
    let table = |key: &str| -> Result<Option<&toml::Table>, String> {
        match data.get(key) {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(format!("[{key}] must be a table")),
        }
    };
    let revision = string(data.get("context_revision"), "context_revision")?;
    let summary = string(
        table("instructions")?.and_then(|t| t.get("summary")),
        "instructions.summary",
    )?;
    let registry = table("registry")?;
    let project_ids = match registry.and_then(|r| r.get("project_ids")) {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("registry.project_ids must be a list of strings")?,
        Some(_) => return Err("registry.project_ids must be a list of strings".into()),
    };
    let enforce = match registry.and_then(|r| r.get("enforce")) {
        None => Enforce::Warn,
        Some(toml::Value::String(mode)) => match mode.as_str() {
            "off" => Enforce::Off,
            "warn" => Enforce::Warn,
            "reject" => Enforce::Reject,
            _ => {
                return Err(format!(
                    "registry.enforce must be off, warn or reject, got {mode:?}"
                ));
            }
        },
        Some(_) => return Err("registry.enforce must be off, warn or reject".into()),
    };
    let mut defaults = BTreeMap::new();
    for (agent, project) in table("defaults")?.into_iter().flatten() {
        let project = project
            .as_str()
            .ok_or("[defaults] must map agent_id strings to project_id strings")?;
        defaults.insert(agent.clone(), project.to_owned());
    }
    let mut doctrine = BTreeMap::new();
    match data.get("doctrine") {
        None => {}
        Some(toml::Value::Array(sections)) => {
            for (i, section) in sections.iter().enumerate() {
                let name = section.get("name").and_then(toml::Value::as_str);
                let body = section.get("body").and_then(toml::Value::as_str);
                let (Some(name), Some(body)) = (name, body) else {
                    return Err(format!(
                        "[[doctrine]] entry {i} must have string 'name' and 'body'"
                    ));
                };
                if name.is_empty() {
                    return Err(format!(
                        "[[doctrine]] entry {i} must have string 'name' and 'body'"
                    ));
                }
                if doctrine.insert(name.to_owned(), body.to_owned()).is_some() {
                    return Err(format!("duplicate doctrine section name {name:?}"));
                }
            }
        }
        Some(_) => return Err("[[doctrine]] must be an array of tables".into()),
    }
    Ok(OperatingContext {
        revision,
        summary,
        project_ids,
        enforce,
        defaults,
        doctrine,
    })
}

/// What the gate made of one call's `project_id`.
#[derive(Clone, Debug, PartialEq)]
pub enum Gate {
    /// Pass the call on with this project id (resolved from `@auto` or as given), and warn.
    Pass {
        /// The project id to use.
        project_id: String,
        /// Said in `operating_context_warning`.
        warning: Option<String>,
    },
    /// Refuse the call, naming why and the context's revision.
    Refuse {
        /// Why.
        error: String,
        /// `context_revision`.
        revision: String,
    },
}

impl OperatingContext {
    /// CPersona's `check_project_id`: an explicit value is validated, never rewritten; only
    /// `@auto` resolves (by `[defaults]`, `""` when unmapped); writes may be refused under
    /// `reject`, reads only warn.
    pub fn gate(&self, project_id: &str, agent_id: &str, write: bool) -> Gate {
        let refuse = |error: String| Gate::Refuse {
            error,
            revision: self.revision.clone(),
        };
        let mut resolved = project_id.to_owned();
        let mut warning = None;
        if project_id == AUTO {
            match self.defaults.get(agent_id) {
                Some(mapped) => resolved = mapped.clone(),
                None => {
                    let msg = format!(
                        "@auto has no [defaults] mapping for agent_id '{agent_id}' (rev {}); \
                         resolved to '' (global pool)",
                        self.revision
                    );
                    if self.enforce == Enforce::Reject && write {
                        return refuse(msg);
                    }
                    resolved = String::new();
                    warning = (self.enforce != Enforce::Off).then_some(msg);
                }
            }
            if resolved.is_empty() {
                return Gate::Pass {
                    project_id: resolved,
                    warning,
                };
            }
        }
        if self.enforce != Enforce::Off && !self.project_ids.contains(&resolved) {
            let msg = format!(
                "project_id '{resolved}' not in registry (rev {})",
                self.revision
            );
            if self.enforce == Enforce::Reject && write {
                return refuse(msg);
            }
            warning = Some(msg);
        }
        Gate::Pass {
            project_id: resolved,
            warning,
        }
    }
}

/// The sidecar as the server reads it: where, and the last parse by modification time.
#[derive(Debug)]
pub struct Loader {
    /// `None` when `CPERSONA_OPERATING_CONTEXT=off`.
    path: Option<PathBuf>,
    cache: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    modified: SystemTime,
    parsed: Result<Arc<OperatingContext>, String>,
}

impl Loader {
    /// Reads `path` (`None`: switched off).
    pub fn new(path: Option<PathBuf>) -> Loader {
        Loader {
            path,
            cache: Mutex::new(None),
        }
    }

    /// The current context, or why it is dormant.
    pub fn current(&self) -> Result<Arc<OperatingContext>, String> {
        let Some(path) = &self.path else {
            return Err("disabled (CPERSONA_OPERATING_CONTEXT=off)".into());
        };
        let Ok(modified) = std::fs::metadata(path).and_then(|m| m.modified()) else {
            return Err(format!("no sidecar file at {}", path.display()));
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = cache.as_ref()
            && cached.modified == modified
        {
            return cached.parsed.clone();
        }
        let parsed = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text))
            .map(Arc::new)
            .map_err(|e| {
                tracing::warn!(path = %path.display(), error = %e,
                    "operating context unusable, feature dormant");
                format!("sidecar unusable: {e}")
            });
        *cache = Some(Cached {
            modified,
            parsed: parsed.clone(),
        });
        parsed
    }

    /// The operator's summary for `initialize`, when there is one.
    pub fn summary(&self) -> Option<String> {
        self.current()
            .ok()
            .map(|c| c.summary.clone())
            .filter(|s| !s.trim().is_empty())
    }

    /// `get_operating_context`'s body for `section` (`""`: the preview).
    pub fn answer(&self, section: &str) -> ContextAnswer {
        let context = match self.current() {
            Ok(context) => context,
            Err(reason) => {
                return ContextAnswer {
                    ok: false,
                    enabled: Some(false),
                    error: Some(format!("operating context is dormant — {reason}")),
                    ..ContextAnswer::default()
                };
            }
        };
        let sections = Some(context.doctrine.keys().cloned().collect());
        if section.is_empty() {
            return ContextAnswer {
                ok: true,
                context_revision: Some(context.revision.clone()),
                instructions_summary: Some(context.summary.clone()),
                registry: Some(Registry {
                    project_ids: context.project_ids.clone(),
                    enforce: context.enforce,
                }),
                defaults: Some(context.defaults.clone()),
                doctrine_sections: sections,
                ..ContextAnswer::default()
            };
        }
        match context.doctrine.get(section) {
            Some(body) => ContextAnswer {
                ok: true,
                context_revision: Some(context.revision.clone()),
                section: Some(section.to_owned()),
                body: Some(body.clone()),
                ..ContextAnswer::default()
            },
            None => ContextAnswer {
                ok: false,
                error: Some(format!("unknown doctrine section '{section}'")),
                doctrine_sections: sections,
                ..ContextAnswer::default()
            },
        }
    }
}

/// `get_operating_context`'s body, in CPersona's three shapes (dormant, preview, section);
/// absent fields are left out.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct ContextAnswer {
    /// False when dormant or the section is unknown.
    pub ok: bool,
    /// False when dormant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `context_revision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_revision: Option<String>,
    /// `[instructions].summary` (preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_summary: Option<String>,
    /// The registry (preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<Registry>,
    /// `[defaults]` (preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults: Option<BTreeMap<String, String>>,
    /// The doctrine sections' names (preview, or an unknown section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doctrine_sections: Option<Vec<String>>,
    /// The section asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Its body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// `[registry]` as served.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Registry {
    /// The registered project ids.
    pub project_ids: Vec<String>,
    /// off, warn or reject.
    pub enforce: Enforce,
}

#[cfg(test)]
mod tests;
