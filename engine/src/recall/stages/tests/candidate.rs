//! Refs: strict parsing, display, order.

use proptest::prelude::*;

use crate::refs::{Ref, RefKind};

#[test]
fn refs_parse_strictly() {
    assert_eq!("mem:12".parse(), Ok(Ref::mem(12)));
    assert_eq!("ep:3".parse(), Ok(Ref::ep(3)));
    for bad in [
        "mem:",
        "mem:0",
        "mem:012",
        "mem:-1",
        "mem:+1",
        "mem: 1",
        "MEM:1",
        "ep:1x",
        "x:1",
        "",
        "mem:99999999999999999999",
    ] {
        assert!(bad.parse::<Ref>().is_err(), "{bad:?} parsed");
    }
    assert_eq!(
        serde_json::to_string(&Ref::ep(7)).expect("json"),
        r#""ep:7""#
    );
}

#[test]
fn memories_order_before_episodes() {
    assert!(Ref::mem(100) < Ref::ep(1));
    assert!(Ref::mem(1) < Ref::mem(2));
    assert_eq!(RefKind::Ep.prefix(), "ep");
}

proptest! {
    #[test]
    fn display_parses_back(id in 1i64..=i64::MAX, ep in any::<bool>()) {
        let r = if ep { Ref::ep(id) } else { Ref::mem(id) };
        prop_assert_eq!(r.to_string().parse::<Ref>(), Ok(r));
    }

    #[test]
    fn parsing_any_string_never_panics(text in "\\PC{0,24}") {
        let _ = text.parse::<Ref>();
    }
}
