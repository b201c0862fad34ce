//! The store-side recall arms: the vector arm over a generation plus the live tail, and the
//! lexical arms (FTS5 and the keyword fallback). They read SQLite and the index and return
//! ranked lists; they never fuse, gate or shape.

pub(crate) mod envelope;
pub(crate) mod lexical;
pub(crate) mod probe;
pub(crate) mod vector;
