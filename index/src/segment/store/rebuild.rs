//! The operator's rebuild: every segment replaced by one built from all the table's rows, in
//! its own file so the store's commit and merge paths read top-down beside it.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use super::super::SegmentSet;
use super::super::files::{FaultPoint, FileLock, lock};
use super::super::manifest::{SegmentEntry, SegmentOrigin, StoreHead};
use super::{CommitOutcome, SegmentStore, State};
use crate::error::{Error, Result};
use crate::writer::{GenerationWriter, Row};

impl SegmentStore {
    /// Replaces every segment with one built from `rows` (all the table's rows, newest first:
    /// created_at descending, id ascending), complete up to `head`. The operator's rebuild.
    pub fn rebuild<'a>(
        &self,
        head: StoreHead,
        rows: impl IntoIterator<Item = Row<'a>>,
    ) -> Result<CommitOutcome> {
        self.rebuild_streamed(head, |writer| {
            for row in rows {
                writer.push(&row)?;
            }
            Ok(())
        })
    }

    /// [`SegmentStore::rebuild`] for a caller that streams its rows (newest first) into the
    /// segment's writer, so a table larger than memory never sits in one buffer. An error from
    /// `fill` publishes nothing.
    pub fn rebuild_streamed<E: From<Error>>(
        &self,
        head: StoreHead,
        fill: impl FnOnce(&mut GenerationWriter) -> std::result::Result<(), E>,
    ) -> std::result::Result<CommitOutcome, E> {
        let path = self.pending_path();
        let mut writer = GenerationWriter::create(&path, self.meta(head))?;
        if let Err(e) = fill(&mut writer) {
            drop(writer);
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(self.publish_rebuild(head, writer, path)?)
    }

    fn publish_rebuild(
        &self,
        head: StoreHead,
        writer: GenerationWriter,
        path: PathBuf,
    ) -> Result<CommitOutcome> {
        let summary = writer.finish()?;
        self.faults.check(FaultPoint::SegmentWritten)?;
        let replaced;
        let outcome = {
            let mut state = lock(&self.state);
            let _flock = FileLock::take(&self.lock_file)?;
            let published = (|| {
                self.reload_if_moved(&mut state)?;
                let mut manifest = state.manifest.clone();
                let seq = manifest.next_segment;
                let segment = self.name_segment(&path, seq)?;
                let g = segment.generation();
                let outcome = CommitOutcome {
                    seq: Some(seq),
                    rows: g.len() as u64,
                    tombstones: 0,
                    bytes: summary.bytes,
                    manifest_version: manifest.version + 1,
                };
                let entry = self.entry(&segment, SegmentOrigin::Rebuild, summary.bytes);
                let set = SegmentSet::new(&self.embedder, vec![Arc::new(segment)])?;
                let old = std::mem::replace(&mut manifest.segments, vec![entry]);
                manifest.next_segment += 1;
                manifest.version += 1;
                manifest.head = head;
                self.write_manifest(&manifest)?;
                *state = State {
                    manifest,
                    set: Arc::new(set),
                };
                Ok((outcome, old))
            })();
            match published {
                Ok((outcome, old)) => {
                    replaced = old;
                    outcome
                }
                Err(e) => {
                    if !matches!(e, Error::Injected { .. }) {
                        let _ = fs::remove_file(&path);
                    }
                    return Err(e);
                }
            }
        };
        self.faults.check(FaultPoint::OldSegmentsKept)?;
        self.remove_files(replaced.iter().map(SegmentEntry::file_name));
        Ok(outcome)
    }
}
