//! The SQL reads of `check_health`, one file per concern: the vector arm (`vectors.rs`), the
//! rows CPersona's checks look at (`rows.rs`), the FTS indexes (`fts.rs`), the calibration
//! table (`calibration.rs`) and the index generations and schema (`store.rs`). Each returns
//! the plain facts of `health/stages/facts.rs`; none judges. An agent filter of `""` reads
//! every agent (an operator's whole-store check, like `store_stats`).

pub(crate) mod calibration;
pub(crate) mod fts;
pub(crate) mod rows;
pub(crate) mod store;
pub(crate) mod vectors;

/// The SQL predicate for the agent filter bound as `?1`.
pub(crate) const AGENT: &str = "(?1 = '' OR agent_id = ?1)";

/// The tables with vectors, memories first.
pub(crate) const VECTOR_TABLES: [&str; 2] = ["memories", "episodes"];
