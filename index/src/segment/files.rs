//! The store's file-level pieces: the faults a test can arm at each step, the advisory
//! directory lock, and the manifest's atomic swap (write temp, fsync, rename, fsync the
//! directory). Nothing here knows the segment set.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::manifest::Manifest;
use crate::error::{Error, Result};
use crate::writer::sync_parent;

/// The manifest's file name.
pub(crate) const MANIFEST: &str = "MANIFEST";
/// The lock file's name.
pub(crate) const LOCK: &str = "LOCK";

pub use crate::error::FaultPoint;

/// The faults armed in a store: each fires once, at the first time its point is reached.
/// Production code passes [`Faults::none`].
#[derive(Clone, Debug, Default)]
pub struct Faults {
    armed: Arc<Mutex<Vec<FaultPoint>>>,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Arms `point` (fires once).
    pub fn arm(&self, point: FaultPoint) {
        lock(&self.armed).push(point);
    }

    pub(crate) fn check(&self, point: FaultPoint) -> Result<()> {
        let mut armed = lock(&self.armed);
        match armed.iter().position(|&p| p == point) {
            Some(i) => {
                armed.remove(i);
                Err(Error::Injected { point })
            }
            None => Ok(()),
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // State is replaced whole at the end of each operation, so a panic elsewhere never
    // leaves it half changed: the value inside a poisoned lock is still consistent.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The advisory lock on `LOCK`, released when dropped.
pub(crate) struct FileLock<'a>(&'a File);

impl<'a> FileLock<'a> {
    pub(crate) fn take(file: &'a File) -> Result<Self> {
        file.lock()?;
        Ok(Self(file))
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        // Closing the file would release it too; an unlock error leaves nothing to undo.
        let _ = self.0.unlock();
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes `manifest` as `dir/MANIFEST`: temporary file, fsync, rename, fsync the directory.
pub(crate) fn write_manifest_file(dir: &Path, manifest: &Manifest, faults: &Faults) -> Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let bytes = manifest.encode()?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{MANIFEST}.tmp-{}-{n}", std::process::id()));
    let target = dir.join(MANIFEST);
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        drop(file);
        faults.check(FaultPoint::ManifestWritten)?;
        fs::rename(&tmp, &target)?;
        Ok(())
    })();
    if let Err(e) = written {
        if !matches!(e, Error::Injected { .. }) {
            let _ = fs::remove_file(&tmp);
        }
        return Err(e);
    }
    faults.check(FaultPoint::ManifestRenamed)?;
    sync_parent(&target)
}
