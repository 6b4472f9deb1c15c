//! Answers of read queries, kept while the directory does not change: the
//! in-memory read model of the directory, filled on demand.
//!
//! Exactness: a backend reads the directory's [`Stamp`] (the generation
//! counter that triggers bump in every transaction changing a directory
//! table, migration 0003, plus which database file it is) *before* the
//! data, and an answer is kept under that stamp. Data newer than its stamp
//! only makes the entry unreachable (the counter has moved past the stamp),
//! never stale. Every lookup reads the current stamp first; the whole cache
//! starts over when it moves. The audit trail's commits do not touch the
//! counter, so they do not empty the cache.
//!
//! Bound: entries are weighed by the length of their JSON (what the tools
//! send, and about what they take in memory); past the budget the cache
//! starts over, so a client asking for many different things costs memory
//! up to the budget and then only cache misses. Answers that found nothing
//! are not kept (junk ids would fill the cache for nothing).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use chrono::NaiveDate;
use serde::Serialize;

use crate::model::{LeaveType, Level, ReportType, RosterQuery, SkillQuery, SkillSearch, TeamQuery};

/// Default budget of the cache, in estimated bytes held (four per byte of
/// an answer's JSON): the whole seeded directory's profiles (about
/// 1,400 × 4 KB of JSON) and rosters fit.
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Bytes held per byte of an answer's JSON: the answer itself, plus what
/// callers derive from it and keep beside it (a tool output serialised
/// once, and its finished result with the text mirror escaped).
const HELD_PER_JSON_BYTE: usize = 4;

/// The state of the directory an answer was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Which database: a SQLite file's device and inode (a replaced or
    /// restored file is another source), 0 for a server database.
    pub(crate) source: (u64, u64),
    /// The directory's generation counter.
    pub(crate) generation: i64,
}

/// A read query and its arguments, exactly as the caller gave them (the
/// same employee asked by id and by name are two entries).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Employee(String),
    Department(String, RosterQuery, NaiveDate),
    Tenure(String, NaiveDate),
    Team(String, TeamQuery),
    Skill(SkillQuery),
    Band(String, Level),
    RoleLevels(String),
    Leave(String, LeaveType, NaiveDate),
    Report(ReportType, NaiveDate),
}

impl Key {
    /// Bytes the key itself takes, roughly.
    fn weight(&self) -> usize {
        let text = match self {
            Key::Employee(s)
            | Key::Tenure(s, _)
            | Key::Band(s, _)
            | Key::RoleLevels(s)
            | Key::Leave(s, _, _) => s.len(),
            Key::Report(..) => 0,
            Key::Skill(q) => {
                let after = q
                    .after
                    .as_ref()
                    .map_or(0, |p| p.skill.len() + p.employee_id.len());
                q.skill.len() + after
            }
            Key::Team(s, q) => {
                let after = q
                    .after
                    .as_ref()
                    .map_or(0, |p| p.name.len() + p.employee_id.len());
                s.len() + after
            }
            Key::Department(s, q, _) => {
                let after = q.after.as_ref().map_or(0, |p| {
                    p.employee_id.len() + p.team_id.as_ref().map_or(0, String::len)
                });
                s.len() + q.team.as_ref().map_or(0, String::len) + after
            }
        };
        text + 64
    }
}

/// A skill search is kept when it matched a skill (any string can be
/// searched for; junk would fill the cache for nothing).
pub(crate) fn found_skill(search: &SkillSearch) -> bool {
    !search.matched_skills.is_empty()
}

/// An answer of the directory. A cached one is shared by every lookup
/// it answers (a hit copies nothing), with what callers derived from it.
pub struct Cached<T> {
    slot: Arc<Slot<T>>,
}

struct Slot<T> {
    value: T,
    /// The first [`Cached::derived`] value, kept as long as the answer.
    derived: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl<T> Cached<T> {
    /// An answer not (yet) shared.
    pub(crate) fn new(value: T) -> Cached<T> {
        Cached {
            slot: Arc::new(Slot {
                value,
                derived: OnceLock::new(),
            }),
        }
    }

    /// The answer.
    pub fn get(&self) -> &T {
        &self.slot.value
    }

    /// `derive(answer)`, computed once per kept answer: later lookups that
    /// hit the same answer get a clone of the first result (give a cheap
    /// handle, e.g. an `Arc`). One derived value per answer; a derivation
    /// of another type is computed anew each time.
    pub fn derived<U>(&self, derive: impl FnOnce(&T) -> U) -> U
    where
        U: Clone + Send + Sync + 'static,
    {
        if let Some(kept) = self.slot.derived.get() {
            if let Some(u) = kept.downcast_ref::<U>() {
                return u.clone();
            }
            return derive(&self.slot.value);
        }
        let u = derive(&self.slot.value);
        // A concurrent first derivation may win; both are equal.
        let _ = self.slot.derived.set(Arc::new(u.clone()));
        u
    }
}

impl<T: Clone> Cached<T> {
    /// The answer as an owned value (copied when it is shared).
    pub fn into_owned(self) -> T {
        match Arc::try_unwrap(self.slot) {
            Ok(slot) => slot.value,
            Err(shared) => shared.value.clone(),
        }
    }
}

impl<T> std::ops::Deref for Cached<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.get()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Cached<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// Kept answers, all read at one stamp.
pub(crate) struct ReadCache {
    budget: usize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    stamp: Option<Stamp>,
    /// Each value is the `Slot` of the answer type its key's variant
    /// implies.
    map: HashMap<Key, Arc<dyn Any + Send + Sync>>,
    bytes: usize,
}

impl ReadCache {
    /// A cache holding up to `budget` bytes of JSON; 0 keeps nothing.
    pub(crate) fn new(budget: usize) -> ReadCache {
        ReadCache {
            budget,
            entries: Mutex::default(),
        }
    }

    /// Whether anything can be kept (lookups are skipped otherwise).
    pub(crate) fn enabled(&self) -> bool {
        self.budget > 0
    }

    /// The answer kept for `key`, if it was read at `now`.
    pub(crate) fn get<T: Send + Sync + 'static>(&self, now: Stamp, key: &Key) -> Option<Cached<T>> {
        let entries = self.lock();
        if entries.stamp != Some(now) {
            return None;
        }
        let slot = Arc::clone(entries.map.get(key)?);
        drop(entries);
        slot.downcast::<Slot<T>>().ok().map(|slot| Cached { slot })
    }

    /// Keeps `answer`, read after `stamp` was, for `key`.
    pub(crate) fn put<T>(&self, stamp: Stamp, key: Key, answer: &Cached<T>)
    where
        T: Serialize + Send + Sync + 'static,
    {
        if !self.enabled() {
            return;
        }
        // Weighed outside the lock; a value that cannot be written as JSON
        // is not kept (the tool could not send it either).
        let Ok(json) = serde_json::to_vec(answer.get()) else {
            return;
        };
        let weight = json.len() * HELD_PER_JSON_BYTE + key.weight();
        if weight > self.budget {
            return;
        }
        let mut entries = self.lock();
        if entries.stamp != Some(stamp) {
            // Older or newer than what is kept: start over at this stamp
            // (a newer lookup that misses will replace it again).
            *entries = Entries {
                stamp: Some(stamp),
                ..Entries::default()
            };
        }
        if entries.bytes + weight > self.budget {
            entries.map.clear();
            entries.bytes = 0;
        }
        let slot: Arc<dyn Any + Send + Sync> = answer.slot.clone();
        if entries.map.insert(key, slot).is_none() {
            entries.bytes += weight;
        }
    }

    /// Bytes of JSON held now (for tests).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.lock().bytes
    }

    /// The map is valid even if a holder panicked.
    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(generation: i64) -> Stamp {
        Stamp {
            source: (1, 2),
            generation,
        }
    }

    fn team(id: &str) -> Key {
        Key::Team(id.to_owned(), TeamQuery::first(20))
    }

    #[test]
    fn answers_only_at_the_stamp_it_was_read_at() {
        let cache = ReadCache::new(1 << 20);
        cache.put(at(1), team("backend"), &Cached::new(vec!["a".to_owned()]));
        assert_eq!(
            cache
                .get::<Vec<String>>(at(1), &team("backend"))
                .map(Cached::into_owned),
            Some(vec!["a".to_owned()])
        );
        assert_eq!(
            cache
                .get::<Vec<String>>(at(2), &team("backend"))
                .map(Cached::into_owned),
            None
        );
        let elsewhere = Stamp {
            source: (1, 3),
            generation: 1,
        };
        assert_eq!(
            cache
                .get::<Vec<String>>(elsewhere, &team("backend"))
                .map(Cached::into_owned),
            None
        );
        // A wrong type for the key is a miss, not a panic.
        assert_eq!(
            cache
                .get::<u32>(at(1), &team("backend"))
                .map(Cached::into_owned),
            None
        );
    }

    #[test]
    fn a_new_stamp_drops_everything_older() {
        let cache = ReadCache::new(1 << 20);
        cache.put(at(1), team("a"), &Cached::new(1u32));
        cache.put(at(2), team("b"), &Cached::new(2u32));
        assert_eq!(
            cache.get::<u32>(at(2), &team("a")).map(Cached::into_owned),
            None
        );
        assert_eq!(
            cache.get::<u32>(at(2), &team("b")).map(Cached::into_owned),
            Some(2)
        );
    }

    #[test]
    fn the_budget_bounds_what_is_held() {
        let value = "x".repeat(1000);
        let cache = ReadCache::new(10_000);
        for i in 0..100 {
            cache.put(at(1), team(&format!("t{i}")), &Cached::new(value.clone()));
            assert!(cache.held() <= 10_000, "held {}", cache.held());
        }
        // The last one is always there.
        assert!(
            cache
                .get::<String>(at(1), &team("t99"))
                .map(Cached::into_owned)
                .is_some()
        );
        // Bigger than the budget: not kept at all.
        cache.put(at(1), team("big"), &Cached::new("y".repeat(20_000)));
        assert_eq!(
            cache
                .get::<String>(at(1), &team("big"))
                .map(Cached::into_owned),
            None
        );
        let off = ReadCache::new(0);
        off.put(at(1), team("a"), &Cached::new(1u32));
        assert!(off.get::<u32>(at(1), &team("a")).is_none());
    }

    #[test]
    fn a_hit_shares_the_answer_and_what_was_derived_from_it() {
        let cache = ReadCache::new(1 << 20);
        cache.put(at(1), team("a"), &Cached::new("answer".to_owned()));
        let first = cache.get::<String>(at(1), &team("a")).unwrap();
        let second = cache.get::<String>(at(1), &team("a")).unwrap();
        assert!(std::ptr::eq(first.get(), second.get()), "not copied");
        let made = first.derived(|s| Arc::new(s.len()));
        let again = second.derived(|_| Arc::new(0usize));
        assert!(Arc::ptr_eq(&made, &again), "derived once");
        // Another type is derived anew, not stored over the first.
        assert_eq!(second.derived(|s| s.to_uppercase()), "ANSWER");
        assert_eq!(*second.derived(|_| Arc::new(1usize)), 6);
    }
}
