//! A stand-in for the Hugging Face hub on 127.0.0.1: it serves the hub's URL layout
//! (`/{repo}/resolve/{revision}/{file}`) from a folder the test writes, answers the weights with
//! a redirect to a content-store path as the hub does, records each request (path and
//! `Authorization`), and can cut one file's transfer short to play a dropped connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cpersona_server::model::pins::DEFAULT_MODEL;

/// One request the fake hub answered.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
}

/// The running fake hub; its thread lives as long as the test binary.
pub(crate) struct FakeHub {
    /// `http://127.0.0.1:PORT`, what `HF_ENDPOINT` gets.
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The weights answer with a redirect, like the hub's LFS files.
const REDIRECTED: &str = "model.safetensors";
/// Where redirected files are served from.
const STORE_PREFIX: &str = "/store";

impl FakeHub {
    /// Serves the files under `root` (`root/{repo}/resolve/{revision}/{file}`); with `cut`,
    /// the file of that name is announced whole and sent only up to that many bytes.
    pub(crate) fn start(root: PathBuf, cut: Option<(&'static str, u64)>) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let base = url.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                // One connection at a time is all a sequential download needs; a broken one
                // must not stop the hub.
                let _ = answer(stream, &root, &base, cut, &log);
            }
        });
        FakeHub { url, seen }
    }

    /// The requests answered so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(
    mut stream: TcpStream,
    root: &Path,
    base: &str,
    cut: Option<(&str, u64)>,
    log: &Mutex<Vec<Seen>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_owned();
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            authorization = Some(value.trim().to_owned());
        }
    }
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        authorization,
    });
    if !path.starts_with(STORE_PREFIX) && path.ends_with(REDIRECTED) {
        let head = format!(
            "HTTP/1.1 302 Found\r\nLocation: {base}{STORE_PREFIX}{path}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        );
        return stream.write_all(head.as_bytes());
    }
    let relative = path.strip_prefix(STORE_PREFIX).unwrap_or(&path);
    let file = root.join(relative.trim_start_matches('/'));
    let Ok(bytes) = std::fs::read(&file) else {
        return stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bytes.len()
    );
    stream.write_all(head.as_bytes())?;
    let sent = match cut {
        Some((name, after)) if path.ends_with(name) => &bytes[..after as usize],
        _ => &bytes[..],
    };
    stream.write_all(sent)?;
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Both)
}

/// Lays out the pinned files of the default model under `root` as the hub's URLs name them,
/// from the test model folder (`CPERSONA_TEST_MODEL_DIR`, the wheel's files). `corrupt` names
/// a file written with one byte changed (same length).
pub(crate) fn lay_out(root: &Path, corrupt: Option<&str>) {
    let model_dir = crate::model::test_model_dir();
    let rev = root
        .join(DEFAULT_MODEL.repo)
        .join("resolve")
        .join(DEFAULT_MODEL.revision);
    for pin in DEFAULT_MODEL.files {
        let to = rev.join(pin.name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let from = model_dir.join(pin.name);
        if corrupt == Some(pin.name) {
            let mut bytes = std::fs::read(&from).unwrap();
            let last = bytes.len() - 2;
            bytes[last] ^= 0x01;
            std::fs::write(&to, bytes).unwrap();
        } else {
            crate::model::link_or_copy(&from, &to);
        }
    }
}
