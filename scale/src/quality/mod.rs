//! Retrieval quality on public data, the LMEB way: loaders that turn LoCoMo, TMD and any
//! BEIR-layout folder into one [`Dataset`] shape, the metric functions (NDCG@10 with binary
//! gains, Recall@k), an embedding cache keyed by model and text, Track A (the raw embedder,
//! exact f32 cosine) and Track B (the same vectors through `import_memories` and
//! `Engine::recall`), the three sets (development, validation, frozen holdout), and the
//! report. It must never read the environment, download anything or
//! change a ranking to suit a metric: the example `quality` picks datasets and embedders.

pub mod cache;
pub mod dates;
pub mod fusion_table;
pub mod load;
pub mod metrics;
pub mod report;
pub mod splits;
pub mod tracks;

#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;

/// What the quality harness can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what its layout says.
    #[error("{path}: {reason}")]
    Format {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] cpersona_engine::embed::EmbedError),
    /// The engine (import, index build or recall) failed.
    #[error(transparent)]
    Engine(#[from] cpersona_engine::Error),
    /// Track B lost rows or answered against the regime (a bound cut).
    #[error("track B: {0}")]
    Regime(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// One corpus row: a document (BEIR) or a conversation turn (LoCoMo, TMD).
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    /// The dataset's id for the row (a LoCoMo `dia_id`, a TMD `response_number`, a BEIR
    /// `_id`), unique within its group.
    pub id: String,
    /// The candidate set the row belongs to (one conversation); queries of a group rank
    /// only that group's rows.
    pub group: String,
    /// The text embedded and stored.
    pub text: String,
    /// Who said it, when the data says.
    pub speaker: Option<String>,
    /// When it was said (UTC ms), when the data says.
    pub at_ms: Option<i64>,
    /// The dataset's own words for when it was said (`"1:56 pm on 8 May, 2023"`), kept so a
    /// variant can put the date in the text (see [`Dataset::date_in_text`]).
    pub said_at: Option<String>,
}

/// One query with its relevant rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The dataset's id for the query.
    pub id: String,
    /// The candidate set it ranks ([`Doc::group`]).
    pub group: String,
    /// The subtask it is scored under (a task mean is the mean over its subtasks).
    pub subtask: String,
    /// The query text.
    pub text: String,
    /// Ids of the relevant rows of its group (binary gains).
    pub relevant: Vec<String>,
}

/// A task: its rows and queries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    /// Task name (`LoCoMo`, `TMD`, or the BEIR folder's name).
    pub task: String,
    /// Every row of every group.
    pub docs: Vec<Doc>,
    /// Queries with at least one relevant row present in their group.
    pub queries: Vec<Query>,
    /// Relevant ids that named no row (kept out of the scoring), for the report.
    pub dangling_relevant: usize,
    /// CPersona's published Track B NDCG@10 for all-MiniLM-L6-v2 (cpersona-2.5 §11.3).
    pub published_b_minilm: Option<f64>,
}

impl Dataset {
    /// The "date in the text" variant: each row's text becomes `[said_at] text`, and the task
    /// is renamed `<task>+dated`. LMEB's retrieval-format copies of LoCoMo/TMD (HuggingFace
    /// only, not obtainable here) may carry the date in the row text; this variant measures
    /// how much that alone would move the score. Rows without a date are left as they are.
    pub fn date_in_text(&mut self) {
        self.task = format!("{}+dated", self.task);
        for d in &mut self.docs {
            if let Some(when) = &d.said_at {
                d.text = format!("[{when}] {}", d.text);
            }
        }
    }

    /// Drops queries with no relevant row in their group, relevant ids that name no row,
    /// and counts what was dropped (a query without relevant rows is skipped, as LMEB does).
    pub fn prune(&mut self) {
        let known: std::collections::HashSet<(&str, &str)> = self
            .docs
            .iter()
            .map(|d| (d.group.as_str(), d.id.as_str()))
            .collect();
        let mut dangling = 0;
        for q in &mut self.queries {
            let before = q.relevant.len();
            q.relevant
                .retain(|r| known.contains(&(q.group.as_str(), r.as_str())));
            q.relevant.sort();
            q.relevant.dedup();
            dangling += before.saturating_sub(q.relevant.len());
        }
        self.dangling_relevant += dangling;
        self.queries.retain(|q| !q.relevant.is_empty());
    }

    /// Keeps the first `n` groups (candidate sets) in corpus order and their queries (0 =
    /// all): a smaller run when embedding is slow.
    pub fn keep_groups(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        let mut kept: Vec<String> = Vec::new();
        for d in &self.docs {
            if !kept.contains(&d.group) {
                if kept.len() == n {
                    break;
                }
                kept.push(d.group.clone());
            }
        }
        self.docs.retain(|d| kept.contains(&d.group));
        self.queries.retain(|q| kept.contains(&q.group));
    }

    /// Keeps the first `max` queries of each subtask (0 = all), for a quick run.
    pub fn cap_queries(&mut self, max: usize) {
        if max == 0 {
            return;
        }
        let mut seen: std::collections::HashMap<String, usize> = Default::default();
        self.queries.retain(|q| {
            let n = seen.entry(q.subtask.clone()).or_default();
            *n += 1;
            *n <= max
        });
    }
}
