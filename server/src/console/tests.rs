//! Unit tests of the console's pure parts: the cross-site check, the limits, the weekly
//! grid, the escaping of stored text and the SVG numbers.

use axum::http::{HeaderMap, HeaderValue};

use super::csrf::{SMALL_FORM_BYTES, edit_form_bytes, same_origin};
use super::host_name;
use super::layout::{encode, query_string};
use super::svg::{self, WEEK_MS, fmt, weekly_counts};

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

#[test]
fn a_cross_site_post_is_refused_and_a_same_origin_one_passes() {
    assert!(same_origin(&headers(&[("host", "127.0.0.1:8788")])).is_ok());
    assert!(
        same_origin(&headers(&[
            ("host", "127.0.0.1:8788"),
            ("origin", "http://127.0.0.1:8788"),
            ("sec-fetch-site", "same-origin")
        ]))
        .is_ok()
    );
    assert!(
        same_origin(&headers(&[
            ("host", "127.0.0.1:8788"),
            ("origin", "https://evil.example")
        ]))
        .is_err()
    );
    assert!(same_origin(&headers(&[("host", "127.0.0.1:8788"), ("origin", "null")])).is_err());
    assert!(
        same_origin(&headers(&[
            ("host", "127.0.0.1:8788"),
            ("sec-fetch-site", "cross-site")
        ]))
        .is_err()
    );
    assert!(
        same_origin(&headers(&[
            ("host", "127.0.0.1:8788"),
            ("sec-fetch-site", "same-site")
        ]))
        .is_err()
    );
    // Another port of the same machine is another origin.
    assert!(
        same_origin(&headers(&[
            ("host", "127.0.0.1:8788"),
            ("origin", "http://127.0.0.1:9999")
        ]))
        .is_err()
    );
}

#[test]
fn the_edit_limit_fits_the_longest_content_and_never_falls_under_the_form_limit() {
    assert_eq!(edit_form_bytes(10), SMALL_FORM_BYTES);
    assert!(edit_form_bytes(16_000) >= 16_000 * 9);
    assert!(
        edit_form_bytes(16_000) < 1_000_000,
        "a 1 MB field must stay over the limit"
    );
}

#[test]
fn host_names_drop_the_port() {
    assert_eq!(host_name("127.0.0.1:8788"), "127.0.0.1");
    assert_eq!(host_name("localhost"), "localhost");
    assert_eq!(host_name("[::1]:8788"), "::1");
}

#[test]
fn weeks_cover_every_week_between_the_first_and_the_last() {
    assert!(weekly_counts(&[]).is_empty());
    let weeks = weekly_counts(&[(0, 2), (3, 1)]);
    assert_eq!(
        weeks.iter().map(|w| w.count).collect::<Vec<_>>(),
        vec![2, 0, 0, 1]
    );
    assert_eq!(weeks[3].start_ms, WEEK_MS * 3);
    // Before the epoch too.
    assert_eq!(weekly_counts(&[(-1, 1)])[0].start_ms, -WEEK_MS);
}

#[test]
fn stored_text_is_escaped_in_pages_and_pictures() {
    let hostile = "<script>alert(1)</script>";
    let page = maud::html! { p { (hostile) } }.into_string();
    assert!(!page.contains("<script>"), "{page}");
    let picture = svg::strips(
        &[svg::Strip {
            arm: hostile.to_owned(),
            points: vec![(Some(0.5), true), (None, false)],
        }],
        Some(0.3),
        hostile,
    )
    .into_string();
    assert!(!picture.contains("<script>"), "{picture}");
    assert!(picture.contains("gate 0.3"));
}

#[test]
fn numbers_and_query_strings_are_short_and_encoded() {
    assert_eq!(fmt(0.5), "0.5");
    assert_eq!(fmt(1.0), "1");
    assert_eq!(fmt(-0.0001), "0");
    assert_eq!(encode("a b/c&d"), "a%20b%2Fc%26d");
    assert_eq!(query_string(&[("q", "x y"), ("empty", "")]), "?q=x%20y");
}
