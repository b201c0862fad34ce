//! The owner of a generation's bytes: a read-only memory map of the file, or an aligned copy
//! of a buffer (tests, fuzzing). One of the two places in the workspace allowed `unsafe`
//! (with `kernels/`); it must never hand out mutable access or map anything but a generation.

use std::fs::File;

/// The bytes of one generation, aligned to at least 64 bytes, immutable for their lifetime.
#[derive(Debug)]
pub(crate) struct GenerationBytes {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Mapped(memmap2::Mmap),
    /// 64-byte blocks so the start is aligned like a mapped page start; `len` is the real size.
    Owned {
        blocks: Vec<[u64; 8]>,
        len: usize,
    },
}

impl GenerationBytes {
    /// Maps `file` read-only.
    pub(crate) fn map(file: &File) -> std::io::Result<Self> {
        // SAFETY: memmap2 requires that the mapped file is not modified or truncated while the
        // map lives, or reads see torn data (and a truncation raises SIGBUS). Generation files
        // uphold that by contract: the writer builds a file under a temporary name, fsyncs it
        // and renames it into place, and no code ever opens a generation for writing after the
        // rename; a newer generation replaces the *name*, so this map keeps the old inode alive
        // and unchanged until it is dropped. A user editing the file by hand breaks the
        // contract; validation at open catches what was wrong then, nothing can catch it later.
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Self {
            inner: Inner::Mapped(map),
        })
    }

    /// Copies `bytes` into a 64-byte aligned buffer.
    pub(crate) fn copy_from(bytes: &[u8]) -> Self {
        let mut blocks = vec![[0u64; 8]; bytes.len().div_ceil(64)];
        let dst: &mut [u8] = bytemuck::cast_slice_mut(blocks.as_mut_slice());
        dst[..bytes.len()].copy_from_slice(bytes);
        Self {
            inner: Inner::Owned {
                blocks,
                len: bytes.len(),
            },
        }
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match &self.inner {
            Inner::Mapped(map) => map,
            Inner::Owned { blocks, len } => &bytemuck::cast_slice(blocks.as_slice())[..*len],
        }
    }
}
