//! PostgreSQL databases for the tests: the scratch cluster's helpers
//! (`scripts/pg_scratch.rs`) and a database holding the seeded directory.
//! `employee-mcp-server`'s harness includes this file by path.

#[path = "../../../../../scripts/pg_scratch.rs"]
mod scratch;

use std::sync::OnceLock;

pub use scratch::*;

/// A new database holding the seeded employee directory, copied from a
/// template seeded once per test process (by `Directory::open` on its own
/// runtime, so its connections are gone before the first copy).
pub fn seeded_database() -> String {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        let url = fresh_database();
        let seed_url = url.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let clock = std::sync::Arc::new(employee_directory::SystemClock);
                employee_directory::Directory::open(&seed_url, clock)
                    .await
                    .expect("seed the template database");
            });
        })
        .join()
        .expect("seeding thread");
        database_name(&url).to_owned()
    });
    let base = cluster_url();
    let name = unique_name("c");
    // The template's last backends may still be exiting: retry briefly.
    let sql = format!("CREATE DATABASE {name} TEMPLATE {template}");
    let mut attempts = 0;
    loop {
        match try_psql(base, &sql) {
            Ok(_) => break,
            Err(e) if e.contains("being accessed") && attempts < 100 => {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => panic!("{sql}: {e}"),
        }
    }
    url_of(&name)
}
