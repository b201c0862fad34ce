//! MCP over stdin/stdout. Under this transport stdout carries only JSON-RPC: every log line
//! goes to stderr, and nothing here may print.
//!
//! Every stdin line passes the screen of [`super::jsonrpc`] before rmcp sees it, so every
//! request gets an answer: what does not parse, what is no request and a request with bad
//! params are answered here (-32700, -32600, -32602) and never reach a tool; what passes goes
//! to rmcp unchanged. Two more cases rmcp would mishandle are kept from it:
//! - a line longer than rmcp reads (16 MiB, its `DEFAULT_MAX_LINE_LENGTH`) is answered
//!   -32600 with the id read from its first 64 KiB, and skipped without being held in memory;
//! - before a request opens rmcp's session (`initialize`), a notification or response is
//!   dropped: rmcp ends the whole session on one (it wants a request first), and JSON-RPC
//!   answers neither.
//!
//! A valid notification or response is never answered (JSON-RPC), nor is a blank line; one
//! rmcp cannot read is dropped with a log line. A last line without a newline is screened
//! like any other. Every frame, rmcp's and ours, is written to stdout whole, one per line.

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::jsonrpc::{INVALID_REQUEST, Kind, Refusal, Screened, read_id, screen};
use crate::mcp::McpServer;

/// Bytes buffered between the line filter and rmcp in each direction.
const PIPE_BYTES: usize = 1 << 16;

/// Frames waiting for stdout: bounded, so a client that never reads cannot make the server
/// hold its refusals without end (reading stdin waits instead).
const QUEUED_FRAMES: usize = 256;

/// The head of an over-long line kept to read its id from.
const LONG_LINE_HEAD: usize = 64 * 1024;

/// Serve `server` on this process's stdin/stdout until the client closes the pipe.
pub async fn serve(server: McpServer) -> anyhow::Result<()> {
    tracing::info!("serving MCP over stdio");
    serve_on(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serve `server` reading requests from `input` and writing frames to `output`.
pub async fn serve_on<R, W>(server: McpServer, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let supported = rmcp::ServerHandler::supported_protocol_versions(&server).into_owned();
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (frames_tx, frames_rx) = mpsc::channel::<Vec<u8>>(QUEUED_FRAMES);
    let writer = tokio::spawn(write_frames(frames_rx, output));
    let reader = tokio::spawn(filter_input(input, to_rmcp, frames_tx.clone(), supported));
    let forward = tokio::spawn(forward_lines(from_rmcp, frames_tx));
    let running = server.serve(tokio::io::split(theirs)).await?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "stdio session ended");
    reader.abort();
    // rmcp has dropped its end: the forwarder reaches EOF, and the writer drains what is left.
    let _ = forward.await;
    let _ = writer.await;
    Ok(())
}

/// One line of input (the proxy reads stdin the same way).
pub(super) enum Line {
    /// A whole line (without its newline) of at most the limit.
    Whole(Vec<u8>),
    /// A line over the limit: its first bytes and its length.
    TooLong { head: Vec<u8>, len: usize },
    /// The input ended.
    End,
}

/// Reads one line, counted as rmcp counts it (newline included; a last line without one is
/// given one), never holding more than `DEFAULT_MAX_LINE_LENGTH` bytes of it.
pub(super) async fn read_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> Line {
    let mut line = Vec::new();
    let mut len = 0usize;
    let mut ended = false;
    loop {
        let consumed = {
            let available = match input.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::error!(%e, "cannot read stdin");
                    &[]
                }
            };
            if available.is_empty() {
                break;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let was_over = len > DEFAULT_MAX_LINE_LENGTH;
            len += take;
            if len <= DEFAULT_MAX_LINE_LENGTH {
                line.extend_from_slice(&available[..take]);
            } else if !was_over {
                // Just went over: keep only the head, for the id.
                line.truncate(LONG_LINE_HEAD);
                let room = LONG_LINE_HEAD - line.len();
                line.extend_from_slice(&available[..room.min(take)]);
            }
            ended = newline.is_some();
            take
        };
        input.consume(consumed);
        if ended {
            break;
        }
    }
    if len == 0 {
        return Line::End;
    }
    let counted = if ended { len } else { len + 1 };
    if counted > DEFAULT_MAX_LINE_LENGTH {
        return Line::TooLong { head: line, len };
    }
    if ended {
        line.pop();
    }
    Line::Whole(line)
}

/// Reads `input` line by line through the screen: a refusal is answered on `frames`; a
/// passed line goes to rmcp (with its newline); a notification or response before rmcp's
/// session is open is dropped. EOF closes rmcp's input.
async fn filter_input<R, W>(
    input: R,
    mut to_rmcp: W,
    frames: mpsc::Sender<Vec<u8>>,
    supported: Vec<ProtocolVersion>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut session_open = false;
    loop {
        let line = match read_line(&mut input).await {
            Line::End => break,
            Line::TooLong { head, len } => {
                let id = read_id(&head);
                let refusal = Refusal::new(
                    id,
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: the line is {len} bytes, over the {DEFAULT_MAX_LINE_LENGTH}-byte \
                         limit of one message; it was not read and nothing was run"
                    ),
                );
                tracing::warn!(len, "answered a line over the length limit");
                if frames.send(refusal.to_line()).await.is_err() {
                    break;
                }
                continue;
            }
            Line::Whole(line) => line,
        };
        match screen(&line, &supported) {
            Screened::Blank => {}
            Screened::Refuse(refusal) => {
                tracing::debug!(code = refusal.code, message = %refusal.message, "refused a line");
                if frames.send(refusal.to_line()).await.is_err() {
                    break;
                }
            }
            Screened::Unserved(refusal) => {
                tracing::warn!(message = %refusal.message, "dropped a notification or response rmcp cannot read (JSON-RPC answers neither)");
            }
            Screened::Pass(passed) if !session_open && passed.kind != Kind::Request => {
                tracing::warn!(
                    kind = ?passed.kind,
                    "dropped a notification or response sent before initialize"
                );
            }
            Screened::Pass(passed) => {
                session_open |= passed.opens_session;
                let mut framed = line;
                framed.push(b'\n');
                if to_rmcp.write_all(&framed).await.is_err() || to_rmcp.flush().await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Sends each line rmcp writes to the writer as one frame.
async fn forward_lines<R: AsyncRead + Unpin>(from_rmcp: R, frames: mpsc::Sender<Vec<u8>>) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if frames.send(line).await.is_err() {
            break;
        }
    }
}

/// Writes whole frames to `output`, flushing after each, until every sender is gone.
pub(super) async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) {
    while let Some(frame) = frames.recv().await {
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}
