//! Reading a `text/event-stream` body as the streamable HTTP transport uses it: each event's
//! `data:` lines, joined by newlines, are one JSON-RPC message. Events are handed on as they
//! end (a blank line), so a progress notification reaches the client before the answer it
//! precedes. Comments, `event:`, `id:` and `retry:` fields carry nothing to relay; an event
//! without data (a server's priming event) is skipped.

use std::io::{self, BufRead};

/// Reads events from `input` until it ends, calling `on_data` with each event's data. A last
/// event cut off by the end of the stream is handed on too: it may be the whole answer.
pub(super) fn read_events<R: BufRead>(
    mut input: R,
    mut on_data: impl FnMut(&str),
) -> io::Result<()> {
    let mut data = String::new();
    let mut has_data = false;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        let text = line.trim_end_matches('\n').trim_end_matches('\r');
        if text.is_empty() {
            if has_data {
                on_data(&data);
            }
            data.clear();
            has_data = false;
            continue;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text, ""),
        };
        if field == "data" {
            if has_data {
                data.push('\n');
            }
            data.push_str(value);
            has_data = true;
        }
    }
    if has_data {
        on_data(&data);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::read_events;

    fn events(stream: &str) -> Vec<String> {
        let mut out = Vec::new();
        read_events(stream.as_bytes(), |data| out.push(data.to_owned())).unwrap();
        out
    }

    #[test]
    fn each_event_is_its_data_lines_joined() {
        let stream = ": comment\nid: 1\nevent: message\ndata: {\"a\":\ndata:1}\n\n\
                      id: 2\nretry: 100\n\ndata: {\"b\":2}\r\n\r\ndata: last";
        assert_eq!(events(stream), ["{\"a\":\n1}", "{\"b\":2}", "last"]);
    }

    #[test]
    fn an_event_without_data_is_skipped_and_empty_data_is_kept() {
        assert_eq!(events("id: 0\n\n"), Vec::<String>::new());
        assert_eq!(events("data:\n\n"), [""]);
    }
}
