//! `SegmentStore`: the owner of one table's segment directory. It holds the current manifest
//! and the [`SegmentSet`] it lists, and is the only code that changes the directory.
//!
//! # Files
//! `MANIFEST` (the current manifest), `LOCK` (an advisory file lock held while the manifest is
//! read, changed and swapped, so several processes can share a directory), `seg-N.gen` (the
//! segments), and dot-names: `.pending-*` (a segment written, not yet named), `.MANIFEST.tmp-*`,
//! and the writer's spill files. Only a file the manifest lists is ever read.
//!
//! # Crash safety
//! Every file is written under a temporary name, fsynced, renamed, and the directory fsynced;
//! the manifest is swapped last. A kill at any point leaves the old manifest or the new one,
//! each listing only files that were fsynced before it; what a kill leaves behind is an
//! unlisted `seg-N.gen` or a dot-name, never read, removed by [`SegmentStore::collect_garbage`].
//! A commit that fails after its manifest was renamed (the directory fsync) returns the error
//! although the manifest moved; the next operation notices the new version and reloads it, and
//! a caller retrying from the manifest's head never writes a change twice.
//!
//! # Concurrency
//! One in-process mutex orders commits, merge publication and garbage collection; the file
//! lock orders them across processes, and each re-reads the manifest first (another process
//! may have swapped it). A merge writes its segment without either lock (it can take seconds)
//! and takes them only to publish; one merge runs at a time per store.

use std::fs::{self, File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::files::{FileLock, LOCK, MANIFEST, lock, now_ms, write_manifest_file};

use super::files::{FaultPoint, Faults};
use super::manifest::{Manifest, SegmentEntry, SegmentOrigin, StoreHead};
use super::merge::{MergeOutcome, carried_tombstones, write_run};
use super::policy::{MergePlan, MergePolicy, SegmentStats};
use super::{Segment, SegmentSet};
use crate::error::{Error, Result};
use crate::generation::{EmbedderIdentity, GenerationMeta, SourceFingerprint};
use crate::writer::{GenerationWriter, Row, sync_parent};

mod rebuild;

/// A write batch: rows to put (insert or replace, any order, unique ids) and ids to delete,
/// and the change-log head the store is complete up to once it lands.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch<'a> {
    /// When set, the commit is refused with [`Error::StaleCommit`] unless the manifest's head
    /// is this one (another writer got there first).
    pub based_on: Option<u64>,
    /// The head after this batch.
    pub head: StoreHead,
    /// Rows to put: each shadows every older copy of its id.
    pub rows: Vec<Row<'a>>,
    /// Ids to delete: tombstones for every older copy (an id also in `rows` keeps that row).
    pub deletes: Vec<i64>,
}

/// What a commit did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The new segment's sequence number; `None` when the batch held nothing but a head.
    pub seq: Option<u64>,
    /// Rows written.
    pub rows: u64,
    /// Tombstones written.
    pub tombstones: u64,
    /// Bytes of the new segment file.
    pub bytes: u64,
    /// The manifest version published.
    pub manifest_version: u64,
}

#[derive(Debug)]
struct State {
    manifest: Manifest,
    set: Arc<SegmentSet>,
}

/// The owner of one table's segment directory (see the module doc).
#[derive(Debug)]
pub struct SegmentStore {
    dir: PathBuf,
    embedder: EmbedderIdentity,
    state: Mutex<State>,
    merging: Mutex<()>,
    lock_file: File,
    faults: Faults,
}

impl SegmentStore {
    /// Opens (creating when missing) the segment directory `dir` for `embedder`'s vectors; a
    /// directory without a manifest gets an empty one. A manifest of another embedder is
    /// refused with [`Error::SegmentMismatch`] (see [`SegmentStore::reset`]).
    pub fn open(dir: impl AsRef<Path>, embedder: EmbedderIdentity) -> Result<Self> {
        Self::open_with(dir, embedder, Faults::none())
    }

    /// [`SegmentStore::open`] with faults armed (tests).
    pub fn open_with(
        dir: impl AsRef<Path>,
        embedder: EmbedderIdentity,
        faults: Faults,
    ) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir)?;
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK))?;
        let empty = Arc::new(SegmentSet::empty(&embedder)?);
        let store = Self {
            state: Mutex::new(State {
                manifest: Manifest::empty(embedder.clone()),
                set: empty,
            }),
            dir,
            embedder,
            merging: Mutex::new(()),
            lock_file,
            faults,
        };
        {
            let mut state = lock(&store.state);
            let _flock = FileLock::take(&store.lock_file)?;
            if !store.manifest_path().exists() {
                store.write_manifest(&state.manifest)?;
            }
            let manifest = store.read_manifest()?;
            if manifest.embedder != store.embedder {
                return Err(Error::SegmentMismatch {
                    segment: 0,
                    reason: "the manifest was written for another embedder",
                });
            }
            let set = store.load(&manifest, &state.set)?;
            *state = State {
                manifest,
                set: Arc::new(set),
            };
        }
        Ok(store)
    }

    /// Starts `dir` over for `embedder`: an empty manifest replaces whatever was there (its
    /// segment files become garbage), then opens it. For a manifest of another embedder or
    /// one that no longer opens.
    pub fn reset(dir: impl AsRef<Path>, embedder: EmbedderIdentity) -> Result<Self> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir)?;
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK))?;
        {
            let _flock = FileLock::take(&lock_file)?;
            let mut manifest = Manifest::empty(embedder.clone());
            if let Ok(bytes) = fs::read(dir.join(MANIFEST))
                && let Ok(old) = Manifest::decode(&bytes, &dir.join(MANIFEST))
            {
                // Keep numbers moving forward so no file name is ever reused for new bytes.
                manifest.version = old.version + 1;
                manifest.next_segment = old.next_segment;
            }
            write_manifest_file(dir, &manifest, &Faults::none())?;
        }
        Self::open(dir, embedder)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The current set; a reader keeps the segments it holds mapped for as long as it keeps
    /// the snapshot, whatever merges do meanwhile.
    pub fn snapshot(&self) -> Arc<SegmentSet> {
        lock(&self.state).set.clone()
    }

    /// The current manifest.
    pub fn manifest(&self) -> Manifest {
        lock(&self.state).manifest.clone()
    }

    /// The current set and the head it is complete up to, read together (a commit between two
    /// separate reads would pair a set with a head it does not hold).
    pub fn snapshot_with_head(&self) -> (Arc<SegmentSet>, StoreHead) {
        let state = lock(&self.state);
        (state.set.clone(), state.manifest.head)
    }

    /// What the segments are complete up to.
    pub fn head(&self) -> StoreHead {
        lock(&self.state).manifest.head
    }

    /// Re-reads the manifest; reloads and returns true when another process swapped it.
    pub fn refresh(&self) -> Result<bool> {
        let mut state = lock(&self.state);
        let _flock = FileLock::take(&self.lock_file)?;
        self.reload_if_moved(&mut state)
    }

    /// Per segment, what the merge policy reads.
    pub fn stats(&self) -> Vec<SegmentStats> {
        let set = self.snapshot();
        set.segments()
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentStats {
                seq: s.seq(),
                rows: s.generation().len() as u64,
                live_rows: set.live_rows_of(i) as u64,
                tombstones: s.generation().tombstones().len() as u64,
            })
            .collect()
    }

    /// The merge `policy` would run next, if any.
    pub fn plan_merge(&self, policy: &MergePolicy) -> Option<MergePlan> {
        policy.plan(&self.stats())
    }

    /// Lands a write batch: its rows and deletes as one new segment (nothing older is
    /// rewritten), then a manifest listing it with the batch's head. A batch without rows or
    /// deletes only moves the head.
    pub fn commit(&self, mut batch: WriteBatch<'_>) -> Result<CommitOutcome> {
        let mut rows = std::mem::take(&mut batch.rows);
        rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        let pending = if rows.is_empty() && batch.deletes.is_empty() {
            None
        } else {
            let path = self.pending_path();
            let mut writer = GenerationWriter::create(&path, self.meta(batch.head))?;
            writer.set_tombstones(batch.deletes.iter().copied())?;
            for row in &rows {
                writer.push(row)?;
            }
            let summary = writer.finish()?;
            self.faults.check(FaultPoint::SegmentWritten)?;
            Some((path, summary.bytes))
        };
        let mut state = lock(&self.state);
        let _flock = FileLock::take(&self.lock_file)?;
        let result = self.publish_commit(&mut state, &batch, pending.as_ref());
        if let (Err(e), Some((path, _))) = (&result, &pending)
            && !matches!(e, Error::Injected { .. })
        {
            let _ = fs::remove_file(path);
        }
        result
    }

    fn publish_commit(
        &self,
        state: &mut State,
        batch: &WriteBatch<'_>,
        pending: Option<&(PathBuf, u64)>,
    ) -> Result<CommitOutcome> {
        self.reload_if_moved(state)?;
        if let Some(based_on) = batch.based_on
            && state.manifest.head.changelog_head != based_on
        {
            return Err(Error::StaleCommit {
                based_on,
                current: state.manifest.head.changelog_head,
            });
        }
        let mut manifest = state.manifest.clone();
        let mut set = state.set.clone();
        let mut outcome = CommitOutcome::default();
        if let Some((path, bytes)) = pending {
            let seq = manifest.next_segment;
            let segment = self.name_segment(path, seq)?;
            let g = segment.generation();
            outcome = CommitOutcome {
                seq: Some(seq),
                rows: g.len() as u64,
                tombstones: g.tombstones().len() as u64,
                bytes: *bytes,
                manifest_version: 0,
            };
            manifest
                .segments
                .push(self.entry(&segment, SegmentOrigin::Flush, *bytes));
            manifest.next_segment += 1;
            set = Arc::new(set.with_newest(Arc::new(segment))?);
        }
        manifest.version += 1;
        manifest.head = batch.head;
        self.write_manifest(&manifest)?;
        outcome.manifest_version = manifest.version;
        *state = State { manifest, set };
        Ok(outcome)
    }

    /// Runs `plan` (from [`SegmentStore::plan_merge`]): writes the merged segment without
    /// blocking commits, then publishes it in place of the run and removes the run's files.
    /// Refused with [`Error::StalePlan`] when the run is no longer adjacent in the manifest.
    pub fn merge(&self, plan: &MergePlan) -> Result<MergeOutcome> {
        let _one = lock(&self.merging);
        let set = self.snapshot();
        let run = locate(&set, &plan.seqs)?;
        let live: usize = run.clone().map(|i| set.live_rows_of(i)).sum();
        let keeps_something = live > 0 || !carried_tombstones(&set, run.clone()).0.is_empty();
        let path = self.pending_path();
        let mut outcome = if keeps_something {
            let (_, outcome) = write_run(&set, run.clone(), &path)?;
            self.faults.check(FaultPoint::SegmentWritten)?;
            outcome
        } else {
            let dropped_rows: usize = run
                .clone()
                .map(|i| set.segments()[i].generation().len())
                .sum();
            let dropped_tombstones: usize = run
                .clone()
                .map(|i| set.segments()[i].generation().tombstones().len())
                .sum();
            MergeOutcome {
                replaced: plan.seqs.clone(),
                dropped_rows: dropped_rows as u64,
                dropped_tombstones: dropped_tombstones as u64,
                ..MergeOutcome::default()
            }
        };
        {
            let mut state = lock(&self.state);
            let _flock = FileLock::take(&self.lock_file)?;
            let published = self.publish_merge(&mut state, plan, keeps_something, &path, &outcome);
            match published {
                Ok(seq) => outcome.seq = seq,
                Err(e) => {
                    if keeps_something && !matches!(e, Error::Injected { .. }) {
                        let _ = fs::remove_file(&path);
                    }
                    return Err(e);
                }
            }
        }
        self.faults.check(FaultPoint::OldSegmentsKept)?;
        self.remove_files(plan.seqs.iter().map(|&s| SegmentEntry::file_name_of(s)));
        Ok(outcome)
    }

    fn publish_merge(
        &self,
        state: &mut State,
        plan: &MergePlan,
        with_file: bool,
        path: &Path,
        outcome: &MergeOutcome,
    ) -> Result<Option<u64>> {
        self.reload_if_moved(state)?;
        let run = locate(&state.set, &plan.seqs)?;
        let mut manifest = state.manifest.clone();
        let (segment, entry, seq) = if with_file {
            let seq = manifest.next_segment;
            manifest.next_segment += 1;
            let segment = Arc::new(self.name_segment(path, seq)?);
            let entry = self.entry(&segment, SegmentOrigin::Merge, outcome.bytes);
            (Some(segment), Some(entry), Some(seq))
        } else {
            (None, None, None)
        };
        let set = state.set.with_merged(run.clone(), segment)?;
        manifest.segments.splice(run, entry);
        manifest.version += 1;
        manifest.last_merge_ms = now_ms();
        self.write_manifest(&manifest)?;
        *state = State {
            manifest,
            set: Arc::new(set),
        };
        Ok(seq)
    }

    /// Removes what no manifest lists: `seg-N.gen` files the current manifest does not name,
    /// and dot-named leftovers (pending segments, temporary manifests, spill files) at least
    /// `min_age` old (younger ones may belong to a write in flight in another process; within
    /// this one, writes and this call are ordered). Other names are left alone. Returns what
    /// it removed.
    pub fn collect_garbage(&self, min_age: Duration) -> Result<Vec<PathBuf>> {
        let mut state = lock(&self.state);
        let _flock = FileLock::take(&self.lock_file)?;
        self.reload_if_moved(&mut state)?;
        let listed: Vec<String> = state
            .manifest
            .segments
            .iter()
            .map(SegmentEntry::file_name)
            .collect();
        let now = SystemTime::now();
        let mut removed = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let orphan_segment =
                name.starts_with("seg-") && name.ends_with(".gen") && !listed.contains(&name);
            let old_leftover = name.starts_with('.')
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|age| age >= min_age);
            if orphan_segment || old_leftover {
                fs::remove_file(entry.path())?;
                removed.push(entry.path());
            }
        }
        removed.sort();
        Ok(removed)
    }

    fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST)
    }

    fn pending_path(&self) -> PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.dir
            .join(format!(".pending-{}-{n}.gen", std::process::id()))
    }

    fn meta(&self, head: StoreHead) -> GenerationMeta {
        GenerationMeta {
            generation: head.changelog_head,
            source: SourceFingerprint {
                changelog_head: head.changelog_head,
                schema_version: head.schema_version,
            },
            embedder: self.embedder.clone(),
        }
    }

    fn entry(&self, segment: &Segment, origin: SegmentOrigin, bytes: u64) -> SegmentEntry {
        let g = segment.generation();
        SegmentEntry {
            seq: segment.seq(),
            origin,
            rows: g.len() as u64,
            tombstones: g.tombstones().len() as u64,
            bytes,
            written_ms: now_ms(),
        }
    }

    /// Renames a pending segment to its final name and opens it (under the locks).
    fn name_segment(&self, pending: &Path, seq: u64) -> Result<Segment> {
        let target = self.dir.join(SegmentEntry::file_name_of(seq));
        fs::rename(pending, &target)?;
        self.faults.check(FaultPoint::SegmentRenamed)?;
        sync_parent(&target)?;
        Segment::open(seq, &target)
    }

    fn read_manifest(&self) -> Result<Manifest> {
        let path = self.manifest_path();
        Manifest::decode(&fs::read(&path)?, &path)
    }

    fn write_manifest(&self, manifest: &Manifest) -> Result<()> {
        write_manifest_file(&self.dir, manifest, &self.faults)
    }

    /// Reloads `state` from disk when the manifest's version differs from the one held.
    fn reload_if_moved(&self, state: &mut State) -> Result<bool> {
        let manifest = self.read_manifest()?;
        if manifest.version == state.manifest.version {
            return Ok(false);
        }
        if manifest.embedder != self.embedder {
            return Err(Error::SegmentMismatch {
                segment: 0,
                reason: "the manifest was written for another embedder",
            });
        }
        let set = self.load(&manifest, &state.set)?;
        *state = State {
            manifest,
            set: Arc::new(set),
        };
        Ok(true)
    }

    /// Opens the segments `manifest` lists (reusing those `held` already has) and checks each
    /// against its entry.
    fn load(&self, manifest: &Manifest, held: &SegmentSet) -> Result<SegmentSet> {
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for entry in &manifest.segments {
            let segment = match held.segments().iter().find(|s| s.seq() == entry.seq) {
                Some(s) => s.clone(),
                None => Arc::new(Segment::open(entry.seq, self.dir.join(entry.file_name()))?),
            };
            let g = segment.generation();
            if g.len() as u64 != entry.rows || g.tombstones().len() as u64 != entry.tombstones {
                return Err(Error::SegmentMismatch {
                    segment: entry.seq,
                    reason: "the file's rows or tombstones differ from its manifest entry",
                });
            }
            segments.push(segment);
        }
        SegmentSet::new(&self.embedder, segments)
    }

    /// Best effort: a file that stays is garbage for [`SegmentStore::collect_garbage`].
    fn remove_files(&self, names: impl Iterator<Item = String>) {
        for name in names {
            let _ = fs::remove_file(self.dir.join(name));
        }
    }
}

/// Where the segments `seqs` sit in `set`: an adjacent run in that order, or a stale plan.
fn locate(set: &SegmentSet, seqs: &[u64]) -> Result<Range<usize>> {
    let first = seqs.first().copied().unwrap_or(0);
    let stale = |segment| Error::StalePlan { segment };
    let start = set
        .segments()
        .iter()
        .position(|s| s.seq() == first)
        .ok_or(stale(first))?;
    for (offset, &seq) in seqs.iter().enumerate() {
        match set.segments().get(start + offset) {
            Some(s) if s.seq() == seq => {}
            _ => return Err(stale(seq)),
        }
    }
    Ok(start..start + seqs.len())
}
