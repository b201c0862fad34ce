//! The segment store under failures: a failure injected at every step of a commit, a merge
//! and a rebuild leaves a directory that opens with the old manifest or the new one and answers
//! like a fresh generation of the matching rows; what it leaves behind is garbage that
//! `collect_garbage` removes, and writing goes on. Then real kills: a child process (this test
//! binary, re-run on this one test) commits and merges in a loop and is SIGKILLed at random
//! moments; every head it acknowledged is in the reopened store, which answers like a fresh
//! generation of the rows at the head it has.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use cpersona_index::Error;
use cpersona_index::segment::{FaultPoint, Faults, MergePolicy, SegmentStore, StoreHead};

use crate::segments::{Model, check_against_fresh, embedder};

const POINTS: [FaultPoint; 5] = [
    FaultPoint::SegmentWritten,
    FaultPoint::SegmentRenamed,
    FaultPoint::ManifestWritten,
    FaultPoint::ManifestRenamed,
    FaultPoint::OldSegmentsKept,
];

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("crash test io")
        .map(|e| {
            e.expect("crash test io")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// After garbage collection the directory holds the manifest, the lock and listed segments.
fn assert_only_listed(store: &SegmentStore) {
    let mut want: BTreeSet<String> = store
        .manifest()
        .segments
        .iter()
        .map(|s| s.file_name())
        .collect();
    want.insert("MANIFEST".into());
    want.insert("LOCK".into());
    assert_eq!(names(store.dir()), want);
}

/// A store with a few flushes and the model that wrote them.
fn seeded(dir: &Path, faults: Faults) -> (SegmentStore, Model) {
    let store = SegmentStore::open_with(dir, embedder(), faults).expect("crash test io");
    let mut model = Model::new(5);
    for _ in 0..4 {
        model.add(12);
        model.update(3);
        model.delete(2);
        model.flush(&store);
    }
    (store, model)
}

#[test]
fn an_injected_failure_at_any_step_leaves_the_old_or_the_new_manifest() {
    for operation in ["commit", "merge", "rebuild"] {
        for point in POINTS {
            if operation == "commit" && point == FaultPoint::OldSegmentsKept {
                // A commit replaces no file, so it has no such step.
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let faults = Faults::none();
            let (store, mut model) = seeded(dir.path(), faults.clone());
            let before = store.manifest();
            faults.arm(point);
            let err = match operation {
                "commit" => {
                    model.add(5);
                    model.delete(1);
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        model.flush(&store);
                    }));
                    assert!(result.is_err(), "the flush's commit fails at {point:?}");
                    None
                }
                "merge" => {
                    let plan = store
                        .plan_merge(&MergePolicy {
                            merge_factor: 2,
                            floor_rows: 1000,
                            ..MergePolicy::default()
                        })
                        .expect("a merge is due");
                    Some(store.merge(&plan).unwrap_err())
                }
                _ => {
                    let rows = model.rows();
                    Some(
                        store
                            .rebuild(
                                StoreHead {
                                    changelog_head: model.head(),
                                    schema_version: 2,
                                },
                                rows.iter().map(|r| r.as_row()),
                            )
                            .unwrap_err(),
                    )
                }
            };
            if let Some(err) = err {
                // OldSegmentsKept is reached by merges and rebuilds only after publishing.
                assert!(
                    matches!(err, Error::Injected { point: p } if p == point),
                    "{operation} {point:?}: {err:?}"
                );
            }
            drop(store);
            let reopened = SegmentStore::open(dir.path(), embedder()).unwrap();
            let after = reopened.manifest();
            let moved = after.version != before.version;
            let published_by_now = matches!(
                point,
                FaultPoint::ManifestRenamed | FaultPoint::OldSegmentsKept
            );
            assert_eq!(moved, published_by_now, "{operation} {point:?}");
            if operation == "commit" && !moved {
                // The failed batch never landed: the model forgets it (a caller retries it).
                let mut old = Model::new(5);
                for _ in 0..4 {
                    old.add(12);
                    old.update(3);
                    old.delete(2);
                    old.flush_discarding();
                }
                check_against_fresh(&reopened, &old, 1);
            } else {
                check_against_fresh(&reopened, &model, 1);
            }
            let removed = reopened.collect_garbage(Duration::ZERO).unwrap();
            // Only a commit whose manifest landed leaves nothing behind: every other stop
            // leaves a pending or unlisted segment, a temporary manifest, or replaced files.
            let clean = operation == "commit" && point == FaultPoint::ManifestRenamed;
            assert_eq!(
                removed.is_empty(),
                clean,
                "{operation} {point:?}: {removed:?}"
            );
            assert_only_listed(&reopened);
            // Writing goes on over whatever the failure left.
            if operation == "commit" && !moved {
                model = Model::new(5);
                for _ in 0..4 {
                    model.add(12);
                    model.update(3);
                    model.delete(2);
                    model.flush_discarding();
                }
            }
            model.add(4);
            model.flush(&reopened);
            check_against_fresh(&reopened, &model, 2);
        }
    }
}

#[test]
fn a_commit_based_on_an_old_head_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, model) = seeded(dir.path(), Faults::none());
    let before = names(dir.path());
    let err = store
        .commit(cpersona_index::segment::WriteBatch {
            based_on: Some(model.head() - 1),
            head: StoreHead {
                changelog_head: model.head() + 1,
                schema_version: 2,
            },
            rows: Vec::new(),
            deletes: vec![1],
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::StaleCommit { current, .. } if current == model.head()),
        "{err:?}"
    );
    assert_eq!(names(dir.path()), before, "the refused segment is removed");
    check_against_fresh(&store, &model, 4);
}

#[test]
fn a_second_store_on_the_same_directory_sees_the_first_ones_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (first, mut model) = seeded(dir.path(), Faults::none());
    let second = SegmentStore::open(dir.path(), embedder()).unwrap();
    model.add(6);
    model.flush(&first);
    assert!(second.refresh().unwrap(), "the manifest moved");
    check_against_fresh(&second, &model, 6);
    // A merge in the second one is seen by the first one's next commit.
    let plan = second
        .plan_merge(&MergePolicy {
            merge_factor: 2,
            floor_rows: 1000,
            ..MergePolicy::default()
        })
        .unwrap();
    second.merge(&plan).unwrap();
    model.add(2);
    model.flush(&first);
    check_against_fresh(&first, &model, 7);
    second.refresh().unwrap();
    assert_eq!(first.manifest(), second.manifest());
}

/// The environment variable that turns this test into the child writer.
const CHILD_DIR: &str = "CPERSONA_INDEX_CRASH_CHILD_DIR";

/// One step of the child's deterministic write sequence.
fn child_step(model: &mut Model, step: u64) {
    model.add(3);
    model.update(1);
    if step.is_multiple_of(3) {
        model.delete(1);
    }
}

#[test]
fn kill_9_at_random_moments_loses_no_acknowledged_commit() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        run_child(Path::new(&dir));
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let delays = [40u64, 120, 250, 400, 650];
    let mut furthest = 0;
    for (round, delay) in delays.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "segment_crash::kill_9_at_random_moments_loses_no_acknowledged_commit",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*delay));
        child.kill().unwrap();
        child.wait().unwrap();
        let acked = std::fs::read_to_string(dir.path().join("acked"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let store = SegmentStore::open(dir.path().join("index"), embedder()).unwrap();
        let head = store.head().changelog_head;
        assert!(
            head >= acked,
            "round {round}: head {head} < acknowledged {acked}"
        );
        furthest = furthest.max(head);
        let mut model = Model::new(9);
        for step in 0..head {
            child_step(&mut model, step);
            model.flush_discarding();
        }
        check_against_fresh(&store, &model, round as u64);
        store.collect_garbage(Duration::ZERO).unwrap();
        assert_only_listed(&store);
    }
    assert!(
        furthest >= 5,
        "the child barely wrote (head {furthest}): did it start?"
    );
}

/// The child: commits forever (bounded), merging now and then, and appends each head after
/// its commit returned to `acked` (fsynced), until the parent kills it.
fn run_child(dir: &Path) {
    use std::io::Write;
    let store = SegmentStore::open(dir.join("index"), embedder()).expect("crash test io");
    let mut acked = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("acked"))
        .expect("crash test io");
    let policy = MergePolicy {
        merge_factor: 3,
        floor_rows: 8,
        ..MergePolicy::default()
    };
    let mut model = Model::new(9);
    let started = Instant::now();
    for step in 0..20_000u64 {
        if started.elapsed() > Duration::from_secs(20) {
            break;
        }
        child_step(&mut model, step);
        model.flush(&store);
        writeln!(acked, "{}", model.head()).expect("crash test io");
        acked.sync_all().expect("crash test io");
        if let Some(plan) = store.plan_merge(&policy) {
            store.merge(&plan).expect("crash test io");
        }
    }
}

#[test]
fn a_merge_published_after_a_commit_it_did_not_see_keeps_that_commits_updates() {
    let dir = tempfile::tempdir().unwrap();
    let (first, mut model) = seeded(dir.path(), Faults::none());
    // The first store's snapshot predates what the second one commits next.
    let second = SegmentStore::open(dir.path(), embedder()).unwrap();
    model.update(8);
    model.delete(3);
    model.flush(&second);
    let seqs: Vec<u64> = first.manifest().segments.iter().map(|s| s.seq).collect();
    let plan = cpersona_index::segment::MergePlan {
        seqs,
        reason: cpersona_index::segment::MergeReason::Level(0),
        live_rows: 0,
    };
    let outcome = first.merge(&plan).unwrap();
    assert!(outcome.seq.is_some());
    check_against_fresh(&first, &model, 8);
    second.refresh().unwrap();
    check_against_fresh(&second, &model, 9);
}
