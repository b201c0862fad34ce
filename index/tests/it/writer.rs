//! The writer: byte determinism, input checks, temporary files, and the atomic swap under a
//! reader that keeps the old generation mapped.

use cpersona_index::{Error, Generation, GenerationWriter, RowFilter, ScanConfig, SearchMode};

use crate::util::{build_bytes, meta, random_rows, write_file};

#[test]
fn same_rows_give_the_same_bytes() {
    let rows = random_rows(3, 400, 50);
    let a = build_bytes(&rows, 50);
    let b = build_bytes(&rows, 50);
    assert_eq!(a, b);
    let mut other = rows.clone();
    other[17].vector[3] += 0.25;
    assert_ne!(
        build_bytes(&other, 50),
        a,
        "a changed vector changes the bytes"
    );
}

#[test]
fn rows_out_of_order_or_duplicated_are_refused_and_leave_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gen.bin");
    let rows = random_rows(9, 20, 8);
    let mut swapped = rows.clone();
    swapped.swap(2, 12);
    let err =
        GenerationWriter::write(&path, meta(8), swapped.iter().map(|r| r.as_row())).unwrap_err();
    assert!(matches!(err, Error::RowOrder { .. }), "{err:?}");
    let mut dup = rows.clone();
    dup[5] = dup[4].clone();
    let err = GenerationWriter::write(&path, meta(8), dup.iter().map(|r| r.as_row())).unwrap_err();
    assert!(
        matches!(err, Error::RowOrder { position: 5, .. }),
        "{err:?}"
    );
    let mut short = rows.clone();
    short[3].vector.pop();
    let err =
        GenerationWriter::write(&path, meta(8), short.iter().map(|r| r.as_row())).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Dim {
                expected: 8,
                found: 7
            }
        ),
        "{err:?}"
    );
    let mut nan = rows;
    nan[6].vector[0] = f32::INFINITY;
    let err = GenerationWriter::write(&path, meta(8), nan.iter().map(|r| r.as_row())).unwrap_err();
    assert!(matches!(err, Error::NonFinite { row: 6 }), "{err:?}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "spill and temporary files are removed: {left:?}"
    );
}

#[test]
fn finish_leaves_only_the_generation() {
    let dir = tempfile::tempdir().unwrap();
    let rows = random_rows(4, 50, 16);
    write_file(dir.path(), "gen.bin", &rows, 16);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["gen.bin".to_string()]);
}

#[test]
fn a_mapped_generation_keeps_working_after_the_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let dim = 32;
    let old_rows = random_rows(5, 800, dim);
    let path = write_file(dir.path(), "gen.bin", &old_rows, dim);
    let old = Generation::open(&path).unwrap();
    let query = old.query(&random_rows(6, 1, dim)[0].vector).unwrap();
    let config = ScanConfig::new(10).with_mode(SearchMode::Exact);
    let before = old.search(&query, &RowFilter::default(), &config).unwrap();

    let new_rows = random_rows(7, 300, dim);
    write_file(dir.path(), "gen.bin", &new_rows, dim);
    let new = Generation::open(&path).unwrap();
    assert_eq!(new.len(), 300);

    let after = old.search(&query, &RowFilter::default(), &config).unwrap();
    assert_eq!(after, before, "the old map still sees the old rows");
    assert_eq!(old.len(), 800);
    assert_eq!(old.ids()[0], old_rows[0].id);
}

#[test]
fn an_empty_generation_opens_and_searches() {
    let bytes = build_bytes(&[], 12);
    let g = Generation::from_bytes(&bytes).unwrap();
    assert!(g.is_empty());
    let res = g
        .search(
            &g.query(&[0.5; 12]).unwrap(),
            &RowFilter::default(),
            &ScanConfig::new(5),
        )
        .unwrap();
    assert!(res.hits.is_empty() && res.admitted == 0 && !res.bounds.any());
}
