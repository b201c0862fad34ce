//! A finding: one check's verdict (severity, reason, remedy, the figures behind it) and, after
//! `fix`, what its repair did. Severity words follow the brief (`ok`, `info`, `warning`,
//! `error`); `issues` carry CPersona's words (`info`, `warn`, `critical`).

use serde::Serialize;
use serde_json::{Map, Value};

/// How much a finding matters. Only `Warning` and `Error` degrade the store's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Nothing to report.
    Ok,
    /// Worth knowing; recall is not degraded (CPersona's `info`).
    Info,
    /// Recall is degraded or slower (CPersona's `warn`).
    Warning,
    /// The store itself is damaged (CPersona's `critical`).
    Error,
}

impl Severity {
    /// CPersona's word in `issues[].severity` and `severity_summary`.
    pub fn cpersona(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warn",
            Severity::Error => "critical",
        }
    }

    /// True when the finding degrades recall (status is then not `healthy`).
    pub fn degrades(self) -> bool {
        self >= Severity::Warning
    }
}

/// What one repair did.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Repair {
    /// The action, e.g. `fts_rebuild`, `queued_for_embedding`, `report_only`.
    pub action: String,
    /// Rows (or tables, for a rebuild) the repair wrote; 0 when it wrote nothing.
    pub rows: u64,
    /// True only when the write committed.
    pub landed: bool,
    /// What happened, in one line (why nothing was done, or where a bound cut).
    pub note: String,
}

impl Repair {
    /// A repair that did not run: the check is report-only, for `why`.
    pub fn report_only(why: impl Into<String>) -> Repair {
        Repair {
            action: "report_only".into(),
            rows: 0,
            landed: false,
            note: why.into(),
        }
    }
}

/// One check's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// The check's name (CPersona's where it has one).
    pub check: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// What was found, in one line with its figures.
    pub reason: String,
    /// What to do about it (empty when the finding is `ok`).
    pub remedy: String,
    /// Rows affected, when the check counts rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Rows `fix` would write now (CPersona's `repairable`); `None` for a report-only check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repairable: Option<u64>,
    /// True when no automatic repair is safe: a person must look.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_human_review: bool,
    /// The figures behind the verdict (per table, per model, …), flattened into the issue.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
    /// What `fix` did for this check, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<Repair>,
}

impl Finding {
    /// A finding of `check` with `severity` and `reason`, no remedy and no figures yet.
    pub fn new(check: &'static str, severity: Severity, reason: impl Into<String>) -> Finding {
        Finding {
            check,
            severity,
            reason: reason.into(),
            remedy: String::new(),
            count: None,
            repairable: None,
            needs_human_review: false,
            detail: Map::new(),
            fixed: None,
        }
    }

    /// `check` passed: `reason` says what was looked at.
    pub fn ok(check: &'static str, reason: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Ok, reason)
    }

    /// The same finding with `remedy`.
    pub fn remedy(mut self, remedy: impl Into<String>) -> Finding {
        self.remedy = remedy.into();
        self
    }

    /// The same finding counting `count` rows.
    pub fn count(mut self, count: u64) -> Finding {
        self.count = Some(count);
        self
    }

    /// The same finding with `repairable` rows.
    pub fn repairable(mut self, rows: u64) -> Finding {
        self.repairable = Some(rows);
        self
    }

    /// The same finding marked for a person.
    pub fn review(mut self) -> Finding {
        self.needs_human_review = true;
        self
    }

    /// The same finding with `key` = `value` among its figures.
    pub fn with(mut self, key: &str, value: impl Serialize) -> Finding {
        self.detail.insert(
            key.to_owned(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// The CPersona-shaped issue: `type` and `check`, CPersona's severity word, `hint` (the
    /// remedy), and the figures flattened beside them.
    pub fn issue(&self) -> Value {
        let mut issue = Map::new();
        issue.insert("type".into(), Value::from(self.check));
        issue.insert("check".into(), Value::from(self.check));
        issue.insert("severity".into(), Value::from(self.severity.cpersona()));
        issue.insert("reason".into(), Value::from(self.reason.clone()));
        issue.insert("hint".into(), Value::from(self.remedy.clone()));
        if let Some(count) = self.count {
            issue.insert("count".into(), Value::from(count));
        }
        if let Some(rows) = self.repairable {
            issue.insert("repairable".into(), Value::from(rows));
        }
        if self.needs_human_review {
            issue.insert("needs_human_review".into(), Value::from(true));
        }
        if let Some(fixed) = &self.fixed {
            issue.insert(
                "fixed".into(),
                serde_json::to_value(fixed).unwrap_or(Value::Null),
            );
        }
        for (key, value) in &self.detail {
            issue.entry(key.clone()).or_insert_with(|| value.clone());
        }
        Value::Object(issue)
    }
}
