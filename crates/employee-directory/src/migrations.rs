//! The schema's versions, one list for both backends: every version has a
//! SQLite script and a PostgreSQL script, so the two cannot drift apart in
//! number, name or order. Each backend's `migrate` module applies them.

use crate::error::DirectoryError;

/// One schema change, applied at most once per database.
pub(crate) struct Migration {
    /// Recorded in `schema_migrations`; strictly increasing.
    pub version: u32,
    /// The scripts' file name (the same in both folders).
    pub name: &'static str,
    /// The change in SQLite's dialect (`migrations/`).
    pub sqlite: &'static str,
    /// The same change in PostgreSQL's dialect (`migrations/postgres/`).
    pub postgres: &'static str,
}

/// Both scripts of one version, from the file name.
macro_rules! migration {
    ($version:literal, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sqlite: include_str!(concat!("../migrations/", $name)),
            postgres: include_str!(concat!("../migrations/postgres/", $name)),
        }
    };
}

/// All migrations, in order. Never edit a released one: add a new version
/// (both files).
pub(crate) const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_schema.sql"),
    migration!(2, "0002_indexes.sql"),
    migration!(3, "0003_generation.sql"),
    migration!(4, "0004_import_history.sql"),
    migration!(5, "0005_report_aggregates.sql"),
    migration!(6, "0006_skill_search.sql"),
    migration!(7, "0007_generation_notify.sql"),
    migration!(8, "0008_roster_paging.sql"),
    migration!(9, "0009_skill_counts.sql"),
    migration!(10, "0010_band_salaries.sql"),
    migration!(11, "0011_roster_totals.sql"),
    migration!(12, "0012_statement_aggregates.sql"),
    migration!(13, "0013_reference_indexes.sql"),
    migration!(14, "0014_team_paging.sql"),
];

/// The schema version this build migrates to.
pub(crate) fn latest_version() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The error for a database whose schema is newer than this build.
pub(crate) fn too_new(current: u32) -> DirectoryError {
    DirectoryError::Migration {
        version: current,
        name: "unknown",
        message: format!(
            "the database schema is at version {current} but this build only knows up to \
             version {}; upgrade the server or point it at another database",
            latest_version()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_increasing_and_named_by_version() {
        for pair in MIGRATIONS.windows(2) {
            assert!(pair[0].version < pair[1].version);
        }
        for m in MIGRATIONS {
            assert!(
                m.name.starts_with(&format!("{:04}_", m.version)),
                "{}",
                m.name
            );
        }
    }
}
