//! PostgreSQL backend: pool, migrations, seeding and queries, answering
//! exactly like the SQLite backend (the directory tests run on both and
//! compare every API's output).
//!
//! Several servers may share one database: the first to start migrates and
//! seeds it under an advisory lock; later ones find it current and only
//! read.

mod migrate;
mod pool;
mod queries;
mod reports;
mod roster;
pub(crate) mod row;
mod seed;
mod skills;
mod team;
mod watch;

use chrono::NaiveDate;
use tracing::Instrument;

use crate::error::{DirectoryError, UnavailableReason};
use crate::model::{
    CompensationBand, DepartmentRoster, EmployeeDetails, Health, LeaveBalance, LeaveType, Level,
    Report, ReportType, RosterQuery, SkillQuery, SkillSearch, TeamQuery, TeamRoster, Tenure,
};
use crate::options::DirectoryOptions;
use crate::read_cache::{Cached, Key, ReadCache, Stamp, found_skill};
use crate::trace::query_span;
use pool::{PgPool, is_connection_lost};
use serde::Serialize;

/// This backend's `db.system.name` in query spans.
const DB_SYSTEM: &str = "postgresql";

/// Runs `$body` with `$c: &ClientWrapper` from the pool, bounded in time;
/// retried once on a fresh connection when the first one was lost (server
/// restarted): every query is a read, so a retry is safe.
macro_rules! with_client {
    ($self:ident, $c:ident => $body:expr) => {{
        let mut retried = false;
        loop {
            let result = async {
                let client = $self.pool.get().await?;
                let $c: &deadpool_postgres::ClientWrapper = &client;
                $self.pool.bounded($body).await
            }
            .instrument(query_span(DB_SYSTEM))
            .await;
            match result {
                Err(e) if !retried && is_connection_lost(&e) => {
                    tracing::debug!(error = %e, "retrying on a new PostgreSQL connection");
                    retried = true;
                }
                other => break other,
            }
        }
    }};
}

/// Like `with_client!`, answered from the read cache while the directory
/// is unchanged: `$keep` says whether an answer found something worth
/// keeping (see [`cached`]). While the generation listener vouches for the
/// stamp, a hit takes no connection and sends nothing.
macro_rules! cached {
    ($self:ident, $key:expr, $keep:expr, $c:ident => $body:expr) => {{
        let key: Key = $key;
        if !$self.cache.enabled() {
            with_client!($self, $c => $body).map(Cached::new)
        } else if let Some(hit) = $self.hit(&key) {
            Ok(hit)
        } else {
            with_client!($self, $c => cached(&$self.cache, $self.watch.watched.stamp(), $c, key.clone(), $keep, $body))
        }
    }};
}

/// A PostgreSQL-backed directory.
pub(crate) struct PostgresBackend {
    pool: PgPool,
    /// Answers kept while the directory is unchanged.
    cache: ReadCache,
    /// The generation as announced (no query per call while it is known).
    watch: watch::Watch,
}

/// The stamp (`known` from the listener, else read now), then the cached
/// answer or `query`'s. The stamp is taken first, so an answer is never
/// kept under a generation older than its data (see `read_cache`); `query`
/// is a future not yet started, so a hit runs nothing else.
async fn cached<R>(
    cache: &ReadCache,
    known: Option<Stamp>,
    c: &deadpool_postgres::ClientWrapper,
    key: Key,
    keep: fn(&R) -> bool,
    query: impl Future<Output = Result<R, DirectoryError>>,
) -> Result<Cached<R>, DirectoryError>
where
    R: Serialize + Send + Sync + 'static,
{
    let stamp = match known {
        Some(stamp) => stamp,
        None => read_stamp(c).await?,
    };
    if let Some(hit) = cache.get::<R>(stamp, &key) {
        return Ok(hit);
    }
    let answer = Cached::new(query.await?);
    if keep(answer.get()) {
        cache.put(stamp, key, &answer);
    }
    Ok(answer)
}

/// The generation and database, read on `c` (no listener vouching).
async fn read_stamp(c: &deadpool_postgres::ClientWrapper) -> Result<Stamp, DirectoryError> {
    const CONTEXT: &str = "read directory generation";
    let row = queries::row_opt(c, CONTEXT, watch::STAMP, &[])
        .await?
        .ok_or_else(|| {
            DirectoryError::unavailable(
                UnavailableReason::NotEmployeeDatabase,
                "directory_generation has no row (migration 0003 inserts it): restore it with \
             INSERT INTO directory_generation (id, n) VALUES (1, 0)"
                    .to_owned(),
            )
        })?;
    let generation: i64 = row.try_get(0).map_err(DirectoryError::pg(CONTEXT))?;
    let database: i64 = row.try_get(1).map_err(DirectoryError::pg(CONTEXT))?;
    Ok(Stamp {
        source: (database.cast_unsigned(), 0),
        generation,
    })
}

impl PostgresBackend {
    /// Connects, migrates and seeds if needed.
    pub(crate) async fn open(
        url: &str,
        options: DirectoryOptions,
    ) -> Result<PostgresBackend, DirectoryError> {
        let pool = PgPool::new(url, &options)?;
        let mut client = pool.get().await?;
        let bootstrap = migrate::bootstrap(&mut client, options.demo_data, options.demo_employees);
        let (migrated, seeded) = tokio::time::timeout(migrate::MIGRATION_TIMEOUT, bootstrap)
            .await
            .map_err(|_| {
                DirectoryError::unavailable(
                    UnavailableReason::TimedOut,
                    format!(
                        "migrating or seeding PostgreSQL at {} took over {} s",
                        pool.target(),
                        migrate::MIGRATION_TIMEOUT.as_secs()
                    ),
                )
            })??;
        drop(client);
        tracing::debug!(database = %pool.target(), migrated, seeded, "opened employee directory");
        // Only a cache needs the generation.
        let watch = watch::Watch::start(pool.config().clone(), options.cache_bytes > 0);
        Ok(PostgresBackend {
            pool,
            cache: ReadCache::new(options.cache_bytes),
            watch,
        })
    }

    /// The kept answer for `key`, when the listener vouches for the stamp.
    fn hit<R: Send + Sync + 'static>(&self, key: &Key) -> Option<Cached<R>> {
        self.cache.get(self.watch.watched.stamp()?, key)
    }

    pub(crate) async fn employee(
        &self,
        id: String,
    ) -> Result<Cached<Option<EmployeeDetails>>, DirectoryError> {
        cached!(self, Key::Employee(id.clone()), Option::is_some, c => queries::employee(c, &id))
    }

    pub(crate) async fn department_roster(
        &self,
        id: String,
        q: RosterQuery,
        today: NaiveDate,
    ) -> Result<Cached<Option<DepartmentRoster>>, DirectoryError> {
        cached!(self, Key::Department(id.clone(), q.clone(), today), Option::is_some, c => roster::department_roster(c, &id, &q, today))
    }

    pub(crate) async fn tenure(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Cached<Option<Tenure>>, DirectoryError> {
        cached!(self, Key::Tenure(id.clone(), today), Option::is_some, c => queries::tenure(c, &id, today))
    }

    pub(crate) async fn team_page(
        &self,
        id: String,
        q: TeamQuery,
    ) -> Result<Cached<Option<TeamRoster>>, DirectoryError> {
        cached!(self, Key::Team(id.clone(), q.clone()), Option::is_some, c => team::team_page(c, &id, &q))
    }

    pub(crate) async fn search_by_skill(
        &self,
        q: SkillQuery,
    ) -> Result<Cached<SkillSearch>, DirectoryError> {
        cached!(self, Key::Skill(q.clone()), found_skill, c => skills::search(c, &q))
    }

    pub(crate) async fn compensation_band(
        &self,
        role: String,
        level: Level,
    ) -> Result<Cached<Option<CompensationBand>>, DirectoryError> {
        cached!(self, Key::Band(role.clone(), level), Option::is_some, c => queries::compensation_band(c, &role, level))
    }

    pub(crate) async fn role_levels(
        &self,
        role: String,
    ) -> Result<Cached<Option<Vec<Level>>>, DirectoryError> {
        cached!(self, Key::RoleLevels(role.clone()), Option::is_some, c => queries::role_levels(c, &role))
    }

    pub(crate) async fn leave_balance(
        &self,
        id: String,
        leave_type: LeaveType,
        today: NaiveDate,
    ) -> Result<Cached<Option<LeaveBalance>>, DirectoryError> {
        cached!(self, Key::Leave(id.clone(), leave_type, today), Option::is_some, c => queries::leave_balance(c, &id, leave_type, today))
    }

    pub(crate) async fn report(
        &self,
        kind: ReportType,
        today: NaiveDate,
    ) -> Result<Cached<Report>, DirectoryError> {
        cached!(self, Key::Report(kind, today), |_| true, c => reports::report(c, kind, today))
    }

    pub(crate) async fn department_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::pairs(c, "SELECT id, name FROM departments ORDER BY lower(name)"))
    }

    pub(crate) async fn team_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::pairs(c, "SELECT id, name FROM teams ORDER BY lower(name)"))
    }

    pub(crate) async fn roles(&self) -> Result<Vec<String>, DirectoryError> {
        with_client!(self, c => queries::strings(c, "SELECT title FROM roles ORDER BY lower(title)"))
    }

    pub(crate) async fn skills(&self) -> Result<Vec<String>, DirectoryError> {
        with_client!(self, c => queries::strings(c, "SELECT name FROM skills ORDER BY lower(name)"))
    }

    pub(crate) async fn suggest_employees(
        &self,
        query: String,
        limit: u32,
    ) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::suggest_employees(c, &query, limit))
    }

    pub(crate) async fn health(&self) -> Result<Health, DirectoryError> {
        with_client!(self, c => queries::health(c))
    }

    /// Reads the generation now, then waits until the listener has seen
    /// it (or stopped vouching, when lookups read it themselves).
    pub(crate) async fn sync(&self) -> Result<(), DirectoryError> {
        let now = with_client!(self, c => read_stamp(c))?;
        self.pool
            .bounded(async {
                self.watch.watched.reached(now).await;
                Ok(())
            })
            .await
    }

    pub(crate) fn pool_stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }
}
