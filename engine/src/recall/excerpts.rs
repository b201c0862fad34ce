//! Recall's preview excerpts from stored blocks: a preview-cut row's text-heuristic excerpt
//! is replaced by the passage its record's stored blocks rank best against the query
//! vector, where the record has a rankable block set; other rows keep theirs.

use crate::error::Result;
use crate::recall::read::{hydrated, read_scoped};
use crate::recall::stages::excerpt::block_excerpt;
use crate::recall::stages::shape::RecallMessage;
use crate::refs::RefKind;
use crate::scope::Scope;
use crate::store::Store;

/// The characters a recall row shows before the stored text (`"[Episode] "` for episodes).
fn shown_prefix(kind: RefKind) -> usize {
    match kind {
        RefKind::Mem => 0,
        RefKind::Ep => "[Episode] ".chars().count(),
    }
}

/// Replaces the excerpt of each preview-cut row of `messages` by one picked from its
/// record's stored blocks against `query`, at most `cap` characters. Reads each row within
/// `scope` again.
pub(crate) fn block_excerpts(
    store: &Store,
    scope: &Scope,
    messages: &mut [RecallMessage],
    query: &[f32],
    cap: usize,
) -> Result<()> {
    store.read(|conn| {
        for message in messages.iter_mut().filter(|m| m.excerpt.is_some()) {
            let r = message.r#ref;
            let Some(stored) = read_scoped(conn, scope, r)? else {
                continue;
            };
            let Some(choice) = crate::derived::block_choice(conn, r, &stored.text, query)? else {
                continue;
            };
            let shown = hydrated(r, stored).content;
            let choice = choice.shifted(shown_prefix(r.kind));
            if let Some(found) = block_excerpt(&shown, &choice, cap) {
                message.excerpt_basis = Some(found.basis);
                message.excerpt = Some(found.text);
            }
        }
        Ok(())
    })
}
