//! Bounded caches that compute each entry once.
//!
//! Owns: [`OnceCache`], a small map from key to value that keeps its most recently used entries
//! and builds a missing one exactly once even when several callers ask for it at the same moment
//! (the late callers wait for that build, holding only the entry's own lock, never the cache's).
//! Never does: expiry by time, or anything about what is cached.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::sync::Locked;

/// One entry: filled once, by the first caller whose build succeeds.
type Slot<V> = Arc<Mutex<Option<V>>>;

/// At most `capacity` entries; the least recently used is evicted first (O(1) at the front of a
/// deque; a lookup scans the entries, so keep `capacity` small).
pub(crate) struct OnceCache<K, V> {
    entries: Mutex<VecDeque<(K, Slot<V>)>>,
    capacity: usize,
}

impl<K: PartialEq, V: Clone> OnceCache<K, V> {
    /// An empty cache of at most `capacity` entries (usable in a `static`).
    pub(crate) const fn new(capacity: usize) -> Self {
        OnceCache {
            entries: Mutex::new(VecDeque::new()),
            capacity,
        }
    }

    /// The value under `key`, built by `build` on first use and shared afterwards. A failed build
    /// leaves the entry empty: the next caller builds again.
    pub(crate) fn get_or_try_init<E>(
        &self,
        key: K,
        build: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let slot = self.slot(key);
        let mut value = slot.locked();
        if let Some(value) = value.as_ref() {
            return Ok(value.clone());
        }
        let built = build()?;
        *value = Some(built.clone());
        Ok(built)
    }

    /// [`OnceCache::get_or_try_init`] for a build that cannot fail.
    pub(crate) fn get_or_init(&self, key: K, build: impl FnOnce() -> V) -> V {
        match self.get_or_try_init(key, || Ok::<V, std::convert::Infallible>(build())) {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// The slot of `key`, made the most recently used; a new one (evicting the least recently
    /// used entry when full) when the key is absent.
    fn slot(&self, key: K) -> Slot<V> {
        let mut entries = self.entries.locked();
        match entries.iter().position(|(k, _)| *k == key) {
            Some(found) => {
                let slot = entries[found].1.clone();
                if found + 1 != entries.len()
                    && let Some(entry) = entries.remove(found)
                {
                    entries.push_back(entry);
                }
                slot
            }
            None => {
                if entries.len() >= self.capacity {
                    entries.pop_front();
                }
                let slot: Slot<V> = Arc::new(Mutex::new(None));
                entries.push_back((key, slot.clone()));
                slot
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn concurrent_callers_of_one_key_share_one_build() {
        let cache: OnceCache<u32, Arc<String>> = OnceCache::new(4);
        let builds = AtomicUsize::new(0);
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    barrier.wait();
                    let value = cache.get_or_init(7, || {
                        builds.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        Arc::new("seven".to_string())
                    });
                    assert_eq!(*value, "seven");
                });
            }
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_least_recently_used_entry_is_evicted_and_a_failed_build_is_retried() {
        let cache: OnceCache<u32, u32> = OnceCache::new(2);
        assert_eq!(cache.get_or_init(1, || 10), 10);
        assert_eq!(cache.get_or_init(2, || 20), 20);
        // 1 becomes the most recently used; adding 3 evicts 2.
        assert_eq!(cache.get_or_init(1, || 11), 10);
        assert_eq!(cache.get_or_init(3, || 30), 30);
        assert_eq!(cache.get_or_init(1, || 12), 10);
        assert_eq!(cache.get_or_init(2, || 21), 21);

        let failed: Result<u32, &str> = cache.get_or_try_init(9, || Err("no"));
        assert_eq!(failed, Err("no"));
        assert_eq!(cache.get_or_try_init(9, || Ok::<u32, &str>(90)), Ok(90));
        assert_eq!(cache.get_or_try_init(9, || Ok::<u32, &str>(91)), Ok(90));
    }
}
