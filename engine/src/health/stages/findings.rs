//! `get_session_findings`: `check_health`'s findings delivered in the SuperAuditor v1.1 shape
//! CPersona 2.6.14 serves (one detector, nothing detected twice). The standard asks that a
//! finding's `severity` be a static property of its `kind`; a check here grades each instance
//! (`null_embedding` is a warning or an error by share), so the instance's grade is part of the
//! kind: `<check>` for a warning, `<check>_critical` for an error, `<check>_info` for
//! information, each with one fixed severity. The instance's own word also rides along as
//! `health_severity`, and `check` names what `check_health(checks=[check])` re-runs. Caps are
//! honest: at most `per_kind_limit` findings per kind, every kind that had more named in
//! `capped_kinds`, and the counts describe what is returned.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::finding::{Finding, Severity};

/// The SuperAuditor version of the shape.
pub const SUPERAUDITOR_VERSION: &str = "1.1";

/// CPersona's default `per_kind_limit`.
pub const DEFAULT_PER_KIND_LIMIT: usize = 5;

/// The delivered findings.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SessionFindings {
    /// Each finding: the `check_health` issue, with `kind`, its static `severity` and the
    /// instance's `health_severity`.
    pub findings: Vec<Value>,
    /// Findings returned.
    pub total: usize,
    /// Returned findings per kind.
    pub counts_by_kind: BTreeMap<String, usize>,
    /// Returned findings per severity (`critical`, `warn`, `info`).
    pub counts_by_severity: BTreeMap<String, usize>,
    /// Kinds that had more than `per_kind_limit` findings.
    pub capped_kinds: Vec<String>,
    /// The cap per kind.
    pub per_kind_limit: usize,
    /// The same in one sentence, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The kind of a finding and the static severity of that kind.
pub fn kind_of(finding: &Finding) -> (String, &'static str) {
    match finding.severity {
        Severity::Error => (format!("{}_critical", finding.check), "critical"),
        Severity::Info => (format!("{}_info", finding.check), "info"),
        Severity::Warning | Severity::Ok => (finding.check.to_owned(), "warn"),
    }
}

/// Delivers the findings of a `check_health` run that are not `ok`, in registry order.
pub fn deliver(findings: &[Finding], per_kind_limit: usize, summary: bool) -> SessionFindings {
    let mut kept = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut capped = Vec::new();
    let mut counts_by_kind = BTreeMap::new();
    let mut counts_by_severity = BTreeMap::new();
    for finding in findings.iter().filter(|f| f.severity != Severity::Ok) {
        let (kind, severity) = kind_of(finding);
        let n = seen.entry(kind.clone()).or_default();
        *n += 1;
        if *n > per_kind_limit {
            if !capped.contains(&kind) {
                capped.push(kind);
            }
            continue;
        }
        let mut issue = finding.issue();
        if let Value::Object(map) = &mut issue {
            if let Some(word) = map.remove("severity") {
                map.insert("health_severity".into(), word);
            }
            map.insert("kind".into(), Value::from(kind.clone()));
            map.insert("severity".into(), Value::from(severity));
        }
        *counts_by_kind.entry(kind).or_default() += 1;
        *counts_by_severity.entry(severity.to_owned()).or_default() += 1;
        kept.push(issue);
    }
    let mut delivered = SessionFindings {
        total: kept.len(),
        findings: kept,
        counts_by_kind,
        counts_by_severity,
        capped_kinds: capped,
        per_kind_limit,
        summary: None,
    };
    if summary {
        delivered.summary = Some(render_summary(&delivered));
    }
    delivered
}

/// CPersona's prose restatement, rendered from the returned set so the two cannot disagree.
fn render_summary(delivered: &SessionFindings) -> String {
    if delivered.findings.is_empty() {
        return "Storage findings: none.".to_owned();
    }
    let by_severity: Vec<String> = ["critical", "warn", "info"]
        .iter()
        .filter_map(|s| {
            delivered
                .counts_by_severity
                .get(*s)
                .map(|n| format!("{s} {n}"))
        })
        .collect();
    let by_kind: Vec<String> = delivered
        .counts_by_kind
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    let mut text = format!(
        "Storage findings: {} returned ({}); kinds: {}.",
        delivered.total,
        by_severity.join(", "),
        by_kind.join(", ")
    );
    if !delivered.capped_kinds.is_empty() {
        text.push_str(&format!(
            " Capped at {} per kind: {} — more exist than were returned.",
            delivered.per_kind_limit,
            delivered.capped_kinds.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(check: &'static str, severity: Severity) -> Finding {
        Finding::new(check, severity, "why")
    }

    #[test]
    fn kinds_carry_a_static_severity_and_caps_are_named() {
        let findings = vec![
            finding("a", Severity::Ok),
            finding("a", Severity::Warning),
            finding("b", Severity::Error),
            finding("b", Severity::Error),
            finding("b", Severity::Error),
            finding("c", Severity::Info),
        ];
        let out = deliver(&findings, 2, true);
        let kinds: Vec<&str> = out
            .findings
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["a", "b_critical", "b_critical", "c_info"]);
        assert_eq!(out.findings[1]["severity"], "critical");
        assert_eq!(out.findings[1]["health_severity"], "critical");
        assert_eq!(out.findings[1]["check"], "b");
        assert_eq!(out.findings[3]["severity"], "info");
        assert_eq!(out.capped_kinds, ["b_critical"]);
        assert_eq!(out.total, 4);
        assert_eq!(out.counts_by_severity["critical"], 2);
        let summary = out.summary.unwrap();
        assert!(
            summary.contains("4 returned (critical 2, warn 1, info 1)"),
            "{summary}"
        );
        assert!(
            summary.contains("Capped at 2 per kind: b_critical"),
            "{summary}"
        );
        assert_eq!(
            deliver(&[finding("a", Severity::Ok)], 5, true)
                .summary
                .as_deref(),
            Some("Storage findings: none.")
        );
    }
}
