//! MCP over stdin/stdout. Under this transport stdout carries only JSON-RPC: every log line
//! goes to stderr, and nothing here may print.
//!
//! Stdin passes through one check before rmcp sees it: a line that spells a lone UTF-16
//! surrogate (`\ud800` without its pair) cannot become a Rust string, and rmcp's codec would
//! drop it without a reply, leaving the client waiting. Such a line is answered here with a
//! JSON-RPC parse error (-32700) carrying the request's id when one can be read, and never
//! reaches a tool. Every frame, rmcp's and ours, is written to stdout whole, one per line.

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::mcp::McpServer;

/// Bytes buffered between the line filter and rmcp in each direction.
const PIPE_BYTES: usize = 1 << 16;

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
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (frames_tx, frames_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(write_frames(frames_rx, output));
    let reader = tokio::spawn(filter_input(input, to_rmcp, frames_tx.clone()));
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

/// Reads `input` line by line: a line with a lone surrogate is answered on `frames` with a
/// parse error; every other line goes to rmcp unchanged. EOF closes rmcp's input.
async fn filter_input<R, W>(input: R, mut to_rmcp: W, frames: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(reply) = lone_surrogate_reply(&line) {
            tracing::debug!("answered a request that spells a lone surrogate");
            if frames.send(reply).is_err() {
                break;
            }
            continue;
        }
        if to_rmcp.write_all(&line).await.is_err() || to_rmcp.flush().await.is_err() {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Sends each line rmcp writes to the writer as one frame.
async fn forward_lines<R: AsyncRead + Unpin>(from_rmcp: R, frames: mpsc::UnboundedSender<Vec<u8>>) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if frames.send(line).is_err() {
            break;
        }
    }
}

/// Writes whole frames to `output`, flushing after each, until every sender is gone.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
) {
    while let Some(frame) = frames.recv().await {
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

/// The JSON-RPC parse error for `line` when it spells a lone surrogate, else `None`.
pub(crate) fn lone_surrogate_reply(line: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    let repaired = replace_lone_surrogates(text)?;
    // The id, when the rest of the line is JSON-RPC, so the client can match the answer.
    let id = serde_json::from_str::<Value>(&repaired)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .filter(|id| id.is_string() || id.is_number())
        .unwrap_or(Value::Null);
    let reply = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32700,
            "message": "Parse error: the request spells a lone UTF-16 surrogate (a \\ud800-\\udfff \
                        escape without its pair), which is not text; nothing was run. Send valid \
                        Unicode.",
        },
    });
    let mut bytes = reply.to_string().into_bytes();
    bytes.push(b'\n');
    Some(bytes)
}

/// `text` with each `\uXXXX` escape of an unpaired surrogate inside a JSON string replaced by
/// `\ufffd`; `None` when there is none (the common case, decided without allocating).
fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if !bytes.windows(2).any(|w| w == b"\\u") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut in_string = false;
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !in_string {
            in_string = b == b'"';
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                i += 1;
            }
            b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                let unit = hex4(bytes, i + 2);
                match unit {
                    Some(0xD800..=0xDBFF) => {
                        let lo = (bytes.get(i + 6) == Some(&b'\\')
                            && bytes.get(i + 7) == Some(&b'u'))
                        .then(|| hex4(bytes, i + 8))
                        .flatten();
                        if matches!(lo, Some(0xDC00..=0xDFFF)) {
                            i += 12;
                        } else {
                            out.push_str(&text[copied..i]);
                            out.push_str("\\ufffd");
                            found = true;
                            i += 6;
                            copied = i;
                        }
                    }
                    Some(0xDC00..=0xDFFF) => {
                        out.push_str(&text[copied..i]);
                        out.push_str("\\ufffd");
                        found = true;
                        i += 6;
                        copied = i;
                    }
                    _ => i += 2,
                }
            }
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    if !found {
        return None;
    }
    out.push_str(&text[copied.min(text.len())..]);
    Some(out)
}

/// The value of four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Option<Value> {
        lone_surrogate_reply(line.as_bytes()).map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn a_lone_surrogate_gets_a_parse_error_with_the_request_id() {
        let r = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"content":"a \ud800 b"}}}"#)
            .unwrap();
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], -32700);
        let r = reply(r#"{"id":"x","p":"\uDC01"}"#).unwrap();
        assert_eq!(r["id"], "x");
        // A high half at the very end of a string, and one followed by another high half.
        assert!(reply(r#"{"p":"\ud800"}"#).is_some());
        assert!(reply(r#"{"p":"\ud800\ud800\udc00"}"#).is_some());
        // Not JSON-RPC around it: still answered, with a null id.
        assert_eq!(reply(r#"{"p":"\ud800""#).unwrap()["id"], Value::Null);
    }

    #[test]
    fn valid_lines_pass_untouched() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"p":"\ud83d\ude00 paired"}"#,
            r#"{"p":"\\ud800 is an escaped backslash, not an escape"}"#,
            r#"{"p":"\u00e9\n\"quoted\" \\"}"#,
            r#"{"p":"\\\ud83d\ude00"}"#,
            "{\"p\":\"caf\u{e9}\"}",
        ] {
            assert!(reply(line).is_none(), "{line}");
        }
        // Text outside strings is not read as escapes.
        assert!(replace_lone_surrogates(r#"{"a":1}\ud800"#).is_none());
    }
}
