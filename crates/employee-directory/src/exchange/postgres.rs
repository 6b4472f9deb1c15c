//! Export and import on PostgreSQL. The import validates first (no
//! transaction open meanwhile), then in one transaction streams every file
//! into a temporary staging table with `COPY … FROM STDIN` and applies the
//! same set-based statements as SQLite; other sessions see the old data
//! until it commits, then all of it.

use crate::postgres::row::get;
use std::path::Path;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt, pin_mut};
use tokio_postgres::{Client, NoTls, Transaction};

use super::read::{RowReader, Source};
use super::spec::{ENTITIES, Entity, Kind};
use super::sql::{self, Dialect};
use super::validate::{self, Known};
use super::value::Value;
use super::write::Export;
use super::{
    EntityCounts, ExchangeError, FileDigest, Format, ImportOptions, ImportRecord, ImportReport,
    Mode, Problems, history as record,
};
use crate::error::DirectoryError;

/// COPY data is sent in chunks of about this many bytes.
const COPY_CHUNK: usize = 1 << 20;

async fn connect(url: &str) -> Result<Client, ExchangeError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(DirectoryError::pg("connect"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

fn pg(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> ExchangeError {
    move |e| ExchangeError::Directory(DirectoryError::pg(context)(e))
}

fn refused(e: tokio_postgres::Error) -> ExchangeError {
    let detail = e.as_db_error().map_or_else(
        || e.to_string(),
        |d| format!("{} {}", d.message(), d.detail().unwrap_or("")),
    );
    ExchangeError::Refused(detail.trim().to_string())
}

/// Every column as text (dates as `YYYY-MM-DD`), ordered by key.
fn select(entity: &Entity) -> String {
    let cols: Vec<String> = entity
        .columns
        .iter()
        .map(|c| format!("{}::text", c.sql))
        .collect();
    // Ordered by the typed key columns (not their text), as on SQLite.
    let keys: Vec<String> = entity
        .key
        .iter()
        .map(|&k| format!("{}.{}", entity.table, entity.columns[k].sql))
        .collect();
    format!(
        "SELECT {} FROM {} ORDER BY {}",
        cols.join(", "),
        entity.table,
        keys.join(", ")
    )
}

fn value(kind: Kind, text: Option<String>) -> Value {
    let Some(text) = text else {
        return Value::Null;
    };
    match kind {
        Kind::Int | Kind::Ranked(_) => text.parse().map_or(Value::Text(text), Value::Int),
        Kind::Days => text.parse().map_or(Value::Text(text), Value::Real),
        _ => Value::Text(text),
    }
}

/// Writes every entity into `dir` from one repeatable-read snapshot.
pub async fn export(
    url: &str,
    dir: &Path,
    format: Format,
) -> Result<Vec<(&'static str, u64)>, ExchangeError> {
    let mut client = connect(url).await?;
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(pg("begin export"))?;
    let mut written = Vec::new();
    let mut export = Export::new(dir, format);
    for entity in ENTITIES {
        let (file, mut out) = export.start(entity)?;
        let no_params: [&str; 0] = [];
        let rows = tx
            .query_raw(&select(entity), no_params)
            .await
            .map_err(pg("export query"))?;
        pin_mut!(rows);
        let mut n = 0;
        let mut values = Vec::with_capacity(entity.columns.len());
        while let Some(row) = rows.next().await {
            let row = row.map_err(pg("export row"))?;
            values.clear();
            for (i, c) in entity.columns.iter().enumerate() {
                values.push(value(c.kind, get(&row, i)?));
            }
            out.row(&file, entity, &values)?;
            n += 1;
        }
        export.end(out, &file)?;
        written.push((entity.name, n));
    }
    export.finish()?;
    tx.commit().await.map_err(pg("end export"))?;
    Ok(written)
}

/// The database's keys that the import keeps ([`validate::from_database`]).
async fn load_known(
    client: &Client,
    sources: &[Source],
    mode: Mode,
) -> Result<Known, ExchangeError> {
    let mut known = Known::default();
    // Employees are read with their managers below.
    let kept = |e: &&Entity| {
        e.name != "employees"
            && validate::is_referenced(e)
            && validate::from_database(e.name, sources, mode)
    };
    for entity in ENTITIES.iter().filter(kept) {
        let cols: Vec<String> = entity
            .key
            .iter()
            .map(|&k| format!("{}::text", entity.columns[k].sql))
            .collect();
        let sql = format!("SELECT {} FROM {}", cols.join(", "), entity.table);
        // Streamed: a million rows are never held at once.
        let no_params: [&str; 0] = [];
        let rows = client
            .query_raw(&sql, no_params)
            .await
            .map_err(pg("read keys"))?;
        pin_mut!(rows);
        while let Some(row) = rows.next().await {
            let row = row.map_err(pg("read keys"))?;
            let mut parts = Vec::with_capacity(entity.key.len());
            for (i, &k) in entity.key.iter().enumerate() {
                let text: String = get(&row, i)?;
                parts.push(validate::normalize(entity.columns[k].kind, &text));
            }
            known.insert_key(entity.name, &parts.join(validate::KEY_SEPARATOR));
        }
    }
    if !validate::from_database("employees", sources, mode) {
        return Ok(known);
    }
    let n: i64 = client
        .query_one("SELECT count(*) FROM employees", &[])
        .await
        .map_err(pg("count employees"))?
        .get(0);
    known.reserve_employees(usize::try_from(n).unwrap_or(0));
    let no_params: [&str; 0] = [];
    let rows = client
        .query_raw("SELECT id, manager_id FROM employees", no_params)
        .await
        .map_err(pg("read managers"))?;
    pin_mut!(rows);
    while let Some(row) = rows.next().await {
        let row = row.map_err(pg("read managers"))?;
        let id: String = get(&row, 0)?;
        let manager: Option<String> = get(&row, 1)?;
        known.insert_manager(
            &validate::normalize(Kind::Text, &id),
            manager
                .map(|m| validate::normalize(Kind::Text, &m))
                .as_deref(),
        );
    }
    Ok(known)
}

/// Validates, then stages and applies in one transaction.
pub async fn import(
    url: &str,
    sources: &[Source],
    options: &ImportOptions,
) -> Result<ImportReport, ExchangeError> {
    let mut client = connect(url).await?;
    let known = load_known(&client, sources, options.mode).await?;
    let (srcs, opts) = (sources.to_vec(), options.clone());
    let checked = tokio::task::spawn_blocking(move || validate::validate(&srcs, &opts, known))
        .await
        .map_err(DirectoryError::from)??;
    if !checked.problems.is_empty() {
        return Err(ExchangeError::Invalid(checked.problems));
    }
    let files = super::digests(sources, &checked);
    let tx = client.transaction().await.map_err(pg("begin import"))?;
    for (source, digest) in sources.iter().zip(&files) {
        stage(&tx, source, options, digest).await?;
    }
    let removals = match options.mode {
        Mode::Replace => sql::removals(&super::entities(sources)),
        Mode::Merge => Vec::new(),
    };
    let counts = count_changes(&tx, sources, &removals).await?;
    let report = ImportReport {
        mode: options.mode,
        dry_run: options.dry_run,
        counts,
        files,
    };
    // Nothing to change: no write, no history row.
    if options.dry_run || !report.changes() {
        tx.rollback().await.map_err(pg("end the import"))?;
        return Ok(report);
    }
    for source in sources {
        tx.execute(&sql::upsert(source.entity, Dialect::Postgres), &[])
            .await
            .map_err(refused)?;
    }
    for removal in &removals {
        tx.execute(&removal.apply, &[]).await.map_err(refused)?;
    }
    let values = record::values(options, &report);
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        values.iter().map(|v| v as _).collect();
    tx.execute(
        &format!(
            "INSERT INTO import_history ({}) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            record::INSERT_COLUMNS
        ),
        &params,
    )
    .await
    .map_err(pg("record the import"))?;
    tx.commit().await.map_err(refused)?;
    Ok(report)
}

/// Streams one file into its staging table with COPY (text format).
async fn stage(
    tx: &Transaction<'_>,
    source: &Source,
    options: &ImportOptions,
    digest: &FileDigest,
) -> Result<(), ExchangeError> {
    let entity = source.entity;
    let stage = sql::stage(entity);
    tx.batch_execute(&format!(
        "CREATE TEMP TABLE {stage} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP",
        entity.table
    ))
    .await
    .map_err(pg("create staging table"))?;
    let cols: Vec<&str> = entity.columns.iter().map(|c| c.sql).collect();
    let copy = format!("COPY {stage} ({}) FROM STDIN", cols.join(", "));
    let sink = tx.copy_in::<_, Bytes>(&copy).await.map_err(refused)?;
    pin_mut!(sink);
    let mut ignored = Problems::default();
    let mut reader = RowReader::open(source, options, &mut ignored)?;
    let mut buf = BytesMut::with_capacity(COPY_CHUNK + 4096);
    while let Some(row) = reader.next_row(entity) {
        let values = row
            .ok()
            .and_then(|r| reader.values(entity, &r))
            .ok_or_else(|| ExchangeError::Changed(source.file.clone()))?;
        copy_line(&mut buf, &values);
        if buf.len() >= COPY_CHUNK {
            sink.send(buf.split().freeze()).await.map_err(refused)?;
        }
    }
    if reader.digest() != digest.sha256 {
        return Err(ExchangeError::Changed(source.file.clone()));
    }
    if !buf.is_empty() {
        sink.send(buf.split().freeze()).await.map_err(refused)?;
    }
    sink.finish().await.map_err(refused)?;
    tx.batch_execute(&format!("ANALYZE {stage}"))
        .await
        .map_err(pg("analyze staging table"))?;
    Ok(())
}

/// One row in COPY's text format: tab-separated, `\N` for NULL.
fn copy_line(buf: &mut BytesMut, values: &[Value]) {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b'\t');
        }
        match v.to_sql_text() {
            None => buf.put_slice(b"\\N"),
            Some(text) => {
                for b in text.bytes() {
                    match b {
                        b'\\' => buf.put_slice(b"\\\\"),
                        b'\t' => buf.put_slice(b"\\t"),
                        b'\n' => buf.put_slice(b"\\n"),
                        b'\r' => buf.put_slice(b"\\r"),
                        _ => buf.put_u8(b),
                    }
                }
            }
        }
    }
    buf.put_u8(b'\n');
}

async fn count(tx: &Transaction<'_>, query: &str) -> Result<u64, ExchangeError> {
    let row = tx.query_one(query, &[]).await.map_err(refused)?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

/// Added, updated, unchanged per file, and what replace mode removes
/// (see the SQLite twin).
async fn count_changes(
    tx: &Transaction<'_>,
    sources: &[Source],
    removals: &[sql::Removal],
) -> Result<Vec<EntityCounts>, ExchangeError> {
    let mut counts = Vec::new();
    for source in sources {
        let entity = source.entity;
        let staged = count(tx, &format!("SELECT count(*) FROM {}", sql::stage(entity))).await?;
        let added = count(tx, &sql::count_added(entity)).await?;
        let unchanged = count(tx, &sql::count_unchanged(entity, Dialect::Postgres)).await?;
        counts.push(EntityCounts {
            entity: entity.name,
            added,
            updated: staged.saturating_sub(added + unchanged),
            unchanged,
            removed: 0,
        });
    }
    for removal in removals {
        if let Some(query) = &removal.count {
            super::add_removed(&mut counts, removal.entity, count(tx, query).await?);
        }
    }
    Ok(counts)
}

/// Rows per entity table ([`super::row_counts`]).
pub async fn row_counts(url: &str) -> Result<Vec<i64>, ExchangeError> {
    let client = connect(url).await?;
    let row = client
        .query_one(&super::row_counts_sql(), &[])
        .await
        .map_err(pg("count the directory's rows"))?;
    (0..super::spec::ENTITIES.len())
        .map(|i| get(&row, i).map_err(ExchangeError::from))
        .collect()
}

/// The newest `limit` imports, oldest first.
pub async fn history(url: &str, limit: u32) -> Result<Vec<ImportRecord>, ExchangeError> {
    let client = connect(url).await?;
    let sql = format!(
        "SELECT id, {} FROM (SELECT * FROM import_history ORDER BY id DESC LIMIT $1) h ORDER BY id",
        record::INSERT_COLUMNS
    );
    let rows = match client.query(&sql, &[&i64::from(limit)]).await {
        Ok(rows) => rows,
        // A database that was never imported into (or migrated) has none.
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) => {
            return Ok(Vec::new());
        }
        Err(e) => return Err(pg("read import history")(e)),
    };
    rows.iter()
        .map(|r| {
            Ok(record::record(
                get(r, 0)?,
                [
                    get(r, 1)?,
                    get(r, 2)?,
                    get(r, 3)?,
                    get(r, 4)?,
                    get(r, 5)?,
                    get(r, 6)?,
                    get(r, 7)?,
                ],
            ))
        })
        .collect()
}
