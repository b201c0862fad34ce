//! One file per group of pages: the agents (overview, an agent, its episodes and profile),
//! the memories (list, one memory, its edits), the search, the trace and the health page.

pub(crate) mod agents;
pub(crate) mod health;
pub(crate) mod memories;
pub(crate) mod search;
pub(crate) mod trace;
