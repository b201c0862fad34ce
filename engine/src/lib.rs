//! The memory model: the SQLite store, the write path, the embedders, the recall arms,
//! fusion, the gate, the recall process, reconstruct and the trace.
//!
//! # Overview
//! [`Engine`] owns one SQLite file (the source of truth) and the index generations derived
//! from it. It is synchronous, speaks no MCP, runs no async runtime and reads no environment
//! variables: configuration arrives as typed values from the server. Its write methods are
//! named after CPersona's tools; each takes a plain request struct and returns an outcome
//! that serialises to the tool's response body.
#![forbid(unsafe_code)]

pub mod config;
pub mod embed;
pub mod error;
pub mod scope;
pub mod source;
pub mod text;
pub mod time;
pub mod vector;

pub mod store;

mod agent;
pub mod associations;
pub mod derived;
mod episodes;
mod memories;
mod portability;
mod profiles;
pub mod recall;
pub mod reconstruct;
pub mod trace;

pub use derived::{blocks, nodes};
pub use reconstruct::tokens;
pub use trace::{replay, taxonomy};

pub use agent::DeleteAgentDataOutcome;
pub use associations::{
    DISABLED_MESSAGE as ASSOCIATIONS_DISABLED, DeclareOutcome, DeclareRequest, DeclaredEntity,
    Dropped, EntityInput, RelationInput, Retracted, TraverseBounds, TraverseEntity,
    TraverseOutcome, TraverseRelation, TraverseRequest,
};
pub use config::{EmbeddingFormat, EngineConfig, ReconstructConfig};
pub use derived::{DerivedReport, StoredBlock};
pub use episodes::{
    ArchiveEpisodeOutcome, ArchiveEpisodeRequest, DeleteEpisodeOutcome, DeleteEpisodeRequest,
    EpisodeItem, ListEpisodesOutcome, ListEpisodesRequest,
};
pub use error::{Error, Result};
pub use memories::list::{ListMemoriesOutcome, ListMemoriesRequest, MemoryItem};
pub use memories::{
    DeleteMemoryOutcome, LockMemoryOutcome, MemoryIdRequest, StoreId, StoreOutcome, StoreRequest,
    StoreResult, TimestampAhead, UnlockMemoryOutcome, UpdateMemoryOutcome, UpdateMemoryRequest,
};
pub use portability::{
    ExportOutcome, ExportRequest, ImportOutcome, ImportRequest, MergeMode, MergeOutcome,
    MergeRequest,
};
pub use profiles::{GetProfileOutcome, UpdateProfileOutcome, UpdateProfileRequest};
pub use recall::arms::lexical::{CapActed, CapPolicy};
pub use recall::arms::probe::LexicalArms;
pub use recall::arms::vector::VectorTableReport;
pub use recall::precision::{PRESETS, PrecisionOutcome, precision_label};
pub use recall::stages::cue::{CueConfidence, TimeCue};
pub use recall::{
    CALIBRATION_SAMPLE_ROWS, CalibrationOutcome, MAX_MEMORIES, POOL_COUNT_CAP, PREFILTER_MIN_ROWS,
    RecallQuery, RecallResult, RecallTimings, SCORING_VERSION, VectorReport,
};
pub use reconstruct::mode::{ModeReport, ReconstructMode, TokenCapCut};
pub use reconstruct::read::GRAPH_ROW_CAP;
pub use reconstruct::stages::places::{Places, ProPlaces};
pub use reconstruct::{ReconstructRequest, ReconstructResult};
pub use scope::Scope;
pub use store::Engine;
pub use store::generations::blocks::{block_row_id, split_block_row_id};
pub use store::generations::{IndexStatus, IndexTable, RebuildOutcome, TableIndexStatus};
pub use store::pauses::{NoPersist, PauseOutcome, PersistenceStatus, ResumeOutcome};
pub use store::queue::{DrainOutcome, QueueStatus};
