//! `cpersona serve`: open the engine, build the MCP server over it, start the background
//! index maintenance (flush, merge), re-embedding after a model change and the
//! embedding-queue drain, then run the chosen transport on a tokio runtime. Start-up checks
//! run before anything else is opened: a refused `CPERSONA_*` setting (`config/coverage.rs`)
//! stops the server, the other set-but-unhonoured ones are listed once on stderr, an ACL file
//! must load, and HTTP needs its token (or the ACL file's). Over HTTP the console
//! (`crate::console`) is served at `/console` too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cpersona_engine::Engine;

use crate::access::{self, Acl};
use crate::cli::{RunError, open};
use crate::config::{Config, Env, IndexMaintenance};
use crate::console::Console;
use crate::mcp::McpServer;
use crate::mcp::engine::EngineBackend;
use crate::transport::http::{self, HttpSecurity};

/// Serve over HTTP when `--http` (or `CPERSONA_TRANSPORT=streamable-http`) says so, else stdio.
pub(crate) fn run(config: Config, http_flag: Option<SocketAddr>) -> Result<(), RunError> {
    if let Some(refused) = config.refused_setting() {
        return Err(RunError::config(refused));
    }
    // Straight to stderr, not through the log filter: the operator must see it once.
    for line in crate::config::coverage::warning_lines(&config.unhonoured) {
        eprintln!("{line}");
    }
    let http_addr = http_flag.or(config.http.env_bind);
    // The ACL file before anything is opened: a server must serve the policy written or none.
    let acl = load_acl(&config)?;
    // Preflight first, as CPersona does: an HTTP server without a token never opens the store.
    let security = match http_addr {
        Some(_) => Some(http_security(&config, acl.as_ref())?),
        None => None,
    };
    // A CPersona database is served through the store converted from it (`migrate.rs`).
    let served = crate::cli::migrate::for_serve(config)?;
    let config = served.config;
    tracing::info!(db = %config.db_path.display(), "starting");
    let (engine, embedder) = open::open(&config)?;
    let mut unhonoured = config.unhonoured.clone();
    if let Some(warning) = served
        .original
        .as_deref()
        .and_then(|original| crate::cli::migrate::drift_warning(&engine, original))
    {
        eprintln!("cpersona: warning: {warning}");
        // `check_health`'s settings finding carries it too.
        unhonoured.push(crate::config::coverage::UnhonouredSetting {
            name: "CPERSONA_DB_PATH".into(),
            status: "converted_original_changed",
            note: warning,
        });
    }
    let backend = Arc::new(
        EngineBackend::new(
            Arc::clone(&engine),
            Arc::clone(&embedder),
            config.recall.clone(),
        )
        .with_unhonoured_settings(unhonoured),
    );
    // Over HTTP the console's pages ride along at `/console`, behind the same token.
    let console = http_addr.map(|_| {
        let console = Console::new(Arc::clone(&backend), embedder);
        Box::new(move |security: &HttpSecurity, bound| console.router(security, bound))
            as http::ConsoleMount
    });
    let operating = Arc::new(crate::operating::Loader::new(
        config.operating_context.clone(),
    ));
    let mut server = McpServer::new(backend).with_operating_context(operating);
    if let Some(acl) = acl {
        server = server.with_acl(acl);
    }
    let index_settings = config.index;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        tokio::spawn(maintain_index(Arc::clone(&engine), index_settings));
        tokio::spawn(reembed(Arc::clone(&engine)));
        tokio::spawn(drain_queue(engine));
        match (http_addr, security) {
            (Some(addr), Some(security)) => http::serve(server, security, addr, console).await,
            _ => crate::transport::stdio::serve(server).await,
        }
    })?;
    Ok(())
}

/// HTTP's security settings: the token (refused when missing or weak unless unauthenticated
/// HTTP was asked for), or in ACL mode the file's clients. `cpersona console` uses it too.
pub(crate) fn http_security(
    config: &Config,
    acl: Option<&Arc<Acl>>,
) -> Result<HttpSecurity, RunError> {
    Ok(HttpSecurity {
        auth_token: match acl {
            // ACL mode is the authentication: the single token is ignored, as CPersona
            // ignores it (one credential authority at a time), and said so.
            Some(_) => {
                if config.http.auth_token.is_some() {
                    tracing::warn!(
                        "CPERSONA_AUTH_TOKEN is ignored in ACL mode: only the tokens of \
                         CPERSONA_ACL_FILE's clients are accepted"
                    );
                }
                None
            }
            None => http::resolve_auth(
                config.http.auth_token.clone(),
                config.http.allow_unauthenticated,
            )
            .map_err(RunError::config)?,
        },
        acl: acl.cloned(),
        max_body_bytes: config.http.max_body_bytes,
        extra_allowed_origins: config.http.extra_allowed_origins.clone(),
        extra_allowed_hosts: config.http.extra_allowed_hosts.clone(),
    })
}

/// The ACL file `CPERSONA_ACL_FILE` names, read and validated; `None` without one.
pub(crate) fn load_acl(config: &Config) -> Result<Option<Arc<Acl>>, RunError> {
    let Some(path) = &config.http.acl_file else {
        return Ok(None);
    };
    let acl = access::load(path, &Env::process_var).map_err(RunError::config)?;
    tracing::info!(
        clients = acl.client_count(),
        path = %path.display(),
        "ACL mode: every tool call is checked against its client's grants"
    );
    Ok(Some(Arc::new(acl)))
}

/// Keeps the vector index fresh without an operator: every `flush_every_ms` one pass flushes
/// the rows written since the last (each table's change log into a new segment; a table never
/// indexed, or overtaken by a purge, is rebuilt whole) and, when `auto_merge`, runs the merge
/// the policy picks. A pass that found work is followed at once by the next, so a backlog
/// (an import, a first build) clears at flush speed. Failures are logged and retried.
async fn maintain_index(engine: Arc<Engine>, settings: IndexMaintenance) {
    let mut tick = tokio::time::interval(Duration::from_millis(settings.flush_every_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        loop {
            let engine = Arc::clone(&engine);
            let pass =
                tokio::task::spawn_blocking(move || engine.maintain_index(settings.auto_merge))
                    .await;
            match pass {
                Ok(Ok(outcome)) if outcome.is_idle() => break,
                Ok(Ok(outcome)) => {
                    tracing::debug!(?outcome, "index maintenance pass");
                }
                Ok(Err(err)) => {
                    tracing::warn!(%err, "index maintenance pass failed");
                    break;
                }
                Err(err) => {
                    tracing::error!(%err, "index maintenance pass panicked");
                    break;
                }
            }
        }
    }
}

/// How often the background task looks for queued embeddings.
const DRAIN_EVERY: Duration = Duration::from_secs(5);
/// Queued rows embedded per pass: one pass stays short, so the writer lock is never held long.
const DRAIN_ROWS: usize = 256;

/// Fills queued embeddings while the embedder answers (rows stored while it was down, or
/// imported without vectors). A pass that filled a whole batch is followed at once by the
/// next, so a large import drains at embedder speed; otherwise it waits for the next tick.
/// Runs until the process ends; a failed pass is logged and retried.
async fn drain_queue(engine: Arc<Engine>) {
    let mut tick = tokio::time::interval(DRAIN_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        while drain_pass(&engine).await {}
    }
}

/// One pass; true when it filled a whole batch and more rows wait.
async fn drain_pass(engine: &Arc<Engine>) -> bool {
    let engine = Arc::clone(engine);
    match tokio::task::spawn_blocking(move || engine.drain_embedding_queue(DRAIN_ROWS)).await {
        Ok(Ok(outcome)) => {
            if outcome.embedded > 0 || outcome.failed > 0 {
                tracing::info!(
                    embedded = outcome.embedded,
                    failed = outcome.failed,
                    remaining = outcome.remaining,
                    last_error = outcome.last_error.as_deref().unwrap_or(""),
                    "embedding queue pass"
                );
            }
            outcome.embedded == DRAIN_ROWS && outcome.remaining > 0
        }
        Ok(Err(err)) => {
            tracing::warn!(%err, "embedding queue pass failed");
            false
        }
        Err(err) => {
            tracing::error!(%err, "embedding queue pass panicked");
            false
        }
    }
}

/// How often the background task looks for rows to re-embed (a model change is seen at
/// start-up, so this only paces retries after an embedder failure).
const REEMBED_EVERY: Duration = Duration::from_secs(5);
/// Rows per re-embedding step: one short write transaction each.
const REEMBED_ROWS: usize = 64;
/// The pause between two steps, so requests get the cores between batches.
const REEMBED_PAUSE: Duration = Duration::from_millis(20);

/// Re-embeds the rows of another model after the store adopted a new embedder, step after
/// step while there is work, then waits for the next tick (an embedder failure is retried
/// there). Recall stays correct meanwhile: it searches only rows carrying the new model's
/// vector and says what share that is.
async fn reembed(engine: Arc<Engine>) {
    let mut tick = tokio::time::interval(REEMBED_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        loop {
            let worker = Arc::clone(&engine);
            match tokio::task::spawn_blocking(move || worker.reembed_step(REEMBED_ROWS)).await {
                Ok(Ok(step)) => {
                    if step.finished {
                        tracing::info!(model = %step.progress.to_model, rows = step.progress.rows, "re-embedding finished");
                    } else if step.embedded > 0 {
                        tracing::debug!(
                            done = step.progress.done,
                            rows = step.progress.rows,
                            "re-embedding step"
                        );
                    }
                    if let Some(reason) = &step.failed {
                        tracing::warn!(%reason, "re-embedding step failed; retried later");
                    }
                    if !step.more() {
                        break;
                    }
                }
                Ok(Err(err)) => {
                    tracing::warn!(%err, "re-embedding step failed");
                    break;
                }
                Err(err) => {
                    tracing::error!(%err, "re-embedding step panicked");
                    break;
                }
            }
            tokio::time::sleep(REEMBED_PAUSE).await;
        }
    }
}
