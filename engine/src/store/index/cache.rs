//! The segment stores a [`Store`](crate::store::Store) holds open, per record table and keyed
//! by the embedder identity they were opened for. Its own module so the store's struct can name
//! it without importing the index code that imports the store.

use std::collections::HashMap;
use std::sync::Arc;

use cpersona_index::EmbedderIdentity;
use cpersona_index::segment::SegmentStore;

use crate::store::generations::IndexTable;

/// One table's segment store as opened for one embedder identity, or why it did not open.
pub(crate) struct SegmentSlot {
    pub(super) identity: EmbedderIdentity,
    pub(super) opened: std::result::Result<Arc<SegmentStore>, String>,
}

/// The opened segment stores per table.
pub(crate) type SegmentCache = HashMap<IndexTable, SegmentSlot>;
