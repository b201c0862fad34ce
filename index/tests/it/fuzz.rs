//! Bounded fuzzing of the generation file reader (proptest, runs in CI in seconds): random
//! bytes, a valid file with random header fields (counts, dimensions, section offsets and
//! lengths set to arbitrary values), and a valid file truncated or extended. Opening gives a
//! structured error or a generation whose searches run; it never panics. Each target runs
//! `FUZZ_CASES` executions.

use std::sync::OnceLock;

use cpersona_index::format::{HEADER_LEN, Header, MAGIC};
use cpersona_index::{Generation, RowFilter, ScanConfig, SearchMode};
use proptest::prelude::*;

use crate::util::{build_bytes, random_rows};

/// Executions per target in CI.
const FUZZ_CASES: u32 = 1500;

fn sample() -> &'static [u8] {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    SAMPLE.get_or_init(|| build_bytes(&random_rows(9, 37, 70), 70))
}

/// Opens `bytes`; when that works, every search mode must run and respect its bound.
fn open_and_search(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(g) = Generation::from_bytes(bytes) {
        let q = g
            .query(&vec![0.1; g.dim().get()])
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for mode in [SearchMode::Exact, SearchMode::Prefiltered { candidates: 7 }] {
            let res = g
                .search(
                    &q,
                    &RowFilter::default(),
                    &ScanConfig::new(5).with_mode(mode),
                )
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(res.hits.len() <= 5);
        }
    }
    Ok(())
}

/// One header field set to an arbitrary value.
#[derive(Clone, Debug)]
enum Edit {
    Dim(u32),
    CodeStride(u32),
    SignWords(u32),
    SectionCount(u32),
    Count(u64),
    HeaderLen(u32),
    SectionOffset(usize, u64),
    SectionLen(usize, u64),
}

fn edit() -> impl Strategy<Value = Edit> {
    let small = prop_oneof![0u64..200, Just(u64::MAX), Just(u64::MAX / 2), any::<u64>()];
    let small32 = prop_oneof![0u32..200, Just(u32::MAX), any::<u32>()];
    prop_oneof![
        small32.clone().prop_map(Edit::Dim),
        small32.clone().prop_map(Edit::CodeStride),
        small32.clone().prop_map(Edit::SignWords),
        small32.clone().prop_map(Edit::SectionCount),
        small32.prop_map(Edit::HeaderLen),
        small.clone().prop_map(Edit::Count),
        (any::<prop::sample::Index>(), small.clone())
            .prop_map(|(i, v)| Edit::SectionOffset(i.index(64), v)),
        (any::<prop::sample::Index>(), small).prop_map(|(i, v)| Edit::SectionLen(i.index(64), v)),
    ]
}

fn apply(bytes: &mut [u8], edit: &Edit) {
    let mut h: Header = *bytemuck::from_bytes(&bytes[..HEADER_LEN]);
    let n = h.sections.len();
    match *edit {
        Edit::Dim(v) => h.dim = v,
        Edit::CodeStride(v) => h.code_stride = v,
        Edit::SignWords(v) => h.sign_words = v,
        Edit::SectionCount(v) => h.section_count = v,
        Edit::HeaderLen(v) => h.header_len = v,
        Edit::Count(v) => h.count = v,
        Edit::SectionOffset(i, v) => h.sections[i % n].offset = v,
        Edit::SectionLen(i, v) => h.sections[i % n].len = v,
    }
    bytes[..HEADER_LEN].copy_from_slice(bytemuck::bytes_of(&h));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: FUZZ_CASES, failure_persistence: None, ..ProptestConfig::default() })]

    /// Arbitrary bytes, sometimes behind the right magic.
    #[test]
    fn random_bytes_never_panic(mut bytes in prop::collection::vec(any::<u8>(), 0..2048), magic in any::<bool>()) {
        if magic && bytes.len() >= MAGIC.len() {
            bytes[..MAGIC.len()].copy_from_slice(&MAGIC);
        }
        open_and_search(&bytes)?;
    }

    /// A valid file with one to four header fields set to arbitrary values.
    #[test]
    fn header_field_edits_never_panic(edits in prop::collection::vec(edit(), 1..5)) {
        let mut bytes = sample().to_vec();
        for e in &edits {
            apply(&mut bytes, e);
        }
        open_and_search(&bytes)?;
    }

    /// A valid file cut short or extended with junk: a partial file never opens.
    #[test]
    fn truncated_or_extended_files_never_panic(cut in any::<prop::sample::Index>(), junk in prop::collection::vec(any::<u8>(), 0..300)) {
        let full = sample();
        let cut_at = cut.index(full.len());
        let truncated = &full[..cut_at];
        prop_assert!(Generation::from_bytes(truncated).is_err(), "a file cut at {} opened", cut_at);
        let mut extended = full.to_vec();
        extended.extend_from_slice(&junk);
        open_and_search(&extended)?;
    }
}
