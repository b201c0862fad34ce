//! A long operation's link to whoever asked for it: progress reports as it goes, and a
//! cancellation flag it reads only at points where stopping leaves nothing half-written
//! (before the first write, or inside the one transaction that would be rolled back). The
//! server turns MCP's `progressToken` and `notifications/cancelled` into this; the engine
//! knows nothing of either.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// One progress report: `done` of `total` units (rows, checks), and what is happening.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Units done so far; never decreases within one operation.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// What is happening, for a person.
    pub message: String,
}

/// Where a long operation reports and checks for cancellation.
#[derive(Clone, Copy, Default)]
pub struct Progress<'a> {
    report: Option<&'a (dyn Fn(Step) + Sync)>,
    cancelled: Option<&'a AtomicBool>,
}

impl<'a> Progress<'a> {
    /// Nobody listens and nothing cancels.
    pub fn none() -> Progress<'static> {
        Progress::default()
    }

    /// Reports to `report`; stops when `cancelled` becomes true.
    pub fn new(
        report: Option<&'a (dyn Fn(Step) + Sync)>,
        cancelled: Option<&'a AtomicBool>,
    ) -> Progress<'a> {
        Progress { report, cancelled }
    }

    /// Reports `done` of `total`.
    pub fn report(&self, done: u64, total: Option<u64>, message: impl Into<String>) {
        if let Some(report) = self.report {
            report(Step {
                done,
                total,
                message: message.into(),
            });
        }
    }

    /// `Err(Cancelled)` once the caller has cancelled; call it only where returning the
    /// error leaves nothing half-written.
    pub fn check(&self, during: &'static str) -> Result<()> {
        match self.cancelled {
            Some(flag) if flag.load(Ordering::Acquire) => Err(Error::Cancelled { during }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn reports_reach_the_listener_and_a_cancel_is_seen() {
        let seen = Mutex::new(Vec::new());
        let report = |step: Step| seen.lock().unwrap().push(step.done);
        let flag = AtomicBool::new(false);
        let progress = Progress::new(Some(&report), Some(&flag));
        progress.report(1, Some(3), "one");
        assert!(progress.check("work").is_ok());
        flag.store(true, Ordering::Release);
        let err = progress.check("work").unwrap_err();
        assert!(matches!(err, Error::Cancelled { during: "work" }), "{err}");
        assert!(err.is_user_error());
        assert_eq!(*seen.lock().unwrap(), vec![1]);
        assert!(Progress::none().check("work").is_ok());
    }
}
