//! The CORS origin matching: the claude.ai defaults, configured origins and ports.

use super::*;

#[test]
fn claude_origins_are_granted_by_default_and_others_are_not() {
    let policy = CorsPolicy::new(&[]);
    for origin in [
        "https://claude.ai",
        "https://www.claude.ai",
        "https://claude.ai:443",
        "HTTPS://Claude.AI",
    ] {
        assert!(policy.allows(origin), "{origin}");
    }
    for origin in [
        "http://claude.ai",
        "https://claude.ai:8443",
        "https://evil.claude.ai",
        "https://claude.ai.evil.example",
        "https://evil.example",
        "null",
        "",
        "https://claude.ai/path",
        "https://user@claude.ai",
    ] {
        assert!(!policy.allows(origin), "{origin}");
    }
}

#[test]
fn configured_origins_add_to_the_defaults() {
    let policy = CorsPolicy::new(&[
        "https://app.example.com:443".to_owned(),
        "http://localhost:*".to_owned(),
        "not an origin".to_owned(),
    ]);
    assert!(policy.allows("https://claude.ai"));
    assert!(policy.allows("https://app.example.com"));
    assert!(!policy.allows("https://app.example.com:8443"));
    assert!(policy.allows("http://localhost:5173"));
    assert!(policy.allows("http://localhost"));
    // A wildcard port is the configuration's to give, not the request's.
    assert!(!policy.allows("http://localhost:*"));
    assert!(!policy.allows("https://localhost:5173"));
}

#[test]
fn ipv6_literals_keep_their_colons() {
    let policy = CorsPolicy::new(&["http://[::1]:*".to_owned()]);
    assert!(policy.allows("http://[::1]:8080"));
    assert!(policy.allows("http://[::1]"));
    assert!(!policy.allows("http://[::2]:8080"));
}
