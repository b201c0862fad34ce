//! The `cpersona` binary: an MCP memory server over stdio or streamable HTTP, and the
//! operator's CLI. A thin entry point; everything lives in the library.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    cpersona_server::cli::main()
}
