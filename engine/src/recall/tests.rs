//! Unit tests of the recall stages, one module per stage.

mod fts_query;
mod fusion;
mod keyword;
