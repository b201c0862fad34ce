//! Truncated, overwritten and foreign files give structured errors, never a panic.

use cpersona_index::format::{self, HEADER_LEN, Header, section};
use cpersona_index::{Error, Generation, RowFilter, ScanConfig, SearchMode};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::{build_bytes, random_rows};

type HeaderEdit = Box<dyn Fn(&mut Header)>;

fn sample() -> Vec<u8> {
    build_bytes(&random_rows(2, 40, 70), 70)
}

fn header(bytes: &[u8]) -> Header {
    *bytemuck::from_bytes(&bytes[..HEADER_LEN])
}

fn set_header(bytes: &mut [u8], f: impl FnOnce(&mut Header)) {
    let mut h = header(bytes);
    f(&mut h);
    bytes[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&h));
}

fn corrupt_section(err: Error) -> &'static str {
    match err {
        Error::Corrupt { section, .. } => section,
        other => panic!("expected Error::Corrupt, got {other:?}"),
    }
}

#[test]
fn truncation_at_every_section_boundary_and_random_points_is_an_error() {
    let bytes = sample();
    let h = header(&bytes);
    let mut cuts: Vec<usize> = vec![0, 1, 7, 8, 12, HEADER_LEN - 1, HEADER_LEN, bytes.len() - 1];
    for s in h.sections {
        cuts.extend([
            s.offset as usize,
            (s.offset + s.len) as usize,
            s.offset as usize + 1,
        ]);
    }
    let mut rng = StdRng::seed_from_u64(5);
    cuts.extend((0..64).map(|_| rng.random_range(0..bytes.len())));
    for cut in cuts.into_iter().filter(|&c| c < bytes.len()) {
        match Generation::from_bytes(&bytes[..cut]) {
            Err(Error::Corrupt { .. }) => {}
            Err(Error::Magic { .. }) if cut < 8 => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

#[test]
fn truncated_and_empty_files_fail_to_open_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = sample();
    for (name, len) in [("empty", 0), ("short", 100), ("half", bytes.len() / 2)] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes[..len]).unwrap();
        assert!(Generation::open(&path).is_err(), "{name}");
    }
    assert!(matches!(
        Generation::open(dir.path().join("missing")),
        Err(Error::Io(_))
    ));
}

#[test]
fn foreign_magic_and_other_versions_are_named() {
    let mut bytes = sample();
    bytes[0] = b'X';
    assert!(
        matches!(Generation::from_bytes(&bytes), Err(Error::Magic { found }) if found[0] == b'X')
    );
    let mut bytes = sample();
    set_header(&mut bytes, |h| h.format_version = 3);
    assert!(matches!(
        Generation::from_bytes(&bytes),
        Err(Error::Version {
            found: 3,
            supported: 2
        })
    ));
    assert!(matches!(
        Generation::from_bytes(&bytes[..40]),
        Err(Error::Version { found: 3, .. })
    ));
    let mut bytes = sample();
    set_header(&mut bytes, |h| h.format_version = 0);
    assert!(matches!(
        Generation::from_bytes(&bytes),
        Err(Error::Version { found: 0, .. })
    ));
    assert!(matches!(
        Generation::from_bytes(b"SQLite format 3\0"),
        Err(Error::Magic { .. })
    ));
}

#[test]
fn wrong_header_fields_are_corrupt() {
    let edits: Vec<(&str, HeaderEdit)> = vec![
        ("header", Box::new(|h| h.dim = 71)),
        ("header", Box::new(|h| h.dim = 0)),
        ("header", Box::new(|h| h.code_stride = 64)),
        ("header", Box::new(|h| h.sign_words = 1)),
        ("header", Box::new(|h| h.embed_dim = 384)),
        ("header", Box::new(|h| h.header_len = 256)),
        ("header", Box::new(|h| h.section_count = 13)),
        ("header", Box::new(|h| h.reserved[2] = 1)),
        ("ids", Box::new(|h| h.count += 1)),
        ("header", Box::new(|h| h.count = u64::MAX / 2)),
        ("ids", Box::new(|h| h.count = 5)),
        (
            "dict_channel",
            Box::new(|h| h.sections[section::DICT_CHANNEL].offset += 64),
        ),
        (
            "dict_agent",
            Box::new(|h| h.sections[section::DICT_AGENT].len += 1),
        ),
        ("scale", Box::new(|h| h.sections[section::SCALE].len -= 4)),
        (
            "dict_agent",
            Box::new(|h| h.sections[section::MODEL_ID].len += 64),
        ),
    ];
    for (i, (want, edit)) in edits.iter().enumerate() {
        let mut bytes = sample();
        set_header(&mut bytes, edit);
        let got = corrupt_section(Generation::from_bytes(&bytes).unwrap_err());
        assert_eq!(got, *want, "edit {i}");
    }
}

#[test]
fn bad_sections_are_corrupt() {
    let base = sample();
    let h = header(&base);
    let at = |idx: usize| h.sections[idx].offset as usize;
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut b = base.clone();
    b[at(section::AGENT)..at(section::AGENT) + 4].copy_from_slice(&99u32.to_le_bytes());
    cases.push(("agent", b));
    let mut b = base.clone();
    let sources = at(section::SOURCE) + 4 * 39;
    b[sources..sources + 4].copy_from_slice(&5u32.to_le_bytes());
    cases.push(("source", b));
    let mut b = base.clone();
    b[at(section::SCALE)..at(section::SCALE) + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    cases.push(("scale", b));
    let mut b = base.clone();
    b[at(section::SCALE) + 4..at(section::SCALE) + 8].copy_from_slice(&(-1.0f32).to_le_bytes());
    cases.push(("scale", b));
    let mut b = base.clone();
    b[at(section::CREATED_AT)..at(section::CREATED_AT) + 8]
        .copy_from_slice(&i64::MIN.to_le_bytes());
    cases.push(("created_at", b));
    // Dictionary entries out of order: "alice" -> "zlice" sorts after "bob".
    let mut b = base.clone();
    let agent_dict = at(section::DICT_AGENT);
    let text = agent_dict + 4 + 4 * 5;
    assert_eq!(&b[text..text + 5], b"alice");
    b[text] = b'z';
    cases.push(("dict_agent", b));
    let mut b = base.clone();
    b[text] = 0xff;
    cases.push(("dict_agent", b));
    let mut b = base.clone();
    b[agent_dict + 8..agent_dict + 12].copy_from_slice(&1000u32.to_le_bytes());
    cases.push(("dict_agent", b));
    let mut b = base.clone();
    b[agent_dict..agent_dict + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("dict_agent", b));
    let mut b = base.clone();
    b[at(section::MODEL_ID)] = 0xc3;
    cases.push(("model_id", b));
    let mut b = base.clone();
    let pad = (h.sections[section::MODEL_ID].offset + h.sections[section::MODEL_ID].len) as usize;
    b[pad] = 1;
    cases.push(("dict_agent", b));
    let mut b = base.clone();
    b.extend_from_slice(&[0; 64]);
    cases.push(("file", b));
    for (want, bytes) in cases {
        assert_eq!(
            corrupt_section(Generation::from_bytes(&bytes).unwrap_err()),
            want
        );
    }
    assert!(format::validate(&base).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever bytes change, opening returns (and a search on what opens runs) without a panic.
    #[test]
    fn random_damage_never_panics(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut bytes = sample();
        for (idx, value) in flips {
            let i = idx.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok(g) = Generation::from_bytes(&bytes) {
            let q = g.query(&vec![0.1; g.dim().get()]).unwrap();
            for mode in [SearchMode::Exact, SearchMode::Prefiltered { candidates: 5 }] {
                let res = g.search(&q, &RowFilter::default(), &ScanConfig::new(3).with_mode(mode)).unwrap();
                prop_assert!(res.hits.len() <= 3);
            }
        }
    }
}
