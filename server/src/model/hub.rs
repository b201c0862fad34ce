//! Fetching a pinned model from the Hugging Face hub over plain HTTP(S), the layout every hub
//! client uses: `GET {endpoint}/{repo}/resolve/{revision}/{file}`, following the hub's redirect
//! to its content store. A file already in the hub client's local cache
//! (`{cache}/models--{owner}--{name}/snapshots/{revision}/{file}`) is taken from there instead,
//! so a machine that ran sentence-transformers once needs no network; `HF_HUB_OFFLINE` allows
//! only that. `HF_TOKEN` goes to the endpoint as a bearer token and is dropped on a redirect.
//! Proxies: the HTTP client (ureq) reads `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (first set
//! wins, lower-case too) and `NO_PROXY` itself. Every file is checked against its pin while it
//! streams into the staging folder.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::HubSettings;
use crate::model::pins::{PinnedFile, PinnedModel};
use crate::model::stage::{Progress, Staging, write_checked};

/// How long a connection may take to open, and one read to answer, before the download fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Where one installed file came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// Downloaded from the hub endpoint.
    Hub,
    /// Copied from the hub client's local cache.
    HfCache,
}

/// The resolve URL of `file`.
pub fn resolve_url(endpoint: &str, model: &PinnedModel, file: &str) -> String {
    format!(
        "{endpoint}/{}/resolve/{}/{file}",
        model.repo, model.revision
    )
}

/// The hub cache's copy of `file` at the pinned revision.
fn cached_path(cache_dir: &Path, model: &PinnedModel, file: &str) -> PathBuf {
    cache_dir
        .join(format!("models--{}", model.repo.replace('/', "--")))
        .join("snapshots")
        .join(model.revision)
        .join(file)
}

/// Fetches every pinned file of `model` into `staging`, each checked against its pin.
pub fn fetch(
    hub: &HubSettings,
    model: &PinnedModel,
    staging: &Staging,
    progress: &Progress,
) -> anyhow::Result<Vec<Origin>> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(READ_TIMEOUT))
        .http_status_as_error(false)
        .user_agent(concat!("cpersona/", env!("CARGO_PKG_VERSION")))
        // The pin is over the bytes as stored: no transfer encoding may change them.
        .accept_encoding("identity")
        .build()
        .into();
    let mut origins = Vec::with_capacity(model.files.len());
    for pin in model.files {
        let target = staging.file(pin.name)?;
        if let Some(cache_dir) = &hub.cache_dir {
            let cached = cached_path(cache_dir, model, pin.name);
            if cached.is_file() {
                progress.start(pin, &format!("from the hub cache {}", cached.display()));
                let mut file = std::fs::File::open(&cached)
                    .with_context(|| format!("cannot read {}", cached.display()))?;
                match write_checked(&mut file, &target, pin, progress) {
                    Ok(()) => {
                        origins.push(Origin::HfCache);
                        continue;
                    }
                    // A damaged cache is not fatal while the hub can still be asked.
                    Err(err) if !hub.offline => {
                        progress.note(&format!("ignoring the cached {}: {err:#}", pin.name));
                    }
                    Err(err) => return Err(err),
                }
            }
        }
        if hub.offline {
            bail!(
                "HF_HUB_OFFLINE is set and {} is not in the hub cache ({})",
                pin.name,
                hub.cache_dir.as_ref().map_or_else(
                    || "none could be located".to_owned(),
                    |dir| cached_path(dir, model, pin.name).display().to_string()
                )
            );
        }
        let url = resolve_url(&hub.endpoint, model, pin.name);
        progress.start(pin, &format!("from {url}"));
        download(&agent, hub.token.as_deref(), &url, pin, &target, progress)?;
        origins.push(Origin::Hub);
    }
    Ok(origins)
}

fn download(
    agent: &ureq::Agent,
    token: Option<&str>,
    url: &str,
    pin: &PinnedFile,
    target: &Path,
    progress: &Progress,
) -> anyhow::Result<()> {
    let mut request = agent.get(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = request
        .call()
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status().as_u16();
    match status {
        200 => {}
        401 | 403 => bail!(
            "{url} answered {status}: the hub refused access (set HF_TOKEN if this endpoint \
             needs a token)"
        ),
        404 => bail!("{url} answered 404: the file or the pinned revision is not on this hub"),
        _ => bail!("{url} answered {status}"),
    }
    let headers = response.headers();
    let encoded = headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.eq_ignore_ascii_case("identity"));
    let length = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = length.filter(|&n| !encoded && n != pin.bytes) {
        bail!(
            "{url} offers {length} bytes, the pinned {} has {}; refusing it",
            pin.name,
            pin.bytes
        );
    }
    let mut body = response.into_body().into_reader();
    write_checked(&mut body, target, pin, progress).with_context(|| format!("downloading {url}"))
}
