//! Unit tests of the association helpers: normalisation and relation ends.

use super::*;

#[test]
fn normalize_folds_width_case_and_spaces() {
    assert_eq!(normalize("  Ａｃｍｅ   Corp\t"), "acme corp");
    assert_eq!(normalize("ALICE"), normalize("alice"));
    assert_eq!(normalize("Works\nAt"), "works at");
    assert_eq!(normalize("   "), "");
    // NFKC: the compatibility ligature and the composed accent.
    assert_eq!(normalize("ﬁsh"), "fish");
    assert_eq!(normalize("Cafe\u{301}"), "café");
}

#[test]
fn nodes_round_trip_their_kind_and_id() {
    for node in [
        Node::Entity(3),
        Node::Record(Ref::mem(4)),
        Node::Record(Ref::ep(5)),
    ] {
        assert_eq!(Node::from_row(node.kind(), node.id()), Some(node));
    }
    assert_eq!(Node::from_row("folder", 1), None);
}
