//! `Scope`: CPersona's isolation axes rendered once as an SQL predicate plus parameters, used
//! by every query that reads or probes agent-scoped rows. A query must never build its own
//! isolation clause; a scope must never admit a row of another agent it was not asked for.

use rusqlite::types::Value;

/// The agent axis: a hard boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentAxis {
    /// No filter: a deliberate cross-agent scan (list/export with `agent_id = ""`).
    Any,
    /// Exactly this agent (`''` matches nothing a write produces: it fails closed).
    Exact(String),
}

/// The project axis (CPersona's "γ").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectAxis {
    /// No filter (the argument was omitted).
    Any,
    /// The global pool only (`project_id = ''`).
    GlobalOnly,
    /// The bucket plus the global pool (`project_id IN (X, '')`).
    WithGlobal(String),
}

/// The channel axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChannelAxis {
    /// No filter (reads with `channel` omitted or `''`).
    Any,
    /// Channel-less rows only (store's dedup probe with `channel = ''`).
    ChannellessOnly,
    /// The channel plus channel-less rows (`channel = X OR channel = ''`).
    WithChannelless(String),
}

/// One isolation scope over the three axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// Who.
    pub agent: AgentAxis,
    /// Which project bucket.
    pub project: ProjectAxis,
    /// Which channel.
    pub channel: ChannelAxis,
}

/// The isolation values of one row, for checking a scope in Rust.
#[derive(Clone, Copy, Debug)]
pub struct RowAxes<'a> {
    /// The row's agent.
    pub agent_id: &'a str,
    /// The row's project ('' = global pool).
    pub project_id: &'a str,
    /// The row's channel ('' = channel-less).
    pub channel: &'a str,
}

impl Scope {
    /// The read scope of CPersona's tools: `agent_id` `None` = all agents; `project_id`
    /// `None` = no filter, `""` = global pool, `X` = X plus the global pool; `channel` `None`
    /// or `""` = no filter, `X` = X plus channel-less rows.
    pub fn read(agent_id: Option<&str>, project_id: Option<&str>, channel: Option<&str>) -> Scope {
        Scope {
            agent: match agent_id {
                None => AgentAxis::Any,
                Some(agent) => AgentAxis::Exact(agent.to_owned()),
            },
            project: match project_id {
                None => ProjectAxis::Any,
                Some("") => ProjectAxis::GlobalOnly,
                Some(project) => ProjectAxis::WithGlobal(project.to_owned()),
            },
            channel: match channel {
                None | Some("") => ChannelAxis::Any,
                Some(channel) => ChannelAxis::WithChannelless(channel.to_owned()),
            },
        }
    }

    /// The scope a write is visible in, which `store` probes for duplicates: the agent, its
    /// project plus the global pool, its channel plus channel-less rows (an empty project or
    /// channel means only the global pool / channel-less rows).
    pub fn write_visible(agent_id: &str, project_id: &str, channel: &str) -> Scope {
        Scope {
            agent: AgentAxis::Exact(agent_id.to_owned()),
            project: if project_id.is_empty() {
                ProjectAxis::GlobalOnly
            } else {
                ProjectAxis::WithGlobal(project_id.to_owned())
            },
            channel: if channel.is_empty() {
                ChannelAxis::ChannellessOnly
            } else {
                ChannelAxis::WithChannelless(channel.to_owned())
            },
        }
    }

    /// The same scope with the channel axis dropped (msg_id dedup ignores channels).
    pub fn without_channel(&self) -> Scope {
        Scope {
            channel: ChannelAxis::Any,
            ..self.clone()
        }
    }

    /// The SQL predicate over the columns of `alias` (`""` for unqualified columns) and its
    /// positional (`?`) parameters, in order. Always a valid boolean expression (`1` when the
    /// scope filters nothing), so callers can write `WHERE {pred} AND ...`.
    pub fn predicate(&self, alias: &str) -> (String, Vec<Value>) {
        let col = |name: &str| {
            if alias.is_empty() {
                name.to_owned()
            } else {
                format!("{alias}.{name}")
            }
        };
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        if let AgentAxis::Exact(agent) = &self.agent {
            clauses.push(format!("{} = ?", col("agent_id")));
            params.push(Value::Text(agent.clone()));
        }
        match &self.project {
            ProjectAxis::Any => {}
            ProjectAxis::GlobalOnly => clauses.push(format!("{} = ''", col("project_id"))),
            ProjectAxis::WithGlobal(project) => {
                clauses.push(format!("{} IN (?, '')", col("project_id")));
                params.push(Value::Text(project.clone()));
            }
        }
        match &self.channel {
            ChannelAxis::Any => {}
            ChannelAxis::ChannellessOnly => clauses.push(format!("{} = ''", col("channel"))),
            ChannelAxis::WithChannelless(channel) => {
                clauses.push(format!("{} IN (?, '')", col("channel")));
                params.push(Value::Text(channel.clone()));
            }
        }
        if clauses.is_empty() {
            ("1".to_owned(), params)
        } else {
            (format!("({})", clauses.join(" AND ")), params)
        }
    }

    /// The same decision as [`Scope::predicate`], in Rust: does the scope admit this row?
    pub fn admits(&self, row: RowAxes<'_>) -> bool {
        let agent_ok = match &self.agent {
            AgentAxis::Any => true,
            AgentAxis::Exact(agent) => row.agent_id == agent,
        };
        let project_ok = match &self.project {
            ProjectAxis::Any => true,
            ProjectAxis::GlobalOnly => row.project_id.is_empty(),
            ProjectAxis::WithGlobal(project) => {
                row.project_id == project || row.project_id.is_empty()
            }
        };
        let channel_ok = match &self.channel {
            ChannelAxis::Any => true,
            ChannelAxis::ChannellessOnly => row.channel.is_empty(),
            ChannelAxis::WithChannelless(channel) => {
                row.channel == channel || row.channel.is_empty()
            }
        };
        agent_ok && project_ok && channel_ok
    }
}

#[cfg(test)]
mod tests;
