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
pub mod db;
pub mod embed;
pub mod error;
pub mod recall;
pub mod reconstruct;
pub mod replay;
pub mod scope;
pub mod source;
pub mod taxonomy;
pub mod text;
pub mod time;
pub mod tokens;
pub mod trace;
pub mod vector;

mod agent;
mod arm_probe;
mod arms;
pub mod associations;
mod block_index;
pub mod blocks;
mod calibration_engine;
mod derived;
mod engine;
mod episodes;
mod generations;
mod recall_credit;
mod recall_engine;
mod recall_facts;
mod reconstruct_engine;
mod reconstruct_mode;
mod reconstruct_places;
mod reconstruct_read;
pub use arm_probe::LexicalArms;
pub use arms::lexical::{CapActed, CapPolicy};
pub use arms::vector::VectorTableReport;
mod listing;
mod memories;
pub mod nodes;
mod persistence;
mod portability;
mod precision;
mod profiles;
mod queue;

pub use agent::DeleteAgentDataOutcome;
pub use associations::{
    DISABLED_MESSAGE as ASSOCIATIONS_DISABLED, DeclareOutcome, DeclareRequest, DeclaredEntity,
    Dropped, EntityInput, RelationInput, Retracted, TraverseBounds, TraverseEntity,
    TraverseOutcome, TraverseRelation, TraverseRequest,
};
pub use block_index::{block_row_id, split_block_row_id};
pub use config::{EmbeddingFormat, EngineConfig, ReconstructConfig};
pub use derived::{DerivedReport, StoredBlock};
pub use engine::Engine;
pub use episodes::{
    ArchiveEpisodeOutcome, ArchiveEpisodeRequest, DeleteEpisodeOutcome, DeleteEpisodeRequest,
    EpisodeItem, ListEpisodesOutcome, ListEpisodesRequest,
};
pub use error::{Error, Result};
pub use generations::{IndexStatus, IndexTable, RebuildOutcome, TableIndexStatus};
pub use listing::{ListMemoriesOutcome, ListMemoriesRequest, MemoryItem};
pub use memories::{
    DeleteMemoryOutcome, LockMemoryOutcome, MemoryIdRequest, StoreId, StoreOutcome, StoreRequest,
    StoreResult, TimestampAhead, UnlockMemoryOutcome, UpdateMemoryOutcome, UpdateMemoryRequest,
};
pub use persistence::{NoPersist, PauseOutcome, PersistenceStatus, ResumeOutcome};
pub use portability::{
    ExportOutcome, ExportRequest, ImportOutcome, ImportRequest, MergeMode, MergeOutcome,
    MergeRequest,
};
pub use precision::{PRESETS, PrecisionOutcome, precision_label};
pub use profiles::{GetProfileOutcome, UpdateProfileOutcome, UpdateProfileRequest};
pub use queue::{DrainOutcome, QueueStatus};
pub use recall::cue::{CueConfidence, TimeCue};
pub use recall_engine::{
    CALIBRATION_SAMPLE_ROWS, CalibrationOutcome, MAX_MEMORIES, POOL_COUNT_CAP, PREFILTER_MIN_ROWS,
    RecallQuery, RecallResult, RecallTimings, SCORING_VERSION, VectorReport,
};
pub use reconstruct_engine::{ReconstructRequest, ReconstructResult};
pub use reconstruct_mode::{ModeReport, ReconstructMode, TokenCapCut};
pub use reconstruct_places::{Places, ProPlaces};
pub use reconstruct_read::GRAPH_ROW_CAP;
pub use scope::Scope;
