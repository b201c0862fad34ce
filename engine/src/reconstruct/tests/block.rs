//! Block quotes: reconstruct's head quotes and excerpts, and recall's preview excerpt, pick
//! passages by the record's stored blocks ranked against the query vector (int8 cosine, sign
//! bits when a block lacks int8, the text heuristic only without blocks), verbatim at the
//! stated ranges.

use std::sync::Arc;

use serde_json::json;

use crate::derived::blocks::{BlockChoice, BlockOrder};
use crate::recall::stages::excerpt::ExcerptBasis;
use crate::reconstruct::stages::items::{QuoteBasis, excerpt_quote, head_quote};
use crate::reconstruct::stages::{Item, Mutation};
use crate::refs::Ref;

/// The clause the query is about, in the middle of the record.
const CLAUSE: &str = "The violin lesson moved to Tuesday.";
const QUERY: &str = "violin lesson tuesday";

/// A sentence of about `len` characters holding every query word among many others, with
/// no sentence end inside (one block, one passage).
fn decoy(seed: usize, len: usize) -> String {
    const FILL: &[&str] = &[
        "harbour", "copper", "kettle", "marble", "orchard", "pepper", "quartz", "rugby", "walnut",
        "yacht", "zebra", "cobalt", "ferry", "gravel", "hammock",
    ];
    let mut out = String::from("Among violin, lesson and Tuesday we also spoke of");
    let mut i = seed;
    while out.chars().count() < len {
        out.push(' ');
        out.push_str(FILL[i % FILL.len()]);
        out.push(',');
        i += 7;
    }
    out.push_str(" and more.");
    out
}

/// Filler sentences that share no trigram with the query.
fn filler(n: usize) -> String {
    (0..n)
        .map(|i| format!("The harbour crane number {i} was painted green."))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The long record: filler, three long decoys, the clause in the middle, filler. The text
/// heuristic ties every decoy with the clause on query trigrams and takes the earliest
/// passages first, so within 800 characters it never reaches the clause.
fn long_record() -> String {
    format!(
        "{} {} {}\n\n{} {} {} {}\n\n{}",
        filler(3),
        decoy(1, 410),
        decoy(2, 410),
        decoy(3, 350),
        filler(2),
        CLAUSE,
        filler(2),
        filler(2)
    )
}

fn engine() -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine =
        crate::Engine::open(crate::EngineConfig::new(dir.path().join("b.db")), embedder).unwrap();
    (dir, engine)
}

fn store(engine: &crate::Engine, content: &str, at: &str) {
    engine
        .store(&crate::StoreRequest {
            agent_id: "a".into(),
            content: content.to_owned(),
            source: Some(json!({"type": "user", "id": "u1"})),
            timestamp: Some(at.to_owned()),
            ..crate::StoreRequest::default()
        })
        .unwrap();
}

fn reconstruct(engine: &crate::Engine, m: Mutation) -> Vec<Item> {
    crate::reconstruct::reconstruct_with(
        engine.store_handle(),
        engine.config(),
        &crate::ReconstructRequest {
            agent_id: "a".into(),
            query: QUERY.into(),
            ..crate::ReconstructRequest::default()
        },
        m,
    )
    .unwrap()
    .response
    .items
}

fn chars_at(text: &str, r: [usize; 2]) -> String {
    text.chars().skip(r[0]).take(r[1] - r[0]).collect()
}

fn head_of(items: &[Item], r: Ref) -> &Item {
    items
        .iter()
        .find(|i| i.head_ref == Some(r))
        .expect("the long record heads an item")
}

#[test]
fn the_middle_clause_is_quoted_by_blocks_and_not_without_them() {
    let (_dir, engine) = engine();
    let text = long_record();
    assert!(text.chars().count() > 800);
    store(&engine, &text, "2024-01-01T10:00:00Z");
    let blocks = engine.stored_blocks(Ref::mem(1)).unwrap();
    assert!(blocks.len() > 5 && blocks.iter().all(|b| b.int8.is_some()));

    let items = reconstruct(&engine, Mutation::None);
    let item = head_of(&items, Ref::mem(1));
    assert_eq!(item.quote_basis, QuoteBasis::Blocks);
    assert!(item.content.contains(CLAUSE), "quote: {}", item.content);
    let parts: Vec<String> = item.ranges.iter().map(|&r| chars_at(&text, r)).collect();
    assert_eq!(
        item.content,
        parts.join(crate::reconstruct::stages::items::ELLIPSIS)
    );

    // The mutation: quotes ignore the blocks, and the clause is lost.
    let items = reconstruct(&engine, Mutation::BlocksIgnored);
    let item = head_of(&items, Ref::mem(1));
    assert_eq!(item.quote_basis, QuoteBasis::Text);
    assert!(!item.content.contains(CLAUSE), "quote: {}", item.content);
}

#[test]
fn sign_bits_rank_when_a_block_lacks_int8_and_text_when_there_are_no_blocks() {
    let (_dir, engine) = engine();
    store(&engine, &long_record(), "2024-01-01T10:00:00Z");
    engine
        .store_handle()
        .write(|tx| {
            tx.execute(
                "UPDATE record_blocks SET embedding_i8 = NULL WHERE block_index = 0",
                [],
            )?;
            Ok(())
        })
        .unwrap();
    let items = reconstruct(&engine, Mutation::None);
    let item = head_of(&items, Ref::mem(1));
    assert_eq!(item.quote_basis, QuoteBasis::Bits);
    engine
        .store_handle()
        .write(|tx| {
            tx.execute("DELETE FROM record_blocks", [])?;
            Ok(())
        })
        .unwrap();
    let items = reconstruct(&engine, Mutation::None);
    assert_eq!(head_of(&items, Ref::mem(1)).quote_basis, QuoteBasis::Text);
}

#[test]
fn excerpts_pick_blocks_and_their_ranges_lie_inside_their_claims() {
    let (_dir, engine) = engine();
    // An adjacency burst (same source, 20 s apart): one item, the other record an excerpt.
    let short = format!("{} The end.", long_record());
    store(&engine, &short, "2024-01-01T10:00:00Z");
    let text = long_record();
    store(&engine, &text, "2024-01-01T10:00:20Z");
    let items = reconstruct(&engine, Mutation::None);
    let excerpts: Vec<_> = items.iter().flat_map(|i| &i.excerpts).collect();
    assert!(!excerpts.is_empty(), "items: {items:?}");
    for item in &items {
        let claims: Vec<Ref> = item.claims.iter().map(|c| c.r#ref).collect();
        for e in &item.excerpts {
            assert!(claims.contains(&e.r#ref));
            let stored = if e.r#ref == Ref::mem(2) {
                &text
            } else {
                &short
            };
            match e.range {
                Some(r) => {
                    assert!(r[0] < r[1] && r[1] <= stored.chars().count());
                    assert_eq!(e.content, chars_at(stored, r));
                }
                None => assert_eq!(&e.content, stored),
            }
        }
    }
    let long = excerpts.first().expect("one record is an excerpt");
    assert_eq!(long.quote_basis, Some(QuoteBasis::Blocks));
    assert!(long.content.contains(CLAUSE), "excerpt: {}", long.content);
}

#[test]
fn recall_preview_excerpts_pick_blocks() {
    let (_dir, engine) = engine();
    store(&engine, &long_record(), "2024-01-01T10:00:00Z");
    let r = engine
        .recall(&crate::RecallQuery {
            agent_id: "a".into(),
            query: QUERY.into(),
            limit: 5,
            ..crate::RecallQuery::default()
        })
        .unwrap();
    let row = r
        .response
        .messages
        .iter()
        .find(|m| m.r#ref == Ref::mem(1))
        .unwrap();
    assert!(row.content_truncated);
    assert_eq!(row.excerpt_basis, Some(ExcerptBasis::Blocks));
    let excerpt = row.excerpt.as_deref().unwrap();
    assert!(excerpt.contains(CLAUSE) && long_record().contains(excerpt));
    // The text heuristic alone (what recall showed before) misses the clause.
    let text = crate::recall::stages::excerpt::excerpt(&long_record(), QUERY, 800).unwrap();
    assert!(!text.text.contains(CLAUSE));
}

// ---- The pure choice ----

fn choice(ranked: &[(usize, usize)]) -> BlockChoice {
    BlockChoice {
        ranked: ranked.to_vec(),
        order: Some(BlockOrder::Int8),
    }
}

#[test]
fn fill_takes_best_blocks_in_text_order_and_stops_at_the_first_that_does_not_fit() {
    let text: String = ('a'..='z').cycle().take(100).collect();
    // Blocks of 10; best: 50..60, then 60..70 (touching: no separator), then 0..10.
    let c = choice(&[(50, 60), (60, 70), (0, 10), (20, 30)]);
    let q = head_quote(&text, "zzz", 33, Some(&c));
    assert_eq!(q.ranges, vec![[0, 10], [50, 70]]);
    assert_eq!(q.text, format!("{} … {}", &text[0..10], &text[50..70]));
    assert_eq!(q.basis, QuoteBasis::Blocks);
    // 20 + 10 + 3 = 33 fits; the next (20..30) does not and filling stops.
    let q = head_quote(&text, "zzz", 32, Some(&c));
    assert_eq!(q.ranges, vec![[50, 70]]);
    // A best block longer than the cap: its start, severed, with the read that continues it.
    let q = head_quote(&text, "zzz", 5, Some(&c));
    assert_eq!(
        (q.ranges.clone(), q.expand),
        (vec![[50, 55]], Some([50, 60]))
    );
    // Sign bits are said as such.
    let bits = BlockChoice {
        order: Some(BlockOrder::SignBits),
        ..c.clone()
    };
    assert_eq!(
        head_quote(&text, "zzz", 33, Some(&bits)).basis,
        QuoteBasis::Bits
    );
}

#[test]
fn grow_stays_contiguous_within_the_cap_and_prefers_better_neighbours() {
    let text: String = ('a'..='z').cycle().take(100).collect();
    let c = choice(&[(40, 50), (30, 40), (50, 60), (0, 10)]);
    let e = excerpt_quote(&text, "zzz", 25, Some(&c));
    assert_eq!(e.ranges, vec![[30, 50]]);
    let e = excerpt_quote(&text, "zzz", 30, Some(&c));
    assert_eq!(e.ranges, vec![[30, 60]]);
    assert_eq!(e.text, &text[30..60]);
}

#[test]
fn a_block_set_that_does_not_tile_the_text_is_not_used() {
    use crate::derived::blocks::BlockVectors;
    let codes: Vec<i8> = vec![1, 2, 3];
    let v = |index| BlockVectors {
        index,
        bits: None,
        int8: Some(&codes),
    };
    let q = [0.1f32, 0.2, 0.3];
    assert!(BlockChoice::rank(&q, &[(0, 5), (5, 9)], &[v(0), v(1)], 9).is_some());
    assert!(BlockChoice::rank(&q, &[(0, 5), (5, 9)], &[v(0), v(1)], 12).is_none());
    assert!(BlockChoice::rank(&q, &[(0, 5), (6, 9)], &[v(0), v(1)], 9).is_none());
    let no_vectors = |index| BlockVectors {
        index,
        bits: None,
        int8: None,
    };
    assert!(BlockChoice::rank(&q, &[(0, 5), (5, 9)], &[no_vectors(0), no_vectors(1)], 9).is_none());
}

#[test]
fn a_recall_trace_with_block_excerpts_replays_unchanged() {
    let (_dir, engine) = engine();
    store(&engine, &long_record(), "2024-01-01T10:00:00Z");
    let r = engine
        .recall(&crate::RecallQuery {
            agent_id: "a".into(),
            query: QUERY.into(),
            limit: 5,
            trace: true,
            ..crate::RecallQuery::default()
        })
        .unwrap();
    assert!(
        r.response
            .messages
            .iter()
            .any(|m| m.excerpt_basis == Some(ExcerptBasis::Blocks))
    );
    let trace = r.trace().unwrap();
    let replayed =
        crate::trace::replay::replay(&trace, &crate::trace::replay::ReplayChanges::default())
            .unwrap();
    assert!(replayed.unchanged && replayed.exact, "{:?}", replayed.rerun);
}
