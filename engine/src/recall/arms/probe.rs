//! Each recall arm on its own, for the per-stage bench (`benches/benches/recall.rs`) and for
//! tests that need one arm's list: the same functions `Engine::recall` calls, in the caller's
//! `Scope`, without fusion, gate or shaping. It must never offer a path around isolation:
//! every read goes through `Scope::read` like the recall itself.

use crate::config::EngineConfig;
use crate::error::Result;
use crate::recall::arms::lexical::{self, CapActed};
use crate::recall::arms::vector;
use crate::recall::stages::candidate::ArmList;
use crate::scope::Scope;
use crate::store::Store;

/// The lexical arms' lists as `Engine::recall` would fuse them.
#[derive(Clone, Debug)]
pub struct LexicalArms {
    /// Episodes FTS, then memories (FTS or the keyword pass).
    pub lists: Vec<ArmList>,
    /// True when the memories list came from the keyword pass.
    pub keyword_fallback: bool,
    /// Tables on which the lexical cap acted.
    pub capped: Vec<CapActed>,
    /// Notes the recall would add to its advisories.
    pub notes: Vec<String>,
}

/// The vector arm alone (generation plus live tail, near and far lists) for `vector`, in
/// the scope of `agent_id` / `project_id`, cut to `depth`.
pub(crate) fn vector_arm(
    store: &Store,
    config: &EngineConfig,
    agent_id: &str,
    project_id: Option<&str>,
    vector: &[f32],
    depth: usize,
) -> Result<Vec<ArmList>> {
    let scope = Scope::read(Some(agent_id), project_id, None);
    let lists = vector::search(store, &scope, vector, depth, config.scan_window)?;
    Ok(vec![lists.near, lists.far])
}

/// The lexical arms alone (FTS5 over episodes and memories, the keyword pass when the
/// memories FTS finds nothing), with the lexical cap `cap` (`None` = uncapped).
pub(crate) fn lexical_arm(
    store: &Store,
    agent_id: &str,
    project_id: Option<&str>,
    query: &str,
    depth: usize,
    cap: Option<usize>,
) -> Result<LexicalArms> {
    let scope = Scope::read(Some(agent_id), project_id, None);
    let lists = store.read(|conn| lexical::search(conn, &scope, query, depth, cap))?;
    Ok(LexicalArms {
        lists: vec![lists.episodes, lists.memories],
        keyword_fallback: lists.keyword_fallback,
        capped: lists.capped,
        notes: lists.notes,
    })
}

/// The keyword (LIKE) pass alone, as the memories arm's fallback runs it; `None` when
/// the query holds no pattern.
pub(crate) fn keyword_arm(
    store: &Store,
    agent_id: &str,
    project_id: Option<&str>,
    query: &str,
    depth: usize,
) -> Result<Option<ArmList>> {
    let scope = Scope::read(Some(agent_id), project_id, None);
    let mut notes = Vec::new();
    store.read(|conn| lexical::keyword_pass(conn, &scope, query, depth, &mut notes))
}
