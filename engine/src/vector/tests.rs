//! Blob encoding and base64 round trips.

use proptest::prelude::*;

use super::*;

#[test]
fn wrong_dimension_and_non_finite_are_refused() {
    let err = encode(&[1.0, 2.0], 3, EmbeddingFormat::F32).unwrap_err();
    assert!(matches!(
        err,
        Error::WrongDimension {
            expected: 3,
            received: 2
        }
    ));
    let err = encode(&[1.0, f32::NAN], 2, EmbeddingFormat::F32).unwrap_err();
    assert!(matches!(err, Error::NonFiniteEmbedding { position: 1 }));
}

#[test]
fn f32_blob_is_little_endian() {
    let blob = encode(&[1.0], 1, EmbeddingFormat::F32).unwrap();
    assert_eq!(blob, vec![0x00, 0x00, 0x80, 0x3f]);
    assert_eq!(decode(&blob, EmbeddingFormat::F32).unwrap(), vec![1.0]);
    assert!(decode(&blob[..3], EmbeddingFormat::F32).is_none());
}

#[test]
fn base64_matches_python() {
    assert_eq!(base64_encode(b""), "");
    assert_eq!(base64_encode(b"f"), "Zg==");
    assert_eq!(base64_encode(b"fo"), "Zm8=");
    assert_eq!(base64_encode(b"foo"), "Zm9v");
    assert_eq!(base64_encode(&[0, 0, 128, 63]), "AACAPw==");
    assert!(base64_decode("Zm9v!").is_none());
}

proptest! {
    #[test]
    fn base64_round_trips(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(base64_decode(&base64_encode(&bytes)).unwrap(), bytes);
    }

    #[test]
    fn f16_round_trip_is_close(values in prop::collection::vec(-1.0f32..1.0, 1..32)) {
        let blob = encode(&values, values.len(), EmbeddingFormat::F16).unwrap();
        prop_assert_eq!(blob.len(), values.len() * 2);
        let back = decode(&blob, EmbeddingFormat::F16).unwrap();
        for (a, b) in values.iter().zip(&back) {
            prop_assert!((a - b).abs() < 1e-3);
        }
    }
}
