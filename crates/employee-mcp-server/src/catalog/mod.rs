//! The runtime tool catalogue (issue 9 part 3, issue 10): which built-ins
//! are disabled and which custom SQL tools exist, stored in the
//! directory's database so every server process on it serves the same set.
//!
//! The `tools` subcommand changes the catalogue ([`command`]); each server
//! polls its generation counter ([`watch`]) and, when it moved, swaps its
//! whole tool set at once with [`mcp_server::Server::replace_tools`], which
//! announces `list_changed` to that process's listeners.

pub mod command;
pub mod store;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_server::Tool;
use rusqlite::{Connection, OpenFlags};

use crate::custom::spec::ToolSpec;
use crate::custom::sqlite::{Executor, open_read_only};
use crate::custom::{self, Checked};

/// Default of `--max-custom-tools`.
pub const DEFAULT_MAX_CUSTOM_TOOLS: usize = 200;

/// The SQLite file behind a `sqlite://PATH` URL; custom tools and the
/// catalogue need a file every process can open.
pub fn database_file(url: &str) -> Result<PathBuf, String> {
    match crate::audit::Location::from_url(url)? {
        crate::audit::Location::File(path) => Ok(path),
        crate::audit::Location::Memory => Err(
            "the tool catalogue needs a database file (sqlite://PATH), not an in-memory database"
                .into(),
        ),
        crate::audit::Location::Postgres(_) => {
            Err("the tool catalogue is not available on PostgreSQL yet".into())
        }
    }
}

/// Opens a read-write connection and creates the catalogue tables.
pub fn open_rw(path: &Path) -> Result<Connection, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| format!("cannot configure {}: {e}", path.display()))?;
    store::migrate(&conn)?;
    Ok(conn)
}

/// Opens a read-only connection for the catalogue's own reads (no
/// authorizer: that one is for custom statements).
pub fn open_catalog_reader(path: &Path) -> Result<Connection, String> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(2))
        .map_err(|e| format!("cannot configure {}: {e}", path.display()))?;
    Ok(conn)
}

/// What a server needs to rebuild its tool set from the catalogue.
pub struct Catalog {
    path: PathBuf,
    builtins: Vec<Tool>,
    executor: Arc<Executor>,
    max_custom: usize,
}

impl Catalog {
    /// A catalogue on the database file at `path`, serving `builtins`
    /// (minus the disabled ones) and at most `max_custom` custom tools,
    /// whose queries run on at most `max_connections` connections.
    pub fn new(
        path: PathBuf,
        builtins: Vec<Tool>,
        max_custom: usize,
        max_connections: usize,
    ) -> Self {
        let executor = Arc::new(Executor::new(path.clone(), max_connections));
        Self {
            path,
            builtins,
            executor,
            max_custom,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names of the built-in tools.
    pub fn builtin_names(&self) -> Vec<String> {
        self.builtins
            .iter()
            .map(|t| t.definition().name.clone())
            .collect()
    }

    /// Reads the catalogue and builds the tool set it describes, with the
    /// generation it was read at. A custom tool that no longer checks (the
    /// schema changed under it) is left out with a warning. Blocking.
    pub fn tool_set(&self, conn: &Connection) -> Result<(i64, Vec<Tool>), String> {
        let db = |e: rusqlite::Error| format!("cannot read the tool catalogue: {e}");
        let generation = store::generation(conn).map_err(db)?;
        let entries = store::entries(conn).map_err(db)?;
        let disabled = |name: &str| entries.iter().any(|e| e.name == name && !e.enabled);
        let mut tools: Vec<Tool> = self
            .builtins
            .iter()
            .filter(|t| !disabled(&t.definition().name))
            .cloned()
            .collect();
        let checker = open_read_only(&self.path)?;
        let custom = entries
            .iter()
            .filter(|e| e.kind == "custom" && e.enabled)
            .take(self.max_custom);
        for entry in custom {
            match self.load_custom(&checker, entry) {
                Ok(tool) => tools.push(tool),
                Err(reason) => {
                    tracing::warn!(tool = %entry.name, %reason, "custom tool left out of the tool set")
                }
            }
        }
        Ok((generation, tools))
    }

    fn load_custom(&self, checker: &Connection, entry: &store::Entry) -> Result<Tool, String> {
        let json = entry.definition.as_deref().unwrap_or("");
        let spec: ToolSpec =
            serde_json::from_str(json).map_err(|e| format!("stored definition unreadable: {e}"))?;
        let checked: Vec<Checked> = custom::check_all(checker, vec![spec], &self.builtin_names())
            .map_err(|e| e.to_string())?;
        let checked = checked.into_iter().next().ok_or("no definition")?;
        Ok(custom::build(&checked, Arc::clone(&self.executor)))
    }
}
