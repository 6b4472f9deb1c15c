//! The runtime tool catalogue: which built-ins
//! are disabled, which custom SQL tools exist and which tools' approval
//! policy an operator overrode, stored in the directory's database so every
//! server process on it serves the same set.
//!
//! The `tools` subcommand changes the catalogue ([`command`]); each server
//! polls its generation counter ([`watch`]) and, when it moved, swaps its
//! whole tool set at once with [`mcpwire_server::Server::replace_tools`], which
//! announces `list_changed` to that process's listeners.
//!
//! The tables live behind [`Store`]: the directory's SQLite file, or its
//! PostgreSQL database; custom tools' statements are checked by the
//! matching [`Checker`] and run by the matching [`Runner`].

pub mod command;
mod error;
pub mod postgres;
pub mod sqlite;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use employee_directory::DatabaseUrl;
use employee_directory::pinned::PinnedFile;
use mcpwire_server::Tool;
use mcpwire_server::access::{Approval, ApprovalPolicy};
use rusqlite::{Connection, OpenFlags};

use crate::custom::limits::Limits;
use crate::custom::spec::ToolSpec;
use crate::custom::{self, Checker, Runner};

pub use error::Error;

/// Default of `--max-custom-tools`.
pub const DEFAULT_MAX_CUSTOM_TOOLS: usize = 200;

/// Connections the catalogue keeps on PostgreSQL: the watcher polls on
/// one; the CLI uses one.
const PG_POOL_SIZE: usize = 2;

/// How long a PostgreSQL round trip may take before a tick counts as
/// failed (the watcher then retries on the next one).
const PG_TIMEOUT: Duration = Duration::from_secs(2);

/// Longest a custom query waits for a connection of its pool.
const PG_QUERY_WAIT: Duration = Duration::from_secs(30);

/// Where the catalogue tables live. One code path for the watcher and the
/// CLI; only the storage differs.
#[derive(Clone)]
pub enum Store {
    /// The directory's SQLite file.
    Sqlite(PathBuf),
    /// The directory's PostgreSQL database.
    Postgres(Pool),
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await?
}

impl Store {
    /// The catalogue of the database at `url`, its tables created if
    /// missing.
    pub async fn open(url: &DatabaseUrl) -> Result<Store, Error> {
        if let Some(url) = url.postgres() {
            let pool = mcpwire_cluster::pool(url, PG_POOL_SIZE, PG_TIMEOUT).map_err(Error::Pool)?;
            postgres::migrate(&pool).await?;
            return Ok(Store::Postgres(pool));
        }
        let path = database_file(url)?;
        let p = path.clone();
        blocking(move || open_rw(&p).map(drop)).await?;
        Ok(Store::Sqlite(path))
    }

    /// Where custom tools' statements are checked, run as `role` on
    /// PostgreSQL.
    pub fn checker(&self, role: &str) -> Checker {
        match self {
            Store::Sqlite(path) => Checker::Sqlite(path.clone()),
            Store::Postgres(pool) => Checker::Postgres {
                pool: pool.clone(),
                role: role.to_owned(),
            },
        }
    }

    /// Sets up the reader role custom statements run as (PostgreSQL; SQLite
    /// needs nothing).
    pub async fn ensure_reader(&self, role: &str) -> Result<(), Error> {
        match self {
            Store::Sqlite(_) => Ok(()),
            Store::Postgres(pool) => custom::postgres::ensure_reader(pool, role)
                .await
                .map_err(Error::Custom),
        }
    }

    /// Stores checked custom tools from `source` (see [`sqlite::put_custom`]).
    pub async fn put_custom(
        &self,
        specs: Vec<ToolSpec>,
        source: String,
        sync: bool,
        actor: &str,
        max_custom: usize,
    ) -> Result<bool, Error> {
        match self {
            Store::Sqlite(path) => {
                let (path, actor) = (path.clone(), actor.to_owned());
                blocking(move || {
                    let mut conn = open_rw(&path)?;
                    sqlite::put_custom(&mut conn, &specs, &source, sync, &actor, max_custom)
                })
                .await
            }
            Store::Postgres(pool) => {
                postgres::put_custom(pool, &specs, &source, sync, actor, max_custom).await
            }
        }
    }

    /// Removes a custom tool; `Ok(false)` if there is none by that name.
    pub async fn remove_custom(&self, name: &str, actor: &str) -> Result<bool, Error> {
        match self {
            Store::Sqlite(path) => {
                let (path, name, actor) = (path.clone(), name.to_owned(), actor.to_owned());
                blocking(move || {
                    let mut conn = open_rw(&path)?;
                    sqlite::remove_custom(&mut conn, &name, &actor).map_err(Error::Sqlite)
                })
                .await
            }
            Store::Postgres(pool) => postgres::remove_custom(pool, name, actor).await,
        }
    }

    /// The current generation.
    pub async fn generation(&self) -> Result<i64, Error> {
        match self {
            Store::Sqlite(path) => {
                let path = path.clone();
                blocking(move || {
                    let conn = open_catalog_reader(&path)?;
                    sqlite::generation(&conn).map_err(Error::Generation)
                })
                .await
            }
            Store::Postgres(pool) => postgres::generation(pool).await,
        }
    }

    /// Every catalogue row.
    pub async fn entries(&self) -> Result<Vec<sqlite::Entry>, Error> {
        match self {
            Store::Sqlite(path) => {
                let path = path.clone();
                blocking(move || {
                    let conn = open_catalog_reader(&path)?;
                    sqlite::entries(&conn).map_err(Error::Sqlite)
                })
                .await
            }
            Store::Postgres(pool) => postgres::entries(pool).await,
        }
    }

    /// Enables or disables a tool; `Ok(false)` if it already was.
    pub async fn set_enabled(
        &self,
        name: &str,
        builtin: bool,
        enabled: bool,
        actor: &str,
    ) -> Result<bool, Error> {
        match self {
            Store::Sqlite(path) => {
                let (path, name, actor) = (path.clone(), name.to_owned(), actor.to_owned());
                blocking(move || {
                    let mut conn = open_rw(&path)?;
                    sqlite::set_enabled(&mut conn, &name, builtin, enabled, &actor)
                        .map_err(Error::Sqlite)
                })
                .await
            }
            Store::Postgres(pool) => {
                postgres::set_enabled(pool, name, builtin, enabled, actor).await
            }
        }
    }

    /// Sets (or, with `None`, clears) the approval override of a tool;
    /// `detail(previous override)` words the change for the history (see
    /// [`sqlite::set_approval`]).
    pub async fn set_approval(
        &self,
        name: &str,
        builtin: bool,
        approval: Option<Approval>,
        actor: &str,
        detail: impl FnOnce(Option<&str>) -> String + Send + 'static,
    ) -> Result<sqlite::ApprovalChange, Error> {
        let approval = approval.map(Approval::as_str);
        match self {
            Store::Sqlite(path) => {
                let (path, name, actor) = (path.clone(), name.to_owned(), actor.to_owned());
                blocking(move || {
                    let mut conn = open_rw(&path)?;
                    sqlite::set_approval(&mut conn, &name, builtin, approval, &actor, detail)
                        .map_err(Error::Sqlite)
                })
                .await
            }
            Store::Postgres(pool) => {
                postgres::set_approval(pool, name, builtin, approval, actor, detail).await
            }
        }
    }

    /// The newest `limit` changes, oldest first.
    pub async fn changes(&self, limit: u32) -> Result<Vec<sqlite::Change>, Error> {
        match self {
            Store::Sqlite(path) => {
                let path = path.clone();
                blocking(move || {
                    let conn = open_catalog_reader(&path)?;
                    sqlite::changes(&conn, limit).map_err(Error::Sqlite)
                })
                .await
            }
            Store::Postgres(pool) => postgres::changes(pool, limit).await,
        }
    }
}

/// The SQLite file behind a `sqlite://PATH` URL; custom tools and the
/// catalogue need a file every process can open.
pub fn database_file(url: &DatabaseUrl) -> Result<PathBuf, Error> {
    match url {
        DatabaseUrl::Sqlite { path, .. } => Ok(path.clone()),
        DatabaseUrl::Memory => Err(Error::InMemory),
        DatabaseUrl::Postgres(_) => Err(Error::NoFile),
    }
}

/// Opens a read-write connection and creates the catalogue tables.
pub fn open_rw(path: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = open_with(path, flags, Duration::from_secs(5))?;
    sqlite::migrate(&conn)?;
    Ok(conn)
}

/// Opens a read-only connection for the catalogue's own reads (no
/// authorizer: that one is for custom statements).
pub fn open_catalog_reader(path: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    open_with(path, flags, Duration::from_secs(2))
}

/// Opens `path` with `flags`, waiting up to `busy` for a lock.
fn open_with(path: &Path, flags: OpenFlags, busy: Duration) -> Result<Connection, Error> {
    let conn = Connection::open_with_flags(path, flags).map_err(|source| Error::Open {
        path: path.to_owned(),
        source,
    })?;
    conn.busy_timeout(busy).map_err(|source| Error::Configure {
        path: path.to_owned(),
        source,
    })?;
    Ok(conn)
}

/// What a server needs to rebuild its tool set from the catalogue.
pub struct Catalog {
    store: Store,
    builtins: Vec<Tool>,
    /// Checks stored custom tools against the database before serving them.
    checker: Checker,
    /// Runs custom tools' queries.
    runner: Arc<Runner>,
    max_custom: usize,
}

impl Catalog {
    /// A catalogue in `store` (on the database at `url`), serving
    /// `builtins` (minus the disabled ones) and at most `max_custom` custom
    /// tools, whose queries run on at most `max_connections` connections,
    /// as `role` on PostgreSQL, each within `limits`.
    pub fn new(
        store: Store,
        url: &DatabaseUrl,
        builtins: Vec<Tool>,
        max_custom: usize,
        max_connections: usize,
        role: &str,
        limits: Limits,
    ) -> Result<Self, Error> {
        let runner = match &store {
            Store::Sqlite(path) => Runner::Sqlite(Arc::new(custom::sqlite::Executor::new(
                path.to_owned(),
                max_connections,
                limits,
            ))),
            // Waiting for a free connection is bounded by the call timeout;
            // the pool's own timeout only guards against a lost server.
            Store::Postgres(_) => Runner::Postgres(Arc::new(custom::postgres::Executor::new(
                mcpwire_cluster::pool(url.as_str(), max_connections.max(1), PG_QUERY_WAIT)
                    .map_err(Error::Pool)?,
                role.to_owned(),
                limits,
            ))),
        };
        Ok(Self {
            checker: store.checker(role),
            store,
            builtins,
            runner: Arc::new(runner),
            max_custom,
        })
    }

    /// Runs custom tools only on the server's pinned database file.
    pub fn pinned(self, pin: Option<Arc<PinnedFile>>) -> Self {
        if let (Runner::Sqlite(executor), Some(pin)) = (self.runner.as_ref(), pin) {
            executor.pin(pin);
        }
        self
    }

    /// Where the catalogue lives.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Where custom tools are checked.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// Most custom tools served.
    pub fn max_custom(&self) -> usize {
        self.max_custom
    }

    /// Names of the built-in tools.
    pub fn builtin_names(&self) -> Vec<String> {
        self.builtins
            .iter()
            .map(|t| t.definition().name.clone())
            .collect()
    }

    fn enabled_builtins(&self, entries: &[sqlite::Entry]) -> Vec<Tool> {
        let disabled = |name: &str| entries.iter().any(|e| e.name == name && !e.enabled);
        self.builtins
            .iter()
            .filter(|t| !disabled(&t.definition().name))
            .map(|t| {
                let entry = entries.iter().find(|e| e.name == t.definition().name);
                with_catalog_approval(t.clone(), entry)
            })
            .collect()
    }

    /// Reads the catalogue and builds the tool set it describes, with the
    /// generation it was read at. A custom tool that no longer checks (the
    /// schema changed under it) is left out with a warning.
    pub async fn tool_set(self: &Arc<Self>) -> Result<(i64, Vec<Tool>), Error> {
        // Generation first: entries read after it are at least as new, and
        // a newer generation is applied again on the next tick.
        let generation = self.store.generation().await?;
        let entries = self.store.entries().await?;
        let mut tools = self.enabled_builtins(&entries);
        let custom = entries
            .iter()
            .filter(|e| e.kind == "custom" && e.enabled)
            .take(self.max_custom);
        for entry in custom {
            match self.load_custom(entry).await {
                Ok(tool) => tools.push(with_catalog_approval(tool, Some(entry))),
                Err(reason) => {
                    tracing::warn!(tool = %entry.name, %reason, "custom tool left out of the tool set")
                }
            }
        }
        Ok((generation, tools))
    }

    async fn load_custom(&self, entry: &sqlite::Entry) -> Result<Tool, Error> {
        let json = entry.definition.as_deref().unwrap_or("");
        let spec: ToolSpec = serde_json::from_str(json).map_err(Error::StoredUnreadable)?;
        let checked = self
            .checker
            .check_all(vec![spec], &self.builtin_names())
            .await?;
        let checked = checked.into_iter().next().ok_or(Error::NoDefinition)?;
        Ok(crate::custom::build(&checked, Arc::clone(&self.runner)))
    }
}

/// An approval override as stored; anything but the three spellings (the
/// tables' CHECK refuses them) is taken as the strictest, `operator`.
pub fn stored_approval(entry: &sqlite::Entry) -> Option<Approval> {
    let text = entry.approval.as_deref()?;
    Some(Approval::parse(text).unwrap_or_else(|| {
        tracing::warn!(tool = %entry.name, approval = %text, "unknown approval override; operator applied");
        Approval::Operator
    }))
}

/// `tool` with its catalogue row's approval applied: the override, if
/// any, for every call ([`Tool::with_approval`]), else its declared rules;
/// both under the row's approval version (0 for a tool without a row).
pub fn with_catalog_approval(tool: Tool, entry: Option<&sqlite::Entry>) -> Tool {
    let version = entry.map_or(0, |e| u64::try_from(e.approval_version).unwrap_or(0));
    match entry.and_then(stored_approval) {
        Some(level) => tool.with_approval(level, version),
        None => tool.with_approval_version(version),
    }
}

/// The policy served for a tool declaring `declared` with the catalogue's
/// `override_`, as [`Tool::with_approval`] makes it (for `tools list`).
pub fn effective_approval(
    declared: &ApprovalPolicy,
    override_: Option<Approval>,
) -> ApprovalPolicy {
    let mut policy = declared.clone();
    if let Some(level) = override_ {
        policy.base = level;
        policy.arguments.clear();
    }
    policy
}

/// A policy in words, for `tools list`: "none", "confirm",
/// "none; confirm if reportType=\"compensation\"; none for one's own record".
pub fn describe_approval(policy: &ApprovalPolicy) -> String {
    let mut parts = vec![policy.base.as_str().to_owned()];
    for rule in &policy.arguments {
        parts.push(format!(
            "{} if {}={}",
            rule.approval.as_str(),
            rule.argument,
            rule.value
        ));
    }
    if policy.exempt_self && (policy.base > Approval::None || !policy.arguments.is_empty()) {
        parts.push("none for one's own record".into());
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_server::CallToolResult;
    use serde_json::json;

    fn entry(approval: Option<&str>, version: i64) -> sqlite::Entry {
        sqlite::Entry {
            name: "t".into(),
            kind: "builtin".into(),
            enabled: true,
            definition: None,
            source: "cli".into(),
            updated_at: "-".into(),
            updated_by: "-".into(),
            approval: approval.map(str::to_owned),
            approval_version: version,
        }
    }

    fn tool() -> Tool {
        Tool::builder("t")
            .description("d")
            .self_access("employeeId")
            .argument_approval("kind", json!("pay"), Approval::Confirm)
            .approval_exempts_self()
            .raw_handler(|_, _| async { Ok(CallToolResult::text("ok").into()) })
    }

    #[test]
    fn the_catalogue_row_sets_the_served_policy_and_its_version() {
        let declared = tool().policy().approval.clone();
        // No row: the declared rules, version 0.
        let served = with_catalog_approval(tool(), None)
            .policy()
            .approval
            .clone();
        assert_eq!(
            served,
            ApprovalPolicy {
                version: 0,
                ..declared.clone()
            }
        );
        // A row without override: the declared rules at the row's version.
        let served = with_catalog_approval(tool(), Some(&entry(None, 7)));
        assert_eq!(served.policy().approval.arguments, declared.arguments);
        assert_eq!(served.policy().approval.version, 7);
        // An override: one level for every call, the self exemption kept.
        let served = with_catalog_approval(tool(), Some(&entry(Some("operator"), 9)));
        let p = &served.policy().approval;
        assert_eq!(
            (p.base, p.arguments.len(), p.exempt_self, p.version),
            (Approval::Operator, 0, true, 9)
        );
        assert_eq!(
            *p,
            ApprovalPolicy {
                version: 9,
                ..effective_approval(&declared, Some(Approval::Operator))
            }
        );
        // A value the tables would refuse fails closed.
        let served = with_catalog_approval(tool(), Some(&entry(Some("nobody"), 3)));
        assert_eq!(served.policy().approval.base, Approval::Operator);
    }

    #[test]
    fn policies_are_described_in_words() {
        let declared = tool().policy().approval.clone();
        assert_eq!(
            describe_approval(&declared),
            r#"none; confirm if kind="pay"; none for one's own record"#
        );
        let overridden = effective_approval(&declared, Some(Approval::Confirm));
        assert_eq!(
            describe_approval(&overridden),
            "confirm; none for one's own record"
        );
        assert_eq!(
            describe_approval(&ApprovalPolicy::new(Approval::None)),
            "none"
        );
        let mut exempt = ApprovalPolicy::new(Approval::None);
        exempt.exempt_self = true;
        assert_eq!(
            describe_approval(&exempt),
            "none",
            "an exemption from nothing is not worth a word"
        );
    }
}
