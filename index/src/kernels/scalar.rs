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

/// Naive batch dot: one [`dot_i8_scalar`] per row, rows `stride` bytes apart.
pub fn dot_i8_batch_scalar(query: &[i8], rows: &[i8], stride: usize, out: &mut [i32]) {
    super::check_dot_batch(query.len(), rows.len(), stride, out.len());
    for (r, o) in out.iter_mut().enumerate() {
        let start = r * stride;
        *o = dot_i8_scalar(query, &rows[start..start + query.len()]);
    }
}

/// Naive gathered dot: one [`dot_i8_scalar`] per listed row.
pub fn dot_i8_gather_scalar(
    query: &[i8],
    rows: &[i8],
    stride: usize,
    row_indices: &[u32],
    out: &mut [i32],
) {
    super::check_dot_gather(query.len(), rows.len(), stride, row_indices, out.len());
    for (i, o) in out.iter_mut().enumerate() {
        let start = row_indices[i] as usize * stride;
        *o = dot_i8_scalar(query, &rows[start..start + query.len()]);
    }
}

/// Naive batch Hamming: one [`hamming_scalar`] per row of `query.len()` words.
pub fn hamming_batch_scalar(query: &[u64], rows: &[u64], out: &mut [u32]) {
    let words = query.len();
    super::check_hamming_batch(words, rows.len(), out.len());
    for (r, o) in out.iter_mut().enumerate() {
        let start = r * words;
        *o = hamming_scalar(query, &rows[start..start + words]);
    }
}
