//! The command line: `serve` (the default), `index`, `import`, `export`, `check`, `model`,
//! `embed-serve`, `recall`, `replay`, `token`, `proxy`, `migrate`, `console`. Parses flags, reads
//! configuration once, sets up logging to stderr, and hands off; it never prints to stdout
//! while serving stdio (nor while relaying it, `proxy`).

mod admin;
mod console;
mod index;
mod migrate;
mod model;
mod open;
mod proxy;
mod recall;
pub(crate) mod replay;
mod serve;
mod token;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::config::{Config, Env};

/// cpersona: long-term memory for AI agents, served over MCP.
#[derive(Debug, Parser)]
#[command(name = "cpersona", version, about)]
pub struct Cli {
    /// The SQLite database (overrides CPERSONA_DB_PATH).
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do; with none, `serve` over stdio.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (the default), or over streamable HTTP with --http.
    Serve {
        /// Serve streamable HTTP on this address (MCP endpoint `/mcp`), e.g. 127.0.0.1:8787.
        /// Needs CPERSONA_AUTH_TOKEN.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
    /// Inspect, flush, merge or rebuild the vector index (derived from the database).
    Index {
        #[command(subcommand)]
        action: IndexAction,
    },
    /// Import a JSONL file written by `export` (or CPersona's export_memories).
    Import {
        /// The JSONL file.
        file: PathBuf,
        /// Import every row under this agent.
        #[arg(long, value_name = "AGENT_ID")]
        target_agent_id: Option<String>,
        /// Count what would be imported, write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Export memories, episodes and profiles as JSONL (to FILE, else stdout). Never onto the
    /// store's own files; an existing FILE only with --force.
    Export {
        /// Where to write; stdout when omitted.
        file: Option<PathBuf>,
        /// Only this agent.
        #[arg(long, value_name = "AGENT_ID")]
        agent_id: Option<String>,
        /// Replace FILE when it exists (atomically, by rename).
        #[arg(long)]
        force: bool,
    },
    /// Check the database: schema version, integrity, index generations.
    Check,
    /// Manage the builtin embedding model.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Re-embed every row carrying another model's vector with the configured embedder
    /// (what `serve` does in the background after a model change), with a progress bar.
    Reembed,
    /// Run one recall against the database (JSON on stdout); --trace-out saves its trace.
    Recall(recall::RecallArgs),
    /// Re-score a saved recall trace offline with conditions changed (--set k=v).
    Replay(replay::ReplayArgs),
    /// Make a bearer token for one client (and the CPersona ACL entry naming it).
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Relay MCP between stdio and a remote streamable HTTP server (CPERSONA_REMOTE_URL or
    /// --url, token CPERSONA_AUTH_TOKEN): a desktop client that launches stdio servers uses a
    /// shared one.
    Proxy(proxy::ProxyArgs),
    /// Convert a CPersona 2.5/2.6 database (read-only) into a new cpersona-rs store: progress
    /// on stderr, the report (what was carried, what was not and why) as JSON on stdout.
    Migrate {
        /// The CPersona SQLite file; never written.
        #[arg(long, value_name = "PATH")]
        from_cpersona: PathBuf,
        /// The store to write (new or empty); default `<stem>.cpersona-rs.db` beside PATH, the
        /// file `serve` uses when CPERSONA_DB_PATH names PATH.
        #[arg(long, value_name = "OURS")]
        to: Option<PathBuf>,
        /// Report what would be carried; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Serve the local web console (browse, correct, search, traces, health) on loopback;
    /// the same pages are at `/console` under `serve --http`.
    Console(console::ConsoleArgs),
    /// Serve the configured embedder over CPersona's HTTP embedding contract.
    EmbedServe {
        /// Address to listen on, e.g. 127.0.0.1:8401.
        #[arg(long, value_name = "ADDR")]
        http: SocketAddr,
    },
}

/// `token` actions.
#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Print a random 43-character token, then the ACL entry to add for it.
    New(TokenNewArgs),
}

/// `index` actions.
#[derive(Debug, Subcommand)]
pub enum IndexAction {
    /// Build a new generation from the database and swap it in.
    Rebuild {
        /// Only this table.
        #[arg(long, value_enum)]
        table: Option<Table>,
    },
    /// Show each table's segments, rows, tombstones, live tail, last merge and pending merge.
    Status,
    /// Flush rows written since the last flush into a new segment (what `serve` does in the
    /// background); a table never indexed is built whole.
    Flush,
    /// Run the merges the policy picks until the segments are in shape (what `serve` does in
    /// the background unless `CPERSONA_INDEX_AUTO_MERGE=false`).
    Merge,
}

/// A table with an index generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Table {
    Memories,
    Episodes,
    /// The block generation (`<db>.blocks.gen`); built only when asked for.
    Blocks,
}

pub use console::ConsoleArgs;
pub use model::{InstallArgs, ModelAction};
pub use proxy::ProxyArgs;
pub use token::TokenNewArgs;

/// Exit code for a configuration or start-up error.
const EXIT_CONFIG: u8 = 2;
/// Exit code for a failure while running.
const EXIT_FAILURE: u8 = 1;

/// Parse the command line and the environment, run, and map the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let env = match Env::from_process() {
        Ok(env) => env,
        Err(e) => return fail(EXIT_CONFIG, &e.to_string()),
    };
    let config = match Config::from_env(&env, cli.db.clone()) {
        Ok(config) => config,
        Err(e) => return fail(EXIT_CONFIG, &format!("invalid configuration: {e}")),
    };
    match run(
        cli.command.unwrap_or(Command::Serve { http: None }),
        config,
        &env,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e.exit_code, &format!("{:#}", e.error)),
    }
}

/// An error with the exit code it maps to.
pub(crate) struct RunError {
    exit_code: u8,
    error: anyhow::Error,
}

impl RunError {
    pub(crate) fn config(error: impl Into<anyhow::Error>) -> RunError {
        RunError {
            exit_code: EXIT_CONFIG,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for RunError {
    fn from(error: E) -> RunError {
        RunError {
            exit_code: EXIT_FAILURE,
            error: error.into(),
        }
    }
}

fn run(command: Command, config: Config, env: &Env) -> Result<(), RunError> {
    match command {
        Command::Serve { http } => serve::run(config, http),
        Command::Index {
            action: IndexAction::Rebuild { table },
        } => index::rebuild(&config, table),
        Command::Index {
            action: IndexAction::Status,
        } => index::status(&config),
        Command::Index {
            action: IndexAction::Flush,
        } => index::flush(&config),
        Command::Index {
            action: IndexAction::Merge,
        } => index::merge(&config),
        Command::Import {
            file,
            target_agent_id,
            dry_run,
        } => admin::import(&config, file, target_agent_id, dry_run),
        Command::Export {
            file,
            agent_id,
            force,
        } => admin::export(&config, file, agent_id, force),
        Command::Check => admin::check(&config),
        Command::Model { action } => model::run(action, &config, env),
        Command::EmbedServe { http } => admin::embed_serve(&config, http),
        Command::Reembed => index::reembed(&config),
        Command::Migrate {
            from_cpersona,
            to,
            dry_run,
        } => migrate::run(&config, &from_cpersona, to, dry_run),
        Command::Recall(args) => recall::run(&config, args),
        Command::Replay(args) => replay::run(&config, args),
        Command::Proxy(args) => proxy::run(env, &args),
        Command::Console(args) => console::run(config, &args),
        Command::Token {
            action: TokenAction::New(args),
        } => Ok(token::run(&args)?),
    }
}

fn fail(code: u8, message: &str) -> ExitCode {
    tracing::error!("{message}");
    // Logging may be filtered out; the reason must still reach the operator, on stderr.
    eprintln!("cpersona: {message}");
    ExitCode::from(code)
}

/// Logs go to stderr only (stdout is the stdio transport), filtered by `RUST_LOG`
/// (default `info`).
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    // The same events, to MCP clients that asked for them with `logging/setLevel`.
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(crate::mcp::logging::client_log_layer())
        .try_init();
}
