//! Installing without ever leaving half a model: files stream into a staging folder beside the
//! destination, each checked against its pin (size bounded while it streams, then sha256) and
//! synced, and only a complete, loadable folder is renamed into place. Dropping a `Staging`
//! that was not committed removes it, so an error or a refused checksum leaves the
//! destination as it was. Also the progress bar (stderr, only when stderr is a terminal).

use std::cell::Cell;
use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};

use crate::model::pins::PinnedFile;

/// A staging folder beside `dest`, removed on drop unless committed.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    dest: PathBuf,
    committed: bool,
}

/// A name unique to this process and moment, for the staging and set-aside folders.
fn sibling(dest: &Path, what: &str) -> anyhow::Result<PathBuf> {
    let name = dest
        .file_name()
        .with_context(|| format!("{} has no folder name", dest.display()))?
        .to_string_lossy();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let parent = dest.parent().unwrap_or_else(|| Path::new("."));
    Ok(parent.join(format!(".{name}.{what}-{}-{nanos}", std::process::id())))
}

impl Staging {
    /// Creates the staging folder for `dest` (and `dest`'s parent folder).
    pub fn new(dest: &Path) -> anyhow::Result<Staging> {
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the folder {}", parent.display()))?;
        }
        let dir = sibling(dest, "partial")?;
        std::fs::create_dir(&dir)
            .with_context(|| format!("cannot create the staging folder {}", dir.display()))?;
        Ok(Staging {
            dir,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// The staging folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `name` (a `/`-separated path) goes in the staging folder, its folder created.
    pub fn file(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        Ok(path)
    }

    /// Renames the staged folder into place. An existing destination is replaced only with
    /// `replace` (set aside first, restored when the rename fails, then removed); returns
    /// whether one was replaced.
    pub fn commit(mut self, replace: bool) -> anyhow::Result<bool> {
        let dest = self.dest.clone();
        let existed = std::fs::symlink_metadata(&dest).is_ok();
        if existed && !replace {
            bail!(
                "{} already exists (pass --force to replace it)",
                dest.display()
            );
        }
        if existed {
            let aside = sibling(&dest, "replaced")?;
            std::fs::rename(&dest, &aside)
                .with_context(|| format!("cannot move the old {} aside", dest.display()))?;
            if let Err(err) = std::fs::rename(&self.dir, &dest) {
                let restored = std::fs::rename(&aside, &dest);
                return Err(err).with_context(|| {
                    format!(
                        "cannot rename the new model into {} (old one {})",
                        dest.display(),
                        if restored.is_ok() {
                            "restored"
                        } else {
                            "left at the side"
                        }
                    )
                });
            }
            self.committed = true;
            if let Err(err) = std::fs::remove_dir_all(&aside) {
                tracing::warn!(%err, path = %aside.display(), "cannot remove the replaced model");
            }
        } else {
            std::fs::rename(&self.dir, &dest)
                .with_context(|| format!("cannot rename the model into {}", dest.display()))?;
            self.committed = true;
        }
        // The rename is durable once the folder holding it is synced.
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty())
            && let Ok(dir) = File::open(parent)
        {
            let _ = dir.sync_all();
        }
        Ok(existed)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Size and sha256 of the file at `path`.
pub fn sha256_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let bytes = std::io::copy(&mut file, &mut hasher)?;
    Ok((bytes, hex(&hasher.finalize())))
}

/// Streams `reader` into a new file at `path`, reading at most one byte past the pinned size,
/// then checks the size and the sha256 and syncs the file. The error says which check failed.
pub fn write_checked(
    reader: &mut dyn Read,
    path: &Path,
    pin: &PinnedFile,
    progress: &Progress,
) -> anyhow::Result<()> {
    let mut file =
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut got: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => bail!(
                "the transfer of {} broke after {got} of {} bytes: {err}",
                pin.name,
                pin.bytes
            ),
        };
        got += n as u64;
        if got > pin.bytes {
            bail!(
                "{} is longer than the pinned {} bytes; refusing it",
                pin.name,
                pin.bytes
            );
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", path.display()))?;
        progress.advance(n as u64);
    }
    if got < pin.bytes {
        bail!(
            "{} ended after {got} of its {} bytes (the transfer was cut short)",
            pin.name,
            pin.bytes
        );
    }
    let actual = hex(&hasher.finalize());
    if actual != pin.sha256 {
        bail!(
            "{}: sha256 {actual} differs from the pinned {}; refusing it",
            pin.name,
            pin.sha256
        );
    }
    file.sync_all()
        .with_context(|| format!("cannot sync {}", path.display()))?;
    progress.file_done(pin);
    Ok(())
}

/// Progress of an install: a byte bar on stderr when stderr is a terminal, else one line per
/// file (so logs still say what was fetched from where).
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Bytes of the files finished so far; a file that restarts rewinds the bar to here.
    done: Cell<u64>,
}

impl Progress {
    /// Progress over `total` bytes.
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{msg:24!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Progress {
            bar,
            done: Cell::new(0),
        }
    }

    /// A file starts; `from` says where it comes from.
    pub fn start(&self, pin: &PinnedFile, from: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done.get());
                bar.set_message(pin.name.to_owned());
            }
            None => eprintln!("cpersona: {} ({} bytes) {from}", pin.name, pin.bytes),
        }
    }

    fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    fn file_done(&self, pin: &PinnedFile) {
        self.done.set(self.done.get() + pin.bytes);
    }

    /// A line that must not tear the bar.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("cpersona: {line}")),
            None => eprintln!("cpersona: {line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
