//! Why a catalogue read or change failed, or why the `tools` command
//! refused. Each variant prints the text the command line has always
//! shown for it.

use std::path::PathBuf;

use employee_directory::DirectoryError;
use mcpwire_cluster::db_message;
use mcpwire_server::RegistrationError;

use crate::custom::spec::DefinitionError;

/// A catalogue error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The SQLite file could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The connection's busy timeout could not be set.
    #[error("cannot configure {}: {source}", path.display())]
    Configure {
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The tables could not be created.
    #[error("cannot create the tool catalogue tables: {0}")]
    CreateTables(#[source] rusqlite::Error),
    /// A table made by an older version could not be given its new columns.
    #[error("cannot add the new tool catalogue columns: {0}")]
    AddColumns(#[source] rusqlite::Error),
    /// Storing custom tools failed on SQLite.
    #[error("cannot update the tool catalogue: {0}")]
    Update(#[source] rusqlite::Error),
    /// Any other SQLite statement of the catalogue failed.
    #[error("tool catalogue: {0}")]
    Sqlite(#[source] rusqlite::Error),
    /// Reading the generation failed on SQLite (the watcher logs it as is).
    #[error(transparent)]
    Generation(rusqlite::Error),
    /// A PostgreSQL statement failed while doing `what`.
    #[error("tool catalogue on PostgreSQL: {what}: {}", db_message(.source))]
    Postgres {
        /// What the catalogue was doing ("reading the tools").
        what: &'static str,
        /// The driver's error.
        source: tokio_postgres::Error,
    },
    /// No PostgreSQL connection could be had from the pool.
    #[error("tool catalogue: cannot reach PostgreSQL: {0}")]
    Unreachable(#[source] deadpool_postgres::PoolError),
    /// The PostgreSQL pool could not be built (the cluster crate's text).
    #[error("{0}")]
    Pool(String),
    /// A blocking task died.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// `--database :memory:` names no file every process can open.
    #[error("the tool catalogue needs a database file (sqlite://PATH), not an in-memory database")]
    InMemory,
    /// A PostgreSQL URL where a SQLite file was needed.
    #[error("a PostgreSQL URL names no database file")]
    NoFile,
    /// Storing the tools would go over `--max-custom-tools`.
    #[error(
        "the catalogue would hold {count} custom tools, over the limit of {max} (--max-custom-tools); remove some first"
    )]
    TooMany {
        /// Custom tools after the change.
        count: i64,
        /// The limit.
        max: usize,
    },
    /// A custom tool's name is held by a built-in or another source.
    #[error(
        "tool {name:?}, field `name`: a {kind} tool with this name already exists (source {owner}); remove it first or pick another name"
    )]
    NameTaken {
        /// The name.
        name: String,
        /// `builtin` or `custom`.
        kind: String,
        /// The source that holds it.
        owner: String,
    },
    /// A definition could not be turned into JSON, or a row printed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A stored definition is not a definition.
    #[error("stored definition unreadable: {0}")]
    StoredUnreadable(#[source] serde_json::Error),
    /// The checker returned no definition for the one it was given.
    #[error("no definition")]
    NoDefinition,
    /// A custom tool's definition was refused.
    #[error(transparent)]
    Definition(#[from] DefinitionError),
    /// The custom tools' reader role or definition file failed.
    #[error(transparent)]
    Custom(#[from] crate::custom::Error),
    /// The approvals store failed (voiding a tool's pending calls).
    #[error(transparent)]
    Approvals(#[from] crate::approvals::Error),
    /// The server refused the catalogue's tool set.
    #[error("the catalogue's tool set is invalid: {0}")]
    InvalidToolSet(#[source] RegistrationError),
    /// A `--tools-file` read task died.
    #[error("cannot read: {0}")]
    ReadTask(#[source] tokio::task::JoinError),
    /// The employee database did not open.
    #[error("cannot open the employee database: {0}")]
    Directory(#[source] DirectoryError),
    /// Built-ins are disabled, never removed.
    #[error(
        "{name:?} is a built-in tool; built-ins cannot be removed, only disabled (tools disable {name})"
    )]
    BuiltinRemoval {
        /// The built-in's name.
        name: String,
    },
    /// An empty tool name.
    #[error("give a tool name")]
    NoName,
    /// No custom tool by that name.
    #[error("no custom tool named {name:?}; see `tools list`")]
    NoCustomTool {
        /// The name asked for.
        name: String,
    },
    /// No tool by that name.
    #[error("no tool named {name:?}; see `tools list`")]
    NoTool {
        /// The name asked for.
        name: String,
    },
    /// No tool by that name; the names there are, for `tools approval`.
    #[error("no tool named {name:?}; the tools are: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The tools there are, comma-separated.
        known: String,
    },
    /// A custom tool's stored definition cannot be read back.
    #[error("the stored definition of {name:?} is unreadable; remove it and add it again")]
    UnreadableDefinition {
        /// The tool.
        name: String,
    },
    /// An action the store handles reached the custom-tool branch.
    #[error("handled by the store")]
    Misrouted,
    /// Writing to stdout failed.
    #[error("cannot write to stdout: {0}")]
    Stdout(#[source] std::io::Error),
}
