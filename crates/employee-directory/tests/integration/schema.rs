//! The output types' JSON Schemas carry the descriptions a model reads.

use employee_directory::{
    CompensationBand, DepartmentRoster, EmployeeDetails, LeaveBalance, LeaveType, Level, Report,
    ReportType, SkillSearch, TeamRoster, Tenure,
};
use serde_json::Value;

fn schema<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap()
}

/// All string values anywhere in a schema (for enum checks).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[test]
fn output_fields_are_camel_case_and_described() {
    for (name, schema) in [
        ("EmployeeDetails", schema::<EmployeeDetails>()),
        ("Tenure", schema::<Tenure>()),
        ("DepartmentRoster", schema::<DepartmentRoster>()),
        ("TeamRoster", schema::<TeamRoster>()),
        ("SkillSearch", schema::<SkillSearch>()),
        ("CompensationBand", schema::<CompensationBand>()),
        ("LeaveBalance", schema::<LeaveBalance>()),
    ] {
        let props = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}"));
        for (field, prop) in props {
            assert!(!field.contains('_'), "{name}.{field} is not camelCase");
            assert!(
                prop.get("description").is_some(),
                "{name}.{field} has no description"
            );
        }
    }
    let details = schema::<EmployeeDetails>();
    assert!(details["properties"]["employeeId"].is_object());
    assert!(details["properties"]["managerId"].is_object());
}

#[test]
fn input_enums_list_their_values() {
    let mut values = Vec::new();
    strings(&schema::<Level>(), &mut values);
    for level in Level::ALL {
        assert!(values.contains(&level.as_str().to_string()), "{level}");
    }
    let mut values = Vec::new();
    strings(&schema::<LeaveType>(), &mut values);
    for t in LeaveType::ALL {
        assert!(values.contains(&t.as_str().to_string()), "{t}");
    }
    let parsed: ReportType = serde_json::from_str("\"turnover\"").unwrap();
    assert_eq!(parsed, ReportType::Turnover);
    assert!(serde_json::from_str::<Level>("\"L9\"").is_err());
}

#[test]
fn report_schema_is_tagged() {
    let mut values = Vec::new();
    strings(&schema::<Report>(), &mut values);
    assert!(values.contains(&"reportType".to_string()));
    for kind in ReportType::ALL {
        assert!(values.contains(&kind.as_str().to_string()), "{kind}");
    }
}
