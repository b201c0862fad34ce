//! The recall body's post-filters: `exclude_contents` (starts-with either way, as CPersona
//! matches previews) and the `source_id` prefix.

use serde_json::json;

use super::{Filters, filter_messages};

fn body() -> serde_json::Value {
    json!({"messages": [
        {"content": "the cat is called Miso", "source": {"id": "discord:1"}},
        {"content": "the report is due Friday", "source": {"id": "slack:9"}},
        {"content": "lives in Kyoto"},
    ]})
}

#[test]
fn nothing_to_filter_keeps_every_row() {
    let mut b = body();
    let filters = Filters {
        exclude_contents: vec![],
        source_id: String::new(),
    };
    assert_eq!(filter_messages(&mut b, &filters), 0);
    assert_eq!(b, body());
}

#[test]
fn exclude_contents_matches_a_preview_prefix_either_way() {
    let mut b = body();
    let filters = Filters {
        // A preview of row 0, and a longer text that row 2 is a prefix of.
        exclude_contents: vec![
            "the cat is".into(),
            "lives in Kyoto, Japan".into(),
            String::new(),
        ],
        source_id: String::new(),
    };
    assert_eq!(filter_messages(&mut b, &filters), 2);
    assert_eq!(b["messages"][0]["content"], "the report is due Friday");
    assert_eq!(b["messages"].as_array().map(Vec::len), Some(1));
}

#[test]
fn source_id_keeps_only_rows_whose_source_starts_with_it() {
    let mut b = body();
    let filters = Filters {
        exclude_contents: vec![],
        source_id: "discord:".into(),
    };
    assert_eq!(filter_messages(&mut b, &filters), 2);
    assert_eq!(b["messages"][0]["source"]["id"], "discord:1");
}
