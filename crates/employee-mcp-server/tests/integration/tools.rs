//! Every tool on the modern (2026-07-28) wire: realistic arguments, checks on
//! the structured content, ids flowing from one tool into another, and the
//! not-found / invalid-argument paths. Every test runs on SQLite and on
//! PostgreSQL (`sqlite::NAME`, `postgres::NAME`).

use crate::common;

use common::{Backend, Server, TOOL_NAMES, details_asking, pick, text_json, tool_error_text};
use mcpwire_server::protocol::meta;
use serde_json::{Value, json};

/// A successful modern tool result: complete, not an error, with
/// `structuredContent` equal to the JSON in its text block. Returns the
/// structured content.
#[track_caller]
fn ok_structured(result: &Value) -> Value {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_ne!(result["isError"], true, "unexpected tool error: {result}");
    assert_eq!(
        result["_meta"][meta::SERVER_INFO]["name"],
        "employee-mcp-server",
        "{result}"
    );
    let structured = result["structuredContent"].clone();
    assert!(structured.is_object(), "no structuredContent: {result}");
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    assert_eq!(
        text_json(result),
        structured,
        "text block differs from structuredContent"
    );
    structured
}

fn ids(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|e| {
            e[field]
                .as_str()
                .unwrap_or_else(|| panic!("no {field} in {e}"))
                .to_owned()
        })
        .collect()
}

async fn tools_list_modern_shape(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let result = server.rpc("tools/list", json!({})).await;
    let result = result.unwrap_or_else(|e| panic!("tools/list: {e}"));
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOL_NAMES);
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(tool["title"].is_string(), "{name}: no title");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(
            tool["annotations"]["readOnlyHint"], true,
            "{name}: HR reads are read-only"
        );
        assert!(tool["outputSchema"].is_object(), "{name}: no outputSchema");
    }
}

async fn get_employee_details_and_follow_the_ids(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let john = ok_structured(
        &server
            .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
            .await,
    );
    assert_eq!(john["employeeId"], "JohnDoe");
    assert_eq!(john["name"], "John Doe");
    assert_eq!(john["managerId"], "AliceJohnson");
    assert_eq!(john["manager"], "Alice Johnson");
    assert_eq!(john["departmentId"], "engineering");
    assert_eq!(john["teamId"], "backend");
    assert!(john["email"].as_str().unwrap().contains('@'));
    assert!(john["skills"].as_array().is_some_and(|s| !s.is_empty()));
    assert!(
        john["employmentHistory"]
            .as_array()
            .is_some_and(|h| !h.is_empty())
    );

    // managerId -> get-employee-details
    let manager_id = john["managerId"].as_str().unwrap();
    let alice = ok_structured(
        &server
            .call_tool("get-employee-details", json!({"employeeId": manager_id}))
            .await,
    );
    assert_eq!(alice["name"], "Alice Johnson");
    assert_eq!(alice["department"], "Engineering");
    assert!(alice["directReports"].as_u64().unwrap() >= 1, "{alice}");

    // teamId -> get-team-members: John is on it, Alice manages it.
    let team_id = john["teamId"].as_str().unwrap();
    let team = ok_structured(
        &server
            .call_tool("get-team-members", json!({"teamId": team_id, "limit": 250}))
            .await,
    );
    // One page holds the whole team at the largest limit.
    assert!(team.get("nextCursor").is_none_or(Value::is_null), "{team}");
    let members = ids(&team["members"], "employeeId");
    assert!(members.contains(&"JohnDoe".to_owned()), "{members:?}");
    assert_eq!(members[0], "AliceJohnson", "manager first");
    assert_eq!(team["count"].as_u64().unwrap() as usize, members.len());
    for member in team["members"].as_array().unwrap().iter().skip(1) {
        assert!(
            member["managerId"].is_string(),
            "member without managerId: {member}"
        );
    }

    // departmentId -> list-department-employees
    let dept_id = john["departmentId"].as_str().unwrap();
    let dept = ok_structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": dept_id, "limit": 500}),
            )
            .await,
    );
    assert_eq!(dept["department"]["departmentId"], "engineering");
    let staff = ids(&dept["employees"], "employeeId");
    assert!(staff.contains(&"JohnDoe".to_owned()));
    assert!(staff.contains(&"AliceJohnson".to_owned()));
    assert_eq!(dept["count"].as_u64().unwrap() as usize, staff.len());
}

async fn ids_accepted_by_alternative_spellings(backend: Backend) {
    let server = Server::start_backend(backend).await;
    for id in ["Alice Johnson", "alice.johnson@acmecorp.com"] {
        let r = ok_structured(
            &server
                .call_tool("get-employee-details", json!({"employeeId": id}))
                .await,
        );
        assert_eq!(r["employeeId"], "AliceJohnson", "{id}");
    }
    let r = ok_structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "Engineering"}),
            )
            .await,
    );
    assert_eq!(r["department"]["departmentId"], "engineering");
    let r = ok_structured(
        &server
            .call_tool("get-team-members", json!({"teamId": "Backend"}))
            .await,
    );
    assert!(ids(&r["members"], "employeeId").contains(&"AliceJohnson".to_owned()));
}

async fn department_list_ids_work_everywhere(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let dept = ok_structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "engineering"}),
            )
            .await,
    );
    // Every team listed for the department is accepted by get-team-members.
    let teams = ids(&dept["department"]["teams"], "teamId");
    assert!(teams.contains(&"backend".to_owned()), "{teams:?}");
    for team in &teams {
        let r = ok_structured(
            &server
                .call_tool("get-team-members", json!({"teamId": team}))
                .await,
        );
        assert!(r["count"].as_u64().unwrap() > 0, "{team}: empty team");
    }
    // The department head and a listed employee are real ids for the other tools.
    let head = dept["department"]["headId"].as_str().unwrap();
    let head_details = ok_structured(
        &server
            .call_tool("get-employee-details", json!({"employeeId": head}))
            .await,
    );
    assert_eq!(head_details["departmentId"], "engineering");
    let someone = dept["employees"][5]["employeeId"].as_str().unwrap();
    let tenure = ok_structured(
        &server
            .call_tool("calculate-employee-tenure", json!({"employeeId": someone}))
            .await,
    );
    assert_eq!(tenure["employeeId"], someone);
    let leave = ok_structured(
        &server
            .call_tool(
                "check-leave-balance",
                json!({"employeeId": someone, "leaveType": "sick"}),
            )
            .await,
    );
    assert_eq!(leave["employeeId"], someone);
    assert_eq!(leave["leaveType"], "sick");
}

async fn calculate_employee_tenure(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let t = ok_structured(
        &server
            .call_tool(
                "calculate-employee-tenure",
                json!({"employeeId": "AliceJohnson"}),
            )
            .await,
    );
    assert_eq!(t["employeeId"], "AliceJohnson");
    assert_eq!(t["startDate"], "2016-06-13");
    let years = t["years"].as_u64().unwrap();
    assert!(years >= 10, "Alice started in 2016: {t}");
    assert!(t["months"].as_u64().unwrap() < 12);
    assert!(t["days"].as_u64().unwrap() < 31);
    assert!(t["totalDays"].as_u64().unwrap() > 365 * 10);
    assert!(
        t["summary"].as_str().unwrap().contains(&years.to_string()),
        "{t}"
    );
}

async fn search_employees_by_skill_and_follow_a_match(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let found = ok_structured(
        &server
            .call_tool("search-employees-by-skill", json!({"skill": "rust"}))
            .await,
    );
    let matches = found["matches"].as_array().unwrap();
    assert!(!matches.is_empty());
    assert!(matches.len() <= 100);
    assert!(found["total"].as_u64().unwrap() as usize >= matches.len());
    assert_eq!(
        found["truncated"],
        found["total"].as_u64().unwrap() as usize > matches.len()
    );
    for m in matches {
        assert!(
            m["skill"].as_str().unwrap().eq_ignore_ascii_case("rust"),
            "{m}"
        );
    }
    // A match's id is accepted by get-employee-details, which lists the skill.
    let id = matches[0]["employeeId"].as_str().unwrap();
    let details = ok_structured(
        &server
            .call_tool("get-employee-details", json!({"employeeId": id}))
            .await,
    );
    let skills: Vec<String> = details["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["skill"].as_str().unwrap().to_lowercase())
        .collect();
    assert!(skills.contains(&"rust".to_owned()), "{skills:?}");
    // Its teamId is accepted by get-team-members.
    let team_id = matches[0]["teamId"].as_str().unwrap();
    let team = ok_structured(
        &server
            .call_tool("get-team-members", json!({"teamId": team_id}))
            .await,
    );
    assert!(ids(&team["members"], "employeeId").contains(&id.to_owned()));
}

async fn get_compensation_info_and_level_prefix(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let band = ok_structured(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": "Software Engineer", "level": "senior"}),
            )
            .await,
    );
    assert_eq!(band["role"], "Software Engineer");
    assert_eq!(band["level"], "senior");
    let (min, mid, max) = (
        band["min"].as_u64().unwrap(),
        band["mid"].as_u64().unwrap(),
        band["max"].as_u64().unwrap(),
    );
    assert!(min < mid && mid < max, "{band}");
    assert!(band["currency"].is_string());
    // The role of an employee (from get-employee-details) is a known role.
    let john = ok_structured(
        &server
            .call_tool("get-employee-details", json!({"employeeId": "JohnDoe"}))
            .await,
    );
    let again = ok_structured(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": john["role"], "level": john["level"]}),
            )
            .await,
    );
    assert_eq!(again["role"], john["role"]);
    // "Senior" prefix in the role is ignored.
    let prefixed = ok_structured(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": "Senior Software Engineer", "level": "senior"}),
            )
            .await,
    );
    assert_eq!(prefixed["min"], band["min"]);
}

async fn check_leave_balance_every_type(backend: Backend) {
    let server = Server::start_backend(backend).await;
    for leave_type in ["annual", "sick", "parental", "bereavement", "unpaid"] {
        let b = ok_structured(
            &server
                .call_tool(
                    "check-leave-balance",
                    json!({"employeeId": "AliceJohnson", "leaveType": leave_type}),
                )
                .await,
        );
        assert_eq!(b["employeeId"], "AliceJohnson");
        assert_eq!(b["leaveType"], leave_type);
        let f = |k: &str| {
            b[k].as_f64()
                .unwrap_or_else(|| panic!("{leave_type}: no {k} in {b}"))
        };
        assert!(f("used") >= 0.0 && f("pending") >= 0.0, "{b}");
        if leave_type == "annual" {
            assert!(f("entitled") > 0.0, "{b}");
            assert!(
                (f("entitled") - f("used") - f("pending") - f("remaining")).abs() < 1e-9,
                "entitled = used + pending + remaining: {b}"
            );
        }
    }
}

async fn generate_employee_report_each_type(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let headcount = ok_structured(
        &server
            .call_tool(
                "generate-employee-report",
                json!({"reportType": "headcount"}),
            )
            .await,
    );
    assert_eq!(headcount["reportType"], "headcount");
    let total = headcount["totalActive"].as_u64().unwrap();
    let by_dept: u64 = headcount["byDepartment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["headcount"].as_u64().unwrap())
        .sum();
    assert_eq!(by_dept, total, "departments add up to the total");
    // Department keys in the report are department ids.
    let eng = headcount["byDepartment"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["key"] == "engineering")
        .expect("engineering in headcount")
        .clone();
    let roster = ok_structured(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "engineering"}),
            )
            .await,
    );
    assert_eq!(eng["headcount"], roster["total"], "headcount vs roster");

    let turnover = ok_structured(
        &server
            .call_tool(
                "generate-employee-report",
                json!({"reportType": "turnover"}),
            )
            .await,
    );
    assert_eq!(turnover["reportType"], "turnover");
    assert!(turnover["overall"]["turnoverRatePercent"].is_number());
    for d in turnover["byDepartment"].as_array().unwrap() {
        let id = d["departmentId"].as_str().unwrap();
        let r = server
            .call_tool("list-department-employees", json!({"departmentId": id}))
            .await;
        ok_structured(&r);
    }

    let comp = ok_structured(
        &server
            .call_tool(
                "generate-employee-report",
                json!({"reportType": "compensation"}),
            )
            .await,
    );
    assert_eq!(comp["reportType"], "compensation");
    assert_eq!(comp["overall"]["headcount"].as_u64().unwrap(), total);
    assert!(comp["byLevel"].as_array().is_some_and(|l| !l.is_empty()));
}

async fn not_found_employee_suggests_ids(backend: Backend) {
    let server = Server::start_backend(backend).await;
    for tool in ["get-employee-details", "calculate-employee-tenure"] {
        let text = tool_error_text(&server.call_tool(tool, json!({"employeeId": "JohnD"})).await);
        assert!(text.contains("JohnD"), "{tool}: {text}");
        assert!(
            text.contains("JohnDoe"),
            "{tool}: should suggest JohnDoe: {text}"
        );
    }
    let text = tool_error_text(
        &server
            .call_tool(
                "check-leave-balance",
                json!({"employeeId": "Alice Jonson", "leaveType": "annual"}),
            )
            .await,
    );
    assert!(
        text.contains("AliceJohnson"),
        "should suggest AliceJohnson: {text}"
    );
    // No close match at all: the message says how to find ids.
    let text = tool_error_text(
        &server
            .call_tool("get-employee-details", json!({"employeeId": "Zzqxv"}))
            .await,
    );
    assert!(
        text.contains("list-department-employees") || text.contains("search-employees-by-skill"),
        "{text}"
    );
}

async fn not_found_pascal_case_typo_suggests_the_near_id(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let text = tool_error_text(
        &server
            .call_tool(
                "get-employee-details",
                json!({"employeeId": "AliceJohnsen"}),
            )
            .await,
    );
    assert!(
        text.contains("AliceJohnson"),
        "should suggest AliceJohnson: {text}"
    );
}

async fn not_found_department_team_skill_role_list_valid_values(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let text = tool_error_text(
        &server
            .call_tool(
                "list-department-employees",
                json!({"departmentId": "rocketry"}),
            )
            .await,
    );
    assert!(text.contains("rocketry"), "{text}");
    assert!(
        text.contains("engineering") && text.contains("finance"),
        "{text}"
    );

    let text = tool_error_text(
        &server
            .call_tool("get-team-members", json!({"teamId": "underwater"}))
            .await,
    );
    assert!(
        text.contains("backend") && text.contains("frontend"),
        "{text}"
    );

    let text = tool_error_text(
        &server
            .call_tool(
                "search-employees-by-skill",
                json!({"skill": "Basketweaving"}),
            )
            .await,
    );
    assert!(
        text.contains("Rust") && text.contains("Kubernetes"),
        "{text}"
    );

    let text = tool_error_text(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": "Astronaut", "level": "senior"}),
            )
            .await,
    );
    assert!(
        text.contains("Software Engineer"),
        "lists known roles: {text}"
    );

    let text = tool_error_text(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": "Software Engineer", "level": "executive"}),
            )
            .await,
    );
    assert!(
        text.contains("senior") && text.contains("junior"),
        "lists levels: {text}"
    );
}

async fn invalid_enum_values_name_the_field(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let cases = [
        (
            "check-leave-balance",
            json!({"employeeId": "AliceJohnson", "leaveType": "vacation"}),
            "leaveType",
        ),
        (
            "generate-employee-report",
            json!({"reportType": "salaries"}),
            "reportType",
        ),
        (
            "get-compensation-info",
            json!({"role": "Software Engineer", "level": "wizard"}),
            "level",
        ),
    ];
    for (tool, args, field) in cases {
        let result = server.call_tool(tool, args).await;
        assert_eq!(result["resultType"], "complete", "{result}");
        let text = tool_error_text(&result);
        assert!(text.contains(field), "{tool}: should name {field}: {text}");
    }
}

async fn invalid_enum_value_lists_every_valid_value(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let text = tool_error_text(
        &server
            .call_tool(
                "check-leave-balance",
                json!({"employeeId": "AliceJohnson", "leaveType": "vacation"}),
            )
            .await,
    );
    for v in ["annual", "sick", "parental", "bereavement", "unpaid"] {
        assert!(text.contains(v), "missing {v}: {text}");
    }
}

async fn unknown_extra_argument_is_a_tool_error(backend: Backend) {
    let server = Server::start_backend(backend).await;
    for tool in TOOL_NAMES {
        let result = server.call_tool(tool, json!({"bogusArgument": 1})).await;
        let text = tool_error_text(&result);
        assert!(text.contains(tool), "{text}");
    }
    let result = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson", "includeSalary": true}),
        )
        .await;
    let text = tool_error_text(&result);
    assert!(
        text.contains("includeSalary"),
        "names the extra argument: {text}"
    );
}

async fn missing_and_malformed_arguments_are_tool_errors(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let text = tool_error_text(&server.call_tool("get-employee-details", json!({})).await);
    assert!(text.contains("employeeId"), "{text}");
    let text = tool_error_text(
        &server
            .call_tool(
                "get-compensation-info",
                json!({"role": "Software Engineer"}),
            )
            .await,
    );
    assert!(text.contains("level"), "{text}");
    let text = tool_error_text(
        &server
            .call_tool("get-employee-details", json!({"employeeId": 42}))
            .await,
    );
    assert!(text.contains("employeeId"), "{text}");
    // Pattern: control characters / leading punctuation are rejected.
    let text = tool_error_text(
        &server
            .call_tool(
                "get-employee-details",
                json!({"employeeId": "'; DROP TABLE employees;--"}),
            )
            .await,
    );
    assert!(text.contains("employeeId"), "{text}");
    let text = tool_error_text(
        &server
            .call_tool("get-team-members", json!({"teamId": "x".repeat(500)}))
            .await,
    );
    assert!(text.contains("teamId"), "{text}");
    // And the directory still answers.
    server.assert_alive().await;
}

async fn unknown_tool_is_invalid_params(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let reply = server
        .modern(
            "tools/call",
            json!({"name": "fire-employee", "arguments": {}}),
        )
        .await;
    reply.assert_error(200, -32602);
    assert!(
        reply.error_message().contains("fire-employee"),
        "{}",
        reply.text
    );
    server.assert_alive().await;
}

async fn unknown_employee_is_asked_about_when_the_client_can_elicit(backend: Backend) {
    let server = Server::start_backend(backend).await;
    let round1 = details_asking(&server, "Alice Jonson", json!({})).await;
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    let ask = &round1["inputRequests"]["employee"];
    assert_eq!(ask["method"], "elicitation/create", "{round1}");
    let offered = &ask["params"]["requestedSchema"]["properties"]["employeeId"]["enum"];
    assert!(
        offered
            .as_array()
            .is_some_and(|a| a.contains(&json!("AliceJohnson"))),
        "offers AliceJohnson: {round1}"
    );
    assert!(round1["requestState"].is_string(), "{round1}");

    // The user's choice returns that employee, as a direct call would.
    let expected = server
        .call_tool(
            "get-employee-details",
            json!({"employeeId": "AliceJohnson"}),
        )
        .await;
    let chosen = details_asking(
        &server,
        "Alice Jonson",
        pick(&round1, "accept", "AliceJohnson"),
    )
    .await;
    assert_eq!(
        chosen["structuredContent"], expected["structuredContent"],
        "{chosen}"
    );
    // Replayed within its lifetime, the state reads the same again: it only
    // limits the choice to the ids offered and grants nothing a direct call
    // would not, so single use is deliberately not enforced (docs/protocol.md).
    let again = details_asking(
        &server,
        "Alice Jonson",
        pick(&round1, "accept", "AliceJohnson"),
    )
    .await;
    assert_eq!(again["structuredContent"], expected["structuredContent"]);

    // Declined, or an id that was not offered: the plain "did you mean".
    for (action, id) in [("decline", "AliceJohnson"), ("accept", "JohnDoe")] {
        let r = details_asking(&server, "Alice Jonson", pick(&round1, action, id)).await;
        let text = tool_error_text(&r);
        assert!(
            text.contains("Did you mean") && text.contains("AliceJohnson"),
            "{action} {id}: {text}"
        );
    }
}

mod sqlite {
    #[tokio::test]
    async fn tools_list_modern_shape() {
        super::tools_list_modern_shape(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn get_employee_details_and_follow_the_ids() {
        super::get_employee_details_and_follow_the_ids(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn ids_accepted_by_alternative_spellings() {
        super::ids_accepted_by_alternative_spellings(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn department_list_ids_work_everywhere() {
        super::department_list_ids_work_everywhere(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn calculate_employee_tenure() {
        super::calculate_employee_tenure(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn search_employees_by_skill_and_follow_a_match() {
        super::search_employees_by_skill_and_follow_a_match(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn get_compensation_info_and_level_prefix() {
        super::get_compensation_info_and_level_prefix(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn check_leave_balance_every_type() {
        super::check_leave_balance_every_type(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn generate_employee_report_each_type() {
        super::generate_employee_report_each_type(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn not_found_employee_suggests_ids() {
        super::not_found_employee_suggests_ids(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn not_found_pascal_case_typo_suggests_the_near_id() {
        super::not_found_pascal_case_typo_suggests_the_near_id(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn not_found_department_team_skill_role_list_valid_values() {
        super::not_found_department_team_skill_role_list_valid_values(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn invalid_enum_values_name_the_field() {
        super::invalid_enum_values_name_the_field(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn invalid_enum_value_lists_every_valid_value() {
        super::invalid_enum_value_lists_every_valid_value(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn unknown_extra_argument_is_a_tool_error() {
        super::unknown_extra_argument_is_a_tool_error(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn missing_and_malformed_arguments_are_tool_errors() {
        super::missing_and_malformed_arguments_are_tool_errors(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn unknown_tool_is_invalid_params() {
        super::unknown_tool_is_invalid_params(super::Backend::Sqlite).await
    }
    #[tokio::test]
    async fn unknown_employee_is_asked_about_when_the_client_can_elicit() {
        super::unknown_employee_is_asked_about_when_the_client_can_elicit(super::Backend::Sqlite)
            .await
    }
}

mod postgres {
    #[tokio::test]
    async fn tools_list_modern_shape() {
        super::tools_list_modern_shape(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn get_employee_details_and_follow_the_ids() {
        super::get_employee_details_and_follow_the_ids(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn ids_accepted_by_alternative_spellings() {
        super::ids_accepted_by_alternative_spellings(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn department_list_ids_work_everywhere() {
        super::department_list_ids_work_everywhere(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn calculate_employee_tenure() {
        super::calculate_employee_tenure(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn search_employees_by_skill_and_follow_a_match() {
        super::search_employees_by_skill_and_follow_a_match(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn get_compensation_info_and_level_prefix() {
        super::get_compensation_info_and_level_prefix(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn check_leave_balance_every_type() {
        super::check_leave_balance_every_type(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn generate_employee_report_each_type() {
        super::generate_employee_report_each_type(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn not_found_employee_suggests_ids() {
        super::not_found_employee_suggests_ids(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn not_found_pascal_case_typo_suggests_the_near_id() {
        super::not_found_pascal_case_typo_suggests_the_near_id(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn not_found_department_team_skill_role_list_valid_values() {
        super::not_found_department_team_skill_role_list_valid_values(super::Backend::Postgres)
            .await
    }
    #[tokio::test]
    async fn invalid_enum_values_name_the_field() {
        super::invalid_enum_values_name_the_field(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn invalid_enum_value_lists_every_valid_value() {
        super::invalid_enum_value_lists_every_valid_value(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn unknown_extra_argument_is_a_tool_error() {
        super::unknown_extra_argument_is_a_tool_error(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn missing_and_malformed_arguments_are_tool_errors() {
        super::missing_and_malformed_arguments_are_tool_errors(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn unknown_tool_is_invalid_params() {
        super::unknown_tool_is_invalid_params(super::Backend::Postgres).await
    }
    #[tokio::test]
    async fn unknown_employee_is_asked_about_when_the_client_can_elicit() {
        super::unknown_employee_is_asked_about_when_the_client_can_elicit(super::Backend::Postgres)
            .await
    }
}
