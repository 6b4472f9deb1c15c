//! Three replicas of the real binary on one PostgreSQL database enforce
//! the per-caller rate limit together: a client spreading its calls over
//! the replicas (as a round-robin balancer would) gets one burst, not one
//! per replica.

use crate::common;

use common::pg::fresh_database;
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_rate_limit_holds_for_the_cluster() {
    let url = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("database");
    let flags = ["--rate-limit-per-minute", "1", "--rate-limit-burst", "6"];
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(Server::start_on_postgres(&url, &flags).await);
    }
    let (mut admitted, mut limited) = (0, 0);
    for i in 0..15 {
        let reply = replicas[i % 3]
            .rpc(
                "tools/call",
                json!({ "name": "get-employee-details", "arguments": { "employeeId": "AliceJohnson" } }),
            )
            .await;
        match reply {
            Ok(_) => admitted += 1,
            Err(e) => {
                assert_eq!(e.code(), Some(-31002), "{e}");
                limited += 1;
            }
        }
    }
    // One bucket of 6 for the three (refill: 1 a minute).
    assert_eq!((admitted, limited), (6, 9));
    // Limited, not broken: every replica still lists its tools.
    for r in &replicas {
        r.rpc("tools/list", json!({}))
            .await
            .expect("tools/list while limited");
    }
}
