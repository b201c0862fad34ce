//! The query-vector cache: the vectors of recent recall queries, so a query asked again does
//! not pay its embedding again (a MiniLM forward pass, or an HTTP round trip to a remote
//! embedder). CPersona's embedding client keeps the same cache for single-text calls
//! (`CPERSONA_EMBEDDING_CACHE_SIZE`, 256 entries, least recently used out first;
//! `CPERSONA_EMBEDDING_CACHE_TTL`, 300 s), and so does this one. An entry is keyed by the
//! text and the embedder's model id and dimension, holds only a vector the embedder returned
//! (never an error), and expires after the TTL, which bounds how long a remote backend that
//! changed its model behind the same URL can go unnoticed, as in CPersona. Stored rows are
//! never embedded through it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::config::QueryCacheConfig;

/// The text, the model id and the dimension a vector answers for.
type Key = (String, String, usize);

/// The entries and the use clock that orders them.
type Entries = (HashMap<Key, Entry>, u64);

struct Entry {
    vector: Vec<f32>,
    stored: Instant,
    last_used: u64,
}

/// Recent query vectors, least recently used out first.
pub(crate) struct QueryVectors {
    config: QueryCacheConfig,
    entries: Mutex<Entries>,
}

impl QueryVectors {
    pub(crate) fn new(config: QueryCacheConfig) -> QueryVectors {
        QueryVectors {
            config,
            entries: Mutex::new((HashMap::new(), 0)),
        }
    }

    /// The vector of `text` under `model`/`dim`, from the cache when a live entry holds it,
    /// else from `embed` (then kept when it succeeded).
    pub(crate) fn get_or_embed(
        &self,
        text: &str,
        model: &str,
        dim: usize,
        embed: impl FnOnce() -> Result<Vec<f32>, String>,
    ) -> Result<Vec<f32>, String> {
        if self.config.entries == 0 {
            return embed();
        }
        let key = (text.to_owned(), model.to_owned(), dim);
        {
            let mut guard = self.lock();
            let (entries, clock) = &mut *guard;
            *clock += 1;
            let now = *clock;
            match entries.get_mut(&key) {
                Some(entry) if entry.stored.elapsed() <= self.config.ttl => {
                    entry.last_used = now;
                    return Ok(entry.vector.clone());
                }
                Some(_) => {
                    entries.remove(&key);
                }
                None => {}
            }
        }
        // Embedded outside the lock: a slow embedder never holds other recalls up.
        let vector = embed()?;
        let mut guard = self.lock();
        let (entries, clock) = &mut *guard;
        *clock += 1;
        let entry = Entry {
            vector: vector.clone(),
            stored: Instant::now(),
            last_used: *clock,
        };
        entries.insert(key, entry);
        while entries.len() > self.config.entries {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        Ok(vector)
    }

    /// Entries held now (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().0.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn counting(cache: &QueryVectors, text: &str, calls: &mut usize) -> Vec<f32> {
        cache
            .get_or_embed(text, "m", 2, || {
                *calls += 1;
                Ok(vec![text.len() as f32, 1.0])
            })
            .unwrap()
    }

    #[test]
    fn a_repeated_query_is_embedded_once_and_the_least_recent_leaves_first() {
        let cache = QueryVectors::new(QueryCacheConfig {
            entries: 2,
            ttl: Duration::from_secs(60),
        });
        let mut calls = 0;
        assert_eq!(counting(&cache, "a", &mut calls), vec![1.0, 1.0]);
        counting(&cache, "a", &mut calls);
        assert_eq!(calls, 1, "the second ask is a hit");
        counting(&cache, "bb", &mut calls);
        counting(&cache, "a", &mut calls); // "a" is now more recent than "bb"
        counting(&cache, "ccc", &mut calls); // evicts "bb"
        assert_eq!((calls, cache.len()), (3, 2));
        counting(&cache, "a", &mut calls);
        assert_eq!(calls, 3, "a stayed");
        counting(&cache, "bb", &mut calls);
        assert_eq!(calls, 4, "bb was evicted");
        // Another model's vector of the same text is another entry.
        let mut other = 0;
        cache
            .get_or_embed("a", "other-model", 2, || {
                other += 1;
                Ok(vec![0.0, 1.0])
            })
            .unwrap();
        assert_eq!(other, 1);
    }

    #[test]
    fn off_expired_or_failed_entries_embed_again() {
        let off = QueryVectors::new(QueryCacheConfig {
            entries: 0,
            ttl: Duration::from_secs(60),
        });
        let mut calls = 0;
        counting(&off, "a", &mut calls);
        counting(&off, "a", &mut calls);
        assert_eq!((calls, off.len()), (2, 0));
        let expiring = QueryVectors::new(QueryCacheConfig {
            entries: 8,
            ttl: Duration::ZERO,
        });
        let mut calls = 0;
        counting(&expiring, "a", &mut calls);
        std::thread::sleep(Duration::from_millis(2));
        counting(&expiring, "a", &mut calls);
        assert_eq!(calls, 2, "a TTL of 0 never answers from the cache");
        let failing = QueryVectors::new(QueryCacheConfig::default());
        assert!(
            failing
                .get_or_embed("a", "m", 2, || Err("down".into()))
                .is_err()
        );
        let mut calls = 0;
        counting(&failing, "a", &mut calls);
        assert_eq!(calls, 1, "an error was not kept");
    }
}
