//! Unit tests of the recall stages, one module per stage.

mod calibrate;
mod candidate;
mod confidence;
mod config;
mod contents;
mod cue;
mod cue_spread;
mod deliberate;
mod excerpt;
mod fts_query;
mod fusion;
mod fusion_weights;
mod gate;
mod keyword;
mod pipeline;
mod prior;
mod recency;
mod select;
mod shape;
