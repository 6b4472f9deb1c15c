//! Keeps a server's tool set equal to the catalogue: polls the generation
//! counter (one single-row read) every [`POLL_INTERVAL`], and on a change
//! rebuilds the set and swaps it in at once. A lost database (deleted,
//! locked, restarted) is retried on the next tick with a fresh connection.
//!
//! [`Watcher::reload_now`] skips the wait (a PostgreSQL `LISTEN` path can
//! call it). With `--tools-file`, the file is polled too and each valid
//! edit is written to the catalogue, which the same loop then picks up on
//! every replica; a broken edit is logged and changes nothing.
//!
//! On a SQLite file, each tick first checks the server's pinned file: once
//! it was replaced or removed, the catalogue is not read (that would open
//! the other file) and the last tool set stays served until restart.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use employee_directory::pinned::PinnedFile;
use mcpwire_server::Server;
use tokio::sync::Notify;

use super::{Catalog, Error};
use crate::custom::spec;

/// How often the generation is read (≤ 500 ms, so a change is served
/// everywhere within a second).
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Handle on a running watcher.
#[derive(Clone)]
pub struct Watcher {
    reload: Arc<Notify>,
}

impl Watcher {
    /// Re-reads the catalogue now instead of at the next tick.
    #[allow(dead_code)] // for the PostgreSQL LISTEN path
    pub fn reload_now(&self) {
        self.reload.notify_one();
    }
}

/// Applies the catalogue once (before serving), then keeps applying it.
pub async fn start(
    catalog: Arc<Catalog>,
    server: Server,
    tools_file: Option<PathBuf>,
    actor: String,
    pin: Option<Arc<PinnedFile>>,
) -> Result<Watcher, Error> {
    let mut file = tools_file.map(|path| ToolsFile {
        path,
        last: None,
        actor,
    });
    if let Some(f) = file.as_mut() {
        // At start a broken file is an error: nothing was served from it yet.
        f.sync(&catalog).await?;
    }
    let applied = apply(&catalog, &server, None).await?;
    let reload = Arc::new(Notify::new());
    let watcher = Watcher {
        reload: Arc::clone(&reload),
    };
    tokio::spawn(run(catalog, server, file, reload, applied, pin));
    Ok(watcher)
}

/// Swaps the server's tools for the catalogue's if the generation moved
/// past `applied`; returns the generation now served.
async fn apply(
    catalog: &Arc<Catalog>,
    server: &Server,
    applied: Option<i64>,
) -> Result<i64, Error> {
    let generation = catalog.store().generation().await?;
    if applied == Some(generation) {
        return Ok(generation);
    }
    let (generation, tools) = catalog.tool_set().await?;
    let names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
    server.replace_tools(tools).map_err(Error::InvalidToolSet)?;
    tracing::info!(generation, tools = ?names, "tool set applied from the catalogue");
    Ok(generation)
}

async fn run(
    catalog: Arc<Catalog>,
    server: Server,
    mut file: Option<ToolsFile>,
    reload: Arc<Notify>,
    mut applied: i64,
    pin: Option<Arc<PinnedFile>>,
) {
    let shutdown = server.shutdown_token();
    let mut failing = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(POLL_INTERVAL) => {}
            _ = reload.notified() => {}
        }
        if let Some(Err(e)) = pin.as_deref().map(PinnedFile::check) {
            if !failing {
                failing = true;
                tracing::warn!(reason = %e, "not reading the tool catalogue; keeping the tool set last applied");
            }
            continue;
        }
        if let Some(f) = file.take() {
            file = sync_file(&catalog, f).await;
        }
        // A lost database (deleted, locked, restarted, PostgreSQL down) is
        // logged once and retried on the next tick: serving goes on with
        // the tool set last applied.
        match apply(&catalog, &server, Some(applied)).await {
            Ok(g) => {
                if failing {
                    tracing::info!("tool catalogue readable again");
                }
                applied = g;
                failing = false;
            }
            Err(reason) if !failing => {
                failing = true;
                tracing::warn!(%reason, "cannot read the tool catalogue; retrying");
            }
            Err(_) => {}
        }
    }
}

/// One `--tools-file` check; a refused edit is logged.
async fn sync_file(catalog: &Arc<Catalog>, mut f: ToolsFile) -> Option<ToolsFile> {
    if let Err(reason) = f.sync(catalog).await {
        tracing::warn!(file = %f.path.display(), %reason, "tools file not applied; keeping the previous tool set");
    }
    Some(f)
}

/// A `--tools-file` and the content last read from it.
#[derive(Clone)]
struct ToolsFile {
    path: PathBuf,
    last: Option<String>,
    actor: String,
}

impl ToolsFile {
    /// Writes the file's tools to the catalogue if its content changed and
    /// checks; on any error the catalogue is left as it was.
    async fn sync(&mut self, catalog: &Catalog) -> Result<(), Error> {
        let path = self.path.clone();
        let text = tokio::task::spawn_blocking(move || spec::read_file(&path))
            .await
            .map_err(Error::ReadTask)?
            .map_err(Error::Custom)?;
        // A content seen before (applied, or refused and logged) is not
        // tried again until the file changes.
        if self.last.as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        self.last = Some(text.clone());
        let specs = spec::parse_file(&text)?;
        let checked = catalog
            .checker()
            .check_all(specs, &catalog.builtin_names())
            .await?;
        let specs: Vec<spec::ToolSpec> = checked.into_iter().map(|c| c.spec).collect();
        let source = format!("file:{}", self.path.display());
        catalog
            .store()
            .put_custom(specs, source, true, &self.actor, catalog.max_custom())
            .await?;
        Ok(())
    }
}
