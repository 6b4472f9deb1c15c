//! HR employee directory: schema, migrations, deterministic seed data and
//! queries.
//!
//! This crate knows nothing about MCP or JSON-RPC. It exposes [`Directory`],
//! a cheap-to-clone async handle, whose queries return serializable output
//! types (see [`model`]) with JSON Schemas suitable for tool results.
//!
//! ```no_run
//! # async fn demo() -> Result<(), employee_directory::DirectoryError> {
//! use std::sync::Arc;
//! use employee_directory::{Directory, SystemClock};
//!
//! let directory = Directory::open("sqlite://data/hr.db", Arc::new(SystemClock)).await?;
//! if let Some(john) = directory.employee("johndoe").await? {
//!     println!("{} reports to {:?}", john.name, john.manager);
//! }
//! # Ok(()) }
//! ```
//!
//! Unknown ids are not errors: lookups return `Ok(None)`, and helpers such as
//! [`Directory::department_ids`] or [`Directory::suggest_employees`] provide
//! material for actionable "not found" messages.
//!
//! # Data
//!
//! A new database is seeded with a deterministic fictional company ("Acme
//! Corp"): about 1,400 people (1,218 active) in 9 departments and 31 teams,
//! with a CEO -> department heads -> team managers -> members hierarchy,
//! salary bands, skills, career histories, leave balances and two years of
//! departures. All dates are generated relative to 2026-10-01, never "today",
//! so every machine gets identical content; tenure and reports use the
//! [`Clock`] given to [`Directory::open`].
//!
//! Ids: employees are PascalCase names (`AliceJohnson`, `MariaGarcia2` on a
//! collision), departments and teams are slugs (`engineering`, `backend`).
//! All lookups ignore case and also accept display names.

#![warn(missing_docs)]

mod aggregate;
mod backend;
mod clock;
mod database_url;
mod error;
pub mod exchange;
mod ids;
mod lookup;
mod migrations;
pub mod model;
mod options;
pub mod page_order;
pub mod pinned;
mod postgres;
mod read_cache;
mod seed;
mod sqlite;
mod statements;
mod summary;
mod tenure;
mod trace;

use std::sync::Arc;

use chrono::NaiveDate;

pub use clock::{Clock, FixedClock, SystemClock};
pub use database_url::{DatabaseUrl, redact};
pub use error::{DirectoryError, UnavailableReason};
pub use model::*;
pub use options::{
    DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_BUSY_TIMEOUT, DEFAULT_DATABASE_URL, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_STATEMENT_TIMEOUT, DirectoryOptions,
};
pub use read_cache::{Cached, DEFAULT_CACHE_BYTES};
pub use seed::{MAX_DEMO_EMPLOYEES, MIN_DEMO_EMPLOYEES};

use backend::Backend;

/// Most matches [`Directory::search_by_skill`] returns.
pub const SKILL_SEARCH_LIMIT: u32 = 100;

/// Calls the same method on whichever backend is active.
macro_rules! dispatch {
    ($self:ident, $db:ident => $call:expr) => {
        match &$self.inner.backend {
            Backend::Sqlite($db) => $call.await,
            Backend::Postgres($db) => $call.await,
        }
    };
}

/// Connection-pool counters (monotonic), for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Queries that found every connection busy and waited for one.
    pub waits: u64,
    /// Of those, the ones that gave up after `acquire_timeout`.
    pub timeouts: u64,
}

/// Async handle to the employee directory. Clones share one connection pool.
#[derive(Clone)]
pub struct Directory {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("backend", &self.inner.backend.name())
            .field("today", &self.inner.clock.today())
            .finish()
    }
}

impl Directory {
    /// Opens (and if needed creates, migrates and seeds) a directory.
    ///
    /// Supported URLs: `sqlite://PATH` (relative or absolute; the file and its
    /// directory are created if missing), `sqlite::memory:` (a private
    /// in-memory database, for tests) and `postgres://` / `postgresql://`
    /// (an existing PostgreSQL database; tables are created and seeded if
    /// missing, safely when several servers start at once). Anything else
    /// fails with [`DirectoryError::UnsupportedUrl`].
    ///
    /// Only this call creates the file, and pins it ([`pinned`]): if it is
    /// deleted while serving, queries fail with [`UnavailableReason::Missing`]
    /// (until the same file is moved back); if another file takes its
    /// place, with [`UnavailableReason::Replaced`] until reopened.
    /// Uses [`DirectoryOptions::default`]; see [`Directory::open_with`].
    pub async fn open(url: &str, clock: Arc<dyn Clock>) -> Result<Directory, DirectoryError> {
        Directory::open_with(url, clock, DirectoryOptions::default()).await
    }

    /// [`Directory::open`] with explicit bounds on how long queries wait
    /// for a lock or a free connection.
    pub async fn open_with(
        url: &str,
        clock: Arc<dyn Clock>,
        options: DirectoryOptions,
    ) -> Result<Directory, DirectoryError> {
        Directory::open_url(&DatabaseUrl::parse(url)?, clock, options).await
    }

    /// [`Directory::open_with`] a URL parsed already.
    pub async fn open_url(
        url: &DatabaseUrl,
        clock: Arc<dyn Clock>,
        options: DirectoryOptions,
    ) -> Result<Directory, DirectoryError> {
        let backend = Backend::open(url, options).await?;
        Ok(Directory {
            inner: Arc::new(Inner { backend, clock }),
        })
    }

    /// Today's date according to the directory's clock.
    pub fn today(&self) -> NaiveDate {
        self.inner.clock.today()
    }

    /// Full profile of an employee. Accepts the id in any case
    /// (`johndoe`), the name with spaces (`John Doe`) or the email address.
    pub async fn employee(
        &self,
        employee_id: &str,
    ) -> Result<Option<EmployeeDetails>, DirectoryError> {
        self.employee_cached(employee_id)
            .await
            .map(Cached::into_owned)
    }

    /// [`Directory::employee`], shared with every lookup of the same
    /// unchanged profile (nothing is copied on a cache hit).
    pub async fn employee_cached(
        &self,
        employee_id: &str,
    ) -> Result<Cached<Option<EmployeeDetails>>, DirectoryError> {
        let id = employee_id.to_string();
        dispatch!(self, db => db.employee(id))
    }

    /// Every active employee of a department, by id (`engineering`) or
    /// name (`Engineering`), with tenure as of today: one page as large as
    /// the department. A client reading a large department pages with
    /// [`Directory::department_page`].
    pub async fn department_employees(
        &self,
        department_id: &str,
    ) -> Result<Option<DepartmentRoster>, DirectoryError> {
        self.department_page(department_id, &RosterQuery::first(u32::MAX))
            .await
            .map(Cached::into_owned)
    }

    /// One page of a department's active employees, with counts over the
    /// whole department: the rows after `q.after` in roster order (see
    /// [`page_order::roster_key`]), at most `q.limit`, narrowed to the team
    /// `q.team` names. The cost follows the page, not the department.
    /// Shared like [`Directory::employee_cached`].
    pub async fn department_page(
        &self,
        department_id: &str,
        q: &RosterQuery,
    ) -> Result<Cached<Option<DepartmentRoster>>, DirectoryError> {
        let (id, q, today) = (department_id.to_string(), q.clone(), self.today());
        dispatch!(self, db => db.department_roster(id, q, today))
    }

    /// How long an employee has been with the company as of today (or until
    /// their last day for former employees).
    pub async fn tenure(&self, employee_id: &str) -> Result<Option<Tenure>, DirectoryError> {
        let (id, today) = (employee_id.to_string(), self.today());
        dispatch!(self, db => db.tenure(id, today)).map(Cached::into_owned)
    }

    /// Active members of a team (manager first) with their roles and who they
    /// report to, every one of them (a client pages with
    /// [`Directory::team_page`]). Accepts the id (`backend`), name
    /// (`Backend`) or `department-team` (`engineering-backend`).
    pub async fn team_members(&self, team_id: &str) -> Result<Option<TeamRoster>, DirectoryError> {
        self.team_page(team_id, &TeamQuery::first(u32::MAX))
            .await
            .map(Cached::into_owned)
    }

    /// One page of a team's members as `q` asks, with the counts over the
    /// whole team, shared (see [`Directory::employee_cached`]). A page
    /// costs what it holds, whatever the team's size.
    pub async fn team_page(
        &self,
        team_id: &str,
        q: &TeamQuery,
    ) -> Result<Cached<Option<TeamRoster>>, DirectoryError> {
        let (id, q) = (team_id.to_string(), q.clone());
        dispatch!(self, db => db.team_page(id, q))
    }

    /// Active employees with a skill containing the query (ignoring case),
    /// ranked: the skill equal to the query first, then skills starting
    /// with it, then the rest; within a skill, strongest first (see
    /// [`page_order::match_key`]). The first [`SKILL_SEARCH_LIMIT`]
    /// matches; `total` counts them all.
    pub async fn search_by_skill(&self, skill: &str) -> Result<SkillSearch, DirectoryError> {
        let q = SkillQuery {
            skill: skill.to_owned(),
            after: None,
            limit: SKILL_SEARCH_LIMIT,
        };
        self.skill_page(&q).await.map(Cached::into_owned)
    }

    /// [`Directory::search_by_skill`] with every match, for a small
    /// directory or a test; a client pages with [`Directory::skill_page`].
    pub async fn search_by_skill_ranked(&self, skill: &str) -> Result<SkillSearch, DirectoryError> {
        let q = SkillQuery {
            skill: skill.to_owned(),
            after: None,
            limit: u32::MAX,
        };
        self.skill_page(&q).await.map(Cached::into_owned)
    }

    /// One page of a skill search: the matches after `q.after` in rank
    /// order, at most `q.limit`, with counts over every match. The cost
    /// follows the page and the number of matched skills, not the
    /// company. Shared like [`Directory::employee_cached`].
    pub async fn skill_page(&self, q: &SkillQuery) -> Result<Cached<SkillSearch>, DirectoryError> {
        let q = q.clone();
        dispatch!(self, db => db.search_by_skill(q))
    }

    /// Salary band of a role (case-insensitive; a level prefix such as
    /// "Senior ..." is ignored) at a level, with actual salary statistics.
    /// `None` if the role is unknown or has no band at that level.
    pub async fn compensation_band(
        &self,
        role: &str,
        level: Level,
    ) -> Result<Option<CompensationBand>, DirectoryError> {
        let role = role.to_string();
        dispatch!(self, db => db.compensation_band(role, level)).map(Cached::into_owned)
    }

    /// Levels at which a role has a salary band; `None` if the role is unknown.
    pub async fn role_levels(&self, role: &str) -> Result<Option<Vec<Level>>, DirectoryError> {
        let role = role.to_string();
        dispatch!(self, db => db.role_levels(role)).map(Cached::into_owned)
    }

    /// Leave balance of an employee for the current year (or their last
    /// recorded year).
    pub async fn leave_balance(
        &self,
        employee_id: &str,
        leave_type: LeaveType,
    ) -> Result<Option<LeaveBalance>, DirectoryError> {
        let (id, today) = (employee_id.to_string(), self.today());
        dispatch!(self, db => db.leave_balance(id, leave_type, today)).map(Cached::into_owned)
    }

    /// Generates an organisation-wide report as of today.
    pub async fn report(&self, kind: ReportType) -> Result<Report, DirectoryError> {
        self.report_cached(kind).await.map(Cached::into_owned)
    }

    /// [`Directory::report`], shared (see [`Directory::employee_cached`]).
    pub async fn report_cached(&self, kind: ReportType) -> Result<Cached<Report>, DirectoryError> {
        let today = self.today();
        dispatch!(self, db => db.report(kind, today))
    }

    /// All departments as `(id, name)`, by name.
    pub async fn department_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        dispatch!(self, db => db.department_ids())
    }

    /// All teams as `(id, name)`, by name.
    pub async fn team_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        dispatch!(self, db => db.team_ids())
    }

    /// All role names (without level), alphabetically.
    pub async fn roles(&self) -> Result<Vec<String>, DirectoryError> {
        dispatch!(self, db => db.roles())
    }

    /// All skill names, alphabetically.
    pub async fn skills(&self) -> Result<Vec<String>, DirectoryError> {
        dispatch!(self, db => db.skills())
    }

    /// Employees whose name or id resembles `query`, as `(id, name)`, best
    /// match first; for "did you mean" messages.
    pub async fn suggest_employees(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>, DirectoryError> {
        let query = query.to_string();
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        dispatch!(self, db => db.suggest_employees(query, limit))
    }

    /// Checks the database answers; returns schema version and size.
    pub async fn ping(&self) -> Result<Health, DirectoryError> {
        dispatch!(self, db => db.health())
    }

    /// The schema version this build migrates to; [`Health::schema_version`]
    /// below it means migrations are not current.
    pub fn expected_schema_version() -> u32 {
        migrations::latest_version()
    }

    /// Waits until answers reflect every change committed before this
    /// call. On PostgreSQL, cached answers follow changes through
    /// announcements that may arrive a moment after the commit (see
    /// docs/cluster.md); a caller that changed the data on
    /// another connection and must read it back calls this in between.
    /// Nothing to wait for on SQLite (every lookup reads the counter).
    pub async fn sync(&self) -> Result<(), DirectoryError> {
        match &self.inner.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(db) => db.sync().await,
        }
    }

    /// The database file this directory serves from, pinned at open (see
    /// [`pinned`]); `None` for in-memory and PostgreSQL databases. Every
    /// other connection the application opens to the file goes through it.
    pub fn pinned_file(&self) -> Option<Arc<pinned::PinnedFile>> {
        match &self.inner.backend {
            Backend::Sqlite(db) => db.pinned_file(),
            Backend::Postgres(_) => None,
        }
    }

    /// Connection-pool counters, for metrics.
    pub fn pool_stats(&self) -> PoolStats {
        match &self.inner.backend {
            Backend::Sqlite(db) => db.pool_stats(),
            Backend::Postgres(db) => db.pool_stats(),
        }
    }
}
