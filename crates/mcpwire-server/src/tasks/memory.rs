//! The default task backend: a bounded map in process memory. Share one
//! [`MemoryTasks`] between several [`Server`](crate::Server)s of one
//! process and they see the same tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};
use tokio::sync::Notify;

use super::backend::{Settled, TaskBackend, TaskBackendError, TaskFuture, TaskRecord, TaskStatus};
use crate::sync::lock;

struct Entry {
    record: TaskRecord,
    /// When it expires: `ttl` after the last change.
    expires: Instant,
    /// Wakes the runner waiting in `wait_change`.
    changed: Arc<Notify>,
}

impl Entry {
    fn touch(&mut self, ttl: Duration) {
        self.record.updated = SystemTime::now();
        self.expires = Instant::now() + ttl;
        // `notify_one` keeps a permit: a change between the runner's read
        // and its wait is not lost.
        self.changed.notify_one();
    }
}

/// Task records in memory: a bounded map with TTL expiry.
#[derive(Default)]
pub struct MemoryTasks {
    entries: Mutex<HashMap<String, Entry>>,
}

impl MemoryTasks {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the live entry `id` (dropping it if expired).
    fn with<R>(&self, id: &str, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let mut entries = lock(&self.entries);
        let e = entries.get_mut(id)?;
        if e.expires <= Instant::now() {
            entries.remove(id);
            return None;
        }
        Some(f(e))
    }

    fn create_now(
        &self,
        id: &str,
        owner: Option<&str>,
        ttl: Duration,
        max_tasks: usize,
    ) -> Result<TaskRecord, TaskBackendError> {
        let mut entries = lock(&self.entries);
        let now = Instant::now();
        entries.retain(|_, e| e.expires > now);
        while entries.len() >= max_tasks.max(1) {
            let oldest = entries
                .iter()
                .filter(|(_, e)| e.record.status.is_terminal())
                .min_by_key(|(_, e)| e.record.updated)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    entries.remove(&id);
                }
                None => return Err(TaskBackendError::Full),
            }
        }
        let at = SystemTime::now();
        let record = TaskRecord {
            id: id.to_owned(),
            owner: owner.map(str::to_owned),
            status: TaskStatus::Working,
            created: at,
            updated: at,
            result: None,
            error: None,
            pending: Map::new(),
            answers: Map::new(),
            status_message: None,
        };
        let entry = Entry {
            record: record.clone(),
            expires: now + ttl,
            changed: Arc::new(Notify::new()),
        };
        entries.insert(id.to_owned(), entry);
        Ok(record)
    }

    /// How many records are held (for tests).
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn ready<'a, T: Send + 'a>(v: T) -> TaskFuture<'a, T> {
    Box::pin(std::future::ready(Ok(v)))
}

impl TaskBackend for MemoryTasks {
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
        max_tasks: usize,
    ) -> TaskFuture<'a, TaskRecord> {
        Box::pin(std::future::ready(
            self.create_now(id, owner, ttl, max_tasks),
        ))
    }

    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<TaskRecord>> {
        ready(self.with(id, |e| e.record.clone()))
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        responses: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        let found = self.with(id, |e| {
            let r = &mut e.record;
            if r.owner.as_deref() != owner {
                return false;
            }
            if r.status == TaskStatus::InputRequired {
                for (key, answer) in responses {
                    if r.pending.remove(key).is_some() {
                        r.answers.insert(key.clone(), answer.clone());
                    }
                }
                if r.pending.is_empty() {
                    r.status = TaskStatus::Working;
                }
                e.touch(ttl);
            }
            true
        });
        ready(found.unwrap_or(false))
    }

    fn cancel<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        let found = self.with(id, |e| {
            let r = &mut e.record;
            if r.owner.as_deref() != owner {
                return false;
            }
            if !r.status.is_terminal() {
                r.status = TaskStatus::Cancelled;
                r.pending.clear();
                r.answers.clear();
                e.touch(ttl);
            }
            true
        });
        ready(found.unwrap_or(false))
    }

    fn park<'a>(
        &'a self,
        id: &'a str,
        requests: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        let parked = self.with(id, |e| {
            let r = &mut e.record;
            if r.status.is_terminal() {
                return false;
            }
            r.status = TaskStatus::InputRequired;
            r.pending = requests.clone();
            r.answers = Map::new();
            e.touch(ttl);
            true
        });
        ready(parked.unwrap_or(false))
    }

    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> TaskFuture<'a, Option<Map<String, Value>>> {
        let taken = self.with(id, |e| {
            let r = &mut e.record;
            if r.status != TaskStatus::Working || r.answers.is_empty() {
                return None;
            }
            let answers = std::mem::take(&mut r.answers);
            e.touch(ttl);
            Some(answers)
        });
        ready(taken.flatten())
    }

    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        let set = self.with(id, |e| {
            if e.record.status.is_terminal() {
                return false;
            }
            e.record.status_message = message.map(str::to_owned);
            e.touch(ttl);
            true
        });
        ready(set.unwrap_or(false))
    }

    fn settle<'a>(&'a self, id: &'a str, outcome: Settled, ttl: Duration) -> TaskFuture<'a, ()> {
        self.with(id, |e| {
            let r = &mut e.record;
            if r.status.is_terminal() {
                return;
            }
            match outcome {
                Settled::Completed(result) => {
                    r.status = TaskStatus::Completed;
                    r.result = Some(result);
                }
                Settled::Failed(error) => {
                    r.status = TaskStatus::Failed;
                    r.error = Some(error);
                }
            }
            r.pending.clear();
            r.answers.clear();
            e.touch(ttl);
        });
        ready(())
    }

    fn wait_change<'a>(
        &'a self,
        id: &'a str,
        max: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        let changed = lock(&self.entries).get(id).map(|e| Arc::clone(&e.changed));
        Box::pin(async move {
            match changed {
                Some(n) => {
                    let _ = tokio::time::timeout(max, n.notified()).await;
                }
                None => tokio::time::sleep(max).await,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn records_expire() {
        let store = MemoryTasks::new();
        let short = Duration::from_millis(50);
        store.create("a", Some("alice"), short, 10).await.unwrap();
        assert!(store.get("a").await.unwrap().is_some());
        assert!(!store.cancel("a", Some("bob"), short).await.unwrap());
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(store.get("a").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_full_store_evicts_finished_tasks_first() {
        let store = MemoryTasks::new();
        store.create("a", None, TTL, 2).await.unwrap();
        store.create("b", None, TTL, 2).await.unwrap();
        assert!(matches!(
            store.create("c", None, TTL, 2).await,
            Err(TaskBackendError::Full)
        ));
        store
            .settle("a", Settled::Completed(Map::new()), TTL)
            .await
            .unwrap();
        store.create("c", None, TTL, 2).await.unwrap();
        assert!(store.get("a").await.unwrap().is_none());
        assert_eq!(store.len(), 2);
    }

    #[tokio::test]
    async fn answers_are_handed_over_once_nothing_is_pending() {
        let store = MemoryTasks::new();
        store.create("t", None, TTL, 10).await.unwrap();
        let mut requests = Map::new();
        requests.insert("x".into(), Value::Null);
        requests.insert("y".into(), Value::Null);
        assert!(store.park("t", &requests, TTL).await.unwrap());
        let mut one = Map::new();
        one.insert("x".into(), Value::from(1));
        assert!(store.answer("t", None, &one, TTL).await.unwrap());
        assert!(store.take_answers("t", TTL).await.unwrap().is_none());
        let mut two = Map::new();
        two.insert("y".into(), Value::from(2));
        store.answer("t", None, &two, TTL).await.unwrap();
        let answers = store.take_answers("t", TTL).await.unwrap().unwrap();
        assert_eq!(answers.len(), 2);
        assert!(store.take_answers("t", TTL).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_status_message_is_kept_until_cleared_and_not_after_the_end() {
        let store = MemoryTasks::new();
        store.create("t", None, TTL, 10).await.unwrap();
        assert!(
            store
                .get("t")
                .await
                .unwrap()
                .unwrap()
                .status_message
                .is_none()
        );
        assert!(
            store
                .set_status_message("t", Some("waiting"), TTL)
                .await
                .unwrap()
        );
        let r = store.get("t").await.unwrap().unwrap();
        assert_eq!(r.status_message.as_deref(), Some("waiting"));
        assert!(store.set_status_message("t", None, TTL).await.unwrap());
        assert!(
            store
                .get("t")
                .await
                .unwrap()
                .unwrap()
                .status_message
                .is_none()
        );
        store
            .settle("t", Settled::Completed(Map::new()), TTL)
            .await
            .unwrap();
        assert!(
            !store
                .set_status_message("t", Some("late"), TTL)
                .await
                .unwrap()
        );
        assert!(
            !store
                .set_status_message("nope", Some("x"), TTL)
                .await
                .unwrap()
        );
    }
}
