//! The naive scalar reference every other kernel must equal exactly. It shares no code with
//! the fast paths and must never be "optimised": its only job is to be obviously right.

/// Naive int8 dot product, widened to i32 per element.
pub fn dot_i8_scalar(a: &[i8], b: &[i8]) -> i32 {
    let mut sum: i32 = 0;
    for i in 0..a.len().min(b.len()) {
        sum += i32::from(a[i]) * i32::from(b[i]);
    }
    sum
}

/// Naive Hamming distance: differing bits counted one bit at a time.
pub fn hamming_scalar(a: &[u64], b: &[u64]) -> u32 {
    let mut count: u32 = 0;
    for i in 0..a.len().min(b.len()) {
        let mut x = a[i] ^ b[i];
        while x != 0 {
            count += (x & 1) as u32;
            x >>= 1;
        }
    }
    count
}
