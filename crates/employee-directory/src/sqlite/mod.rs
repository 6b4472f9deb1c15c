//! SQLite backend: connection pool, migrations, seeding and queries.
//!
//! Everything SQLite-specific lives here; the PostgreSQL backend is its
//! sibling, `crate::postgres`, both behind [`crate::backend::Backend`].

pub(crate) mod bulk;
pub(crate) mod migrate;
mod pool;
mod queries;
mod reports;
mod roster;
mod row;
mod seed;
mod skills;
mod team;

use std::sync::Arc;

use serde::Serialize;

use chrono::NaiveDate;

use crate::error::{DirectoryError, UnavailableReason};
use crate::model::{
    CompensationBand, DepartmentRoster, EmployeeDetails, Health, LeaveBalance, LeaveType, Level,
    Report, ReportType, RosterQuery, SkillQuery, SkillSearch, TeamQuery, TeamRoster, Tenure,
};
use crate::options::DirectoryOptions;
use crate::read_cache::{Cached, Key, ReadCache, Stamp, found_skill};
pub(crate) use pool::Target;
use pool::{FileId, Pool};
use row::CachedRow;
use rusqlite::Connection;

/// Most connections a file database keeps open.
const MAX_CONNECTIONS: usize = 8;

/// A SQLite-backed directory.
pub(crate) struct SqliteBackend {
    pool: Arc<Pool>,
    /// Answers given without SQL while the directory is unchanged.
    cache: Arc<ReadCache>,
}

impl SqliteBackend {
    /// Opens the database, migrates it and seeds it if empty.
    pub(crate) async fn open(
        target: Target,
        options: DirectoryOptions,
    ) -> Result<SqliteBackend, DirectoryError> {
        if let Target::File(path) = &target {
            create_parent_dir(path)?;
        }
        let size = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_CONNECTIONS)
            .min(options.max_connections.max(1));
        let pool = Arc::new(Pool::new(target, size, options)?);
        let described = pool.describe();
        let demo_data = options.demo_data;
        let demo_employees = options.demo_employees;
        // The only place the file may be created: later connections refuse
        // a missing file instead of serving an empty database.
        let (migrated, seeded) = pool
            .bootstrap(move |conn| {
                let migrated = migrate::migrate(conn)?;
                let seeded = demo_data && seed::seed_if_empty(conn, demo_employees)?;
                if seeded {
                    // Move the freshly written pages from the WAL into the
                    // main file so the file is self-contained; not fatal.
                    if let Err(e) =
                        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                    {
                        tracing::warn!(error = %e, "WAL checkpoint after seeding failed");
                    }
                }
                Ok((migrated, seeded))
            })
            .await?;
        pool.pin_file()?;
        tracing::debug!(database = %described, migrated, seeded, "opened employee directory");
        Ok(SqliteBackend {
            pool,
            cache: Arc::new(ReadCache::new(options.cache_bytes)),
        })
    }

    /// The pinned database file (`None` in memory).
    pub(crate) fn pinned_file(&self) -> Option<Arc<crate::pinned::PinnedFile>> {
        self.pool.pinned()
    }

    /// Answers `key` from the cache while the directory is unchanged
    /// (steady state: one tiny read on the caller's thread, no hop to a
    /// blocking thread); otherwise runs `query` there and keeps its answer
    /// when `keep` says it found something.
    async fn cached<R, F>(
        &self,
        key: Key,
        keep: fn(&R) -> bool,
        query: F,
    ) -> Result<Cached<R>, DirectoryError>
    where
        F: FnOnce(&Connection) -> Result<R, DirectoryError> + Send + 'static,
        R: Serialize + Send + Sync + 'static,
    {
        if !self.cache.enabled() {
            return self.pool.run(move |c| query(c)).await.map(Cached::new);
        }
        let inline = self.pool.try_run_inline(|c, file| {
            let now = read_stamp(c, file)?;
            Ok(self.cache.get::<R>(now, &key))
        });
        if let Some(hit) = inline.transpose()?.flatten() {
            return Ok(hit);
        }
        let cache = Arc::clone(&self.cache);
        self.pool
            .run_on_file(move |c, file| {
                // The stamp is read before the data (see read_cache).
                let stamp = read_stamp(c, file)?;
                if let Some(hit) = cache.get::<R>(stamp, &key) {
                    return Ok(hit);
                }
                let answer = Cached::new(query(c)?);
                if keep(answer.get()) {
                    cache.put(stamp, key, &answer);
                }
                Ok(answer)
            })
            .await
    }

    pub(crate) async fn employee(
        &self,
        id: String,
    ) -> Result<Cached<Option<EmployeeDetails>>, DirectoryError> {
        let key = Key::Employee(id.clone());
        self.cached(key, Option::is_some, move |c| queries::employee(c, &id))
            .await
    }

    pub(crate) async fn department_roster(
        &self,
        id: String,
        q: RosterQuery,
        today: NaiveDate,
    ) -> Result<Cached<Option<DepartmentRoster>>, DirectoryError> {
        let key = Key::Department(id.clone(), q.clone(), today);
        self.cached(key, Option::is_some, move |c| {
            roster::department_roster(c, &id, &q, today)
        })
        .await
    }

    pub(crate) async fn tenure(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Cached<Option<Tenure>>, DirectoryError> {
        let key = Key::Tenure(id.clone(), today);
        self.cached(key, Option::is_some, move |c| {
            queries::tenure(c, &id, today)
        })
        .await
    }

    pub(crate) async fn team_page(
        &self,
        id: String,
        q: TeamQuery,
    ) -> Result<Cached<Option<TeamRoster>>, DirectoryError> {
        let key = Key::Team(id.clone(), q.clone());
        self.cached(key, Option::is_some, move |c| team::team_page(c, &id, &q))
            .await
    }

    pub(crate) async fn search_by_skill(
        &self,
        q: SkillQuery,
    ) -> Result<Cached<SkillSearch>, DirectoryError> {
        let key = Key::Skill(q.clone());
        self.cached(key, found_skill, move |c| skills::search(c, &q))
            .await
    }

    pub(crate) async fn compensation_band(
        &self,
        role: String,
        level: Level,
    ) -> Result<Cached<Option<CompensationBand>>, DirectoryError> {
        let key = Key::Band(role.clone(), level);
        self.cached(key, Option::is_some, move |c| {
            queries::compensation_band(c, &role, level)
        })
        .await
    }

    pub(crate) async fn role_levels(
        &self,
        role: String,
    ) -> Result<Cached<Option<Vec<Level>>>, DirectoryError> {
        let key = Key::RoleLevels(role.clone());
        self.cached(key, Option::is_some, move |c| {
            queries::role_levels(c, &role)
        })
        .await
    }

    pub(crate) async fn leave_balance(
        &self,
        id: String,
        leave_type: LeaveType,
        today: NaiveDate,
    ) -> Result<Cached<Option<LeaveBalance>>, DirectoryError> {
        let key = Key::Leave(id.clone(), leave_type, today);
        self.cached(key, Option::is_some, move |c| {
            queries::leave_balance(c, &id, leave_type, today)
        })
        .await
    }

    pub(crate) async fn report(
        &self,
        kind: ReportType,
        today: NaiveDate,
    ) -> Result<Cached<Report>, DirectoryError> {
        let key = Key::Report(kind, today);
        self.cached(key, |_| true, move |c| reports::report(c, kind, today))
            .await
    }

    pub(crate) async fn department_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(|c| queries::pairs(c, "SELECT id, name FROM departments ORDER BY name"))
            .await
    }

    pub(crate) async fn team_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(|c| queries::pairs(c, "SELECT id, name FROM teams ORDER BY name"))
            .await
    }

    pub(crate) async fn roles(&self) -> Result<Vec<String>, DirectoryError> {
        self.pool
            .run(|c| queries::strings(c, "SELECT title FROM roles ORDER BY title"))
            .await
    }

    pub(crate) async fn skills(&self) -> Result<Vec<String>, DirectoryError> {
        self.pool
            .run(|c| queries::strings(c, "SELECT name FROM skills ORDER BY name"))
            .await
    }

    pub(crate) async fn suggest_employees(
        &self,
        query: String,
        limit: u32,
    ) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(move |c| queries::suggest_employees(c, &query, limit))
            .await
    }

    pub(crate) async fn health(&self) -> Result<Health, DirectoryError> {
        self.pool.run(queries::health_mut).await
    }

    pub(crate) fn pool_stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }
}

/// The directory's state as seen by `conn`: one cached single-row
/// statement.
fn read_stamp(conn: &Connection, file: Option<FileId>) -> Result<Stamp, DirectoryError> {
    let generation = conn
        .cached_row(
            "SELECT n FROM directory_generation WHERE id = 1",
            [],
            |row| row.get(0),
        )
        .map_err(DirectoryError::db("read directory generation"))?;
    Ok(Stamp {
        source: file.map_or((0, 0), FileId::pair),
        generation,
    })
}

fn create_parent_dir(path: &std::path::Path) -> Result<(), DirectoryError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::create_dir_all(dir)
            .map_err(|e| {
                DirectoryError::unavailable(
                    UnavailableReason::Other,
                    format!(
                        "cannot create directory {} for the database: {e}",
                        dir.display()
                    ),
                )
            }),
        _ => Ok(()),
    }
}
