//! The checked-in generations must keep opening with the same content: `data/gen_v1.bin`
//! (version 1, written by the first format, no longer by the writer) and `data/gen_v2.bin`
//! (version 2), which today's writer must still produce byte for byte. A format change bumps
//! the version and adds a new fixture; `CPERSONA_BLESS_GOLDEN=1 cargo test --workspace --test
//! it golden` rewrites the newest file from `fixture_rows`.

use std::path::PathBuf;

use cpersona_index::{Generation, RowFilter, ScanConfig, ScopeField, SearchMode};

use crate::util::{TestRow, build_bytes};

const DIM: usize = 8;

fn golden_path(version: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/it/data/gen_v{version}.bin"))
}

/// The rows of the golden file: five rows, a tie in created_at, every label kind.
fn fixture_rows() -> Vec<TestRow> {
    let row = |id: i64, created_at: i64, labels: [&str; 4], vector: [f32; DIM]| {
        let mut vector = vector.to_vec();
        crate::util::normalise(&mut vector);
        TestRow {
            id,
            created_at,
            labels: labels.map(String::from),
            vector,
        }
    };
    vec![
        row(
            42,
            1_700_000_300_000,
            ["alice", "p1", "general", "chat"],
            [1.0, 0.5, -0.25, 0.0, 0.1, -0.9, 0.3, 0.2],
        ),
        row(
            7,
            1_700_000_200_000,
            ["alice", "", "", ""],
            [-1.0, 0.5, 0.25, 0.7, 0.0, 0.0, 0.3, -0.2],
        ),
        row(
            9,
            1_700_000_200_000,
            ["bob", "p2", "dev", "import"],
            [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1],
        ),
        row(
            3,
            1_600_000_000_000,
            ["bob", "p1", "", "tool"],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
        ),
        row(
            1,
            1_500_000_000_000,
            ["alice", "", "general", ""],
            [0.3, -0.3, 0.3, -0.3, 0.3, -0.3, 0.3, -0.3],
        ),
    ]
}

/// What both fixtures hold: the rows of `fixture_rows`, their labels, and a search.
fn check_content(g: &Generation) {
    assert_eq!(g.ids(), &[42, 7, 9, 3, 1]);
    assert_eq!(g.created_at()[1], 1_700_000_200_000);
    assert_eq!(
        g.dictionary(ScopeField::Agent)
            .iter()
            .map(|s| &**s)
            .collect::<Vec<_>>(),
        ["", "alice", "bob"]
    );
    assert_eq!(
        g.name(ScopeField::Source, g.scope_codes(ScopeField::Source)[2]),
        Some("import")
    );
    assert_eq!(g.embedder().model_id, "test/model-v1");
    assert_eq!(g.labels(0), ["alice", "p1", "general", "chat"]);
    // The id order: version 2 reads it from the file, version 1 computes it.
    assert_eq!(g.id_order(), &[4, 3, 1, 2, 0]);
    assert_eq!(g.position_of(9), Some(2));
    assert_eq!(g.position_of(8), None);
    assert!(g.tombstones().is_empty());
    let q = g.query(&fixture_rows()[3].vector).expect("query");
    let res = g
        .search(
            &q,
            &RowFilter::default(),
            &ScanConfig::new(1).with_mode(SearchMode::Exact),
        )
        .expect("search");
    assert_eq!(res.hits[0].id, 3);
    assert!((res.hits[0].score - 1.0).abs() < 1e-3);
}

#[test]
fn golden_v1_keeps_opening_with_the_same_content() {
    let g = Generation::open(golden_path(1)).expect("the v1 golden file opens");
    assert_eq!(g.format_version(), 1);
    check_content(&g);
    // The rows themselves are those the current writer produces.
    let fresh = Generation::from_bytes(build_bytes(&fixture_rows(), DIM)).unwrap();
    assert_eq!(g.codes(), fresh.codes());
    assert_eq!(g.signs(), fresh.signs());
    assert_eq!(g.scales(), fresh.scales());
    for field in ScopeField::ALL {
        assert_eq!(g.scope_codes(field), fresh.scope_codes(field));
    }
}

#[test]
fn golden_v2_keeps_opening_and_the_writer_still_produces_it() {
    let fresh = build_bytes(&fixture_rows(), DIM);
    if std::env::var_os("CPERSONA_BLESS_GOLDEN").is_some() {
        std::fs::write(golden_path(2), &fresh).unwrap();
    }
    let g = Generation::open(golden_path(2)).expect("the v2 golden file opens");
    assert_eq!(g.format_version(), 2);
    check_content(&g);
    let on_disk = std::fs::read(golden_path(2)).unwrap();
    assert_eq!(
        on_disk, fresh,
        "the writer no longer produces the v2 bytes: bump FORMAT_VERSION and add a fixture"
    );
}
