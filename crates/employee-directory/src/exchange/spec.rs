//! The exchange format: which entities there are, their file names and
//! columns (in the tools' vocabulary), how each maps to a table column, its
//! type, whether it is required and what it refers to. Every other part of
//! the exchange (readers, writers, validation, both applies) is driven by
//! this table, so a column is described once.

/// What a column holds, in the file and in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// A whole number (64-bit).
    Int,
    /// A non-negative decimal number (days of leave).
    Days,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// One of a fixed set of words, stored as the word.
    Enum(&'static [&'static str]),
    /// One of a fixed set of words, stored as its 1-based rank.
    Ranked(&'static [&'static str]),
}

/// One column of an entity file.
#[derive(Debug)]
pub struct Column {
    /// The name in the file (header or JSON key).
    pub name: &'static str,
    /// The table column.
    pub sql: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether every row must have a value.
    pub required: bool,
    /// The value used when an optional column is absent or empty.
    pub default: Option<&'static str>,
    /// The entity whose (single-column) key this value must name.
    pub refers: Option<&'static str>,
    /// Whether a value may span lines (CR, LF): free text such as a
    /// description. Other control characters are refused everywhere.
    pub multiline: bool,
}

/// One entity: a file and a table.
#[derive(Debug)]
pub struct Entity {
    /// File stem (`employees` → `employees.csv`) and the name in summaries.
    pub name: &'static str,
    /// The table.
    pub table: &'static str,
    /// Its columns, in file order.
    pub columns: &'static [Column],
    /// Indexes (into `columns`) of the key that identifies a row.
    pub key: &'static [usize],
}

impl Entity {
    /// The column called `name` in files.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Indexes of the columns that are not part of the key.
    pub fn non_key(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.columns.len()).filter(|i| !self.key.contains(i))
    }
}

/// Levels of a compensation band or an employee.
pub const LEVELS: &[&str] = &[
    "junior",
    "mid",
    "senior",
    "staff",
    "principal",
    "director",
    "executive",
];
const TRACKS: &[&str] = &["individual-contributor", "manager", "executive"];
const EMPLOYMENT: &[&str] = &["full-time", "part-time", "contractor"];
const OFFICE: &[&str] = &["remote", "hybrid", "on-site"];
const STATUS: &[&str] = &["active", "terminated"];
const REASONS: &[&str] = &["voluntary", "involuntary"];
const EVENTS: &[&str] = &["previous-employer", "hired", "promoted"];
const LEAVE: &[&str] = &["annual", "sick", "parental", "bereavement", "unpaid"];
const PROFICIENCY: &[&str] = &["beginner", "intermediate", "advanced", "expert"];

const fn col(name: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column {
        name,
        sql,
        kind,
        required: true,
        default: None,
        refers: None,
        multiline: false,
    }
}

const fn opt(name: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column {
        required: false,
        ..col(name, sql, kind)
    }
}

/// Free text whose values may span lines.
const fn lines(mut c: Column) -> Column {
    c.multiline = true;
    c
}

const fn reference(mut c: Column, entity: &'static str) -> Column {
    c.refers = Some(entity);
    c
}

/// Entity names, in the order they are applied (referenced before
/// referencing; the cyclic references are deferred in the schema).
pub const ENTITIES: &[Entity] = &[
    Entity {
        name: "locations",
        table: "locations",
        columns: &[
            col("locationId", "id", Kind::Int),
            col("city", "city", Kind::Text),
            opt("region", "region", Kind::Text),
            col("country", "country", Kind::Text),
        ],
        key: &[0],
    },
    Entity {
        name: "departments",
        table: "departments",
        columns: &[
            col("departmentId", "id", Kind::Text),
            col("name", "name", Kind::Text),
            lines(col("description", "description", Kind::Text)),
            reference(opt("headId", "head_id", Kind::Text), "employees"),
        ],
        key: &[0],
    },
    Entity {
        name: "teams",
        table: "teams",
        columns: &[
            col("teamId", "id", Kind::Text),
            col("name", "name", Kind::Text),
            reference(
                col("departmentId", "department_id", Kind::Text),
                "departments",
            ),
            lines(col("description", "description", Kind::Text)),
            reference(opt("managerId", "manager_id", Kind::Text), "employees"),
        ],
        key: &[0],
    },
    Entity {
        name: "roles",
        table: "roles",
        columns: &[
            col("roleId", "id", Kind::Int),
            col("title", "title", Kind::Text),
            col("track", "track", Kind::Enum(TRACKS)),
            reference(
                col("departmentId", "department_id", Kind::Text),
                "departments",
            ),
        ],
        key: &[0],
    },
    Entity {
        name: "compensation_bands",
        table: "compensation_bands",
        columns: &[
            reference(col("roleId", "role_id", Kind::Int), "roles"),
            col("level", "level", Kind::Enum(LEVELS)),
            Column {
                default: Some("USD"),
                ..opt("currency", "currency", Kind::Text)
            },
            col("minSalary", "min_salary", Kind::Int),
            col("midSalary", "mid_salary", Kind::Int),
            col("maxSalary", "max_salary", Kind::Int),
        ],
        key: &[0, 1],
    },
    Entity {
        name: "skills",
        table: "skills",
        columns: &[
            col("skillId", "id", Kind::Int),
            col("name", "name", Kind::Text),
            col("category", "category", Kind::Text),
        ],
        key: &[0],
    },
    Entity {
        name: "employees",
        table: "employees",
        columns: &[
            col("employeeId", "id", Kind::Text),
            col("firstName", "first_name", Kind::Text),
            col("lastName", "last_name", Kind::Text),
            col("email", "email", Kind::Text),
            col("phone", "phone", Kind::Text),
            reference(col("roleId", "role_id", Kind::Int), "roles"),
            col("level", "level", Kind::Enum(LEVELS)),
            reference(
                col("departmentId", "department_id", Kind::Text),
                "departments",
            ),
            reference(opt("teamId", "team_id", Kind::Text), "teams"),
            reference(opt("managerId", "manager_id", Kind::Text), "employees"),
            reference(col("locationId", "location_id", Kind::Int), "locations"),
            col("employmentType", "employment_type", Kind::Enum(EMPLOYMENT)),
            col("officeType", "office_type", Kind::Enum(OFFICE)),
            col("startDate", "start_date", Kind::Date),
            col("status", "status", Kind::Enum(STATUS)),
            opt("terminationDate", "termination_date", Kind::Date),
            opt(
                "terminationReason",
                "termination_reason",
                Kind::Enum(REASONS),
            ),
            col("salary", "salary", Kind::Int),
        ],
        key: &[0],
    },
    Entity {
        name: "employee_skills",
        table: "employee_skills",
        columns: &[
            reference(col("employeeId", "employee_id", Kind::Text), "employees"),
            reference(col("skillId", "skill_id", Kind::Int), "skills"),
            col("proficiency", "proficiency", Kind::Ranked(PROFICIENCY)),
        ],
        key: &[0, 1],
    },
    Entity {
        name: "employment_history",
        table: "employment_history",
        columns: &[
            col("historyId", "id", Kind::Int),
            reference(col("employeeId", "employee_id", Kind::Text), "employees"),
            col("company", "company", Kind::Text),
            col("title", "title", Kind::Text),
            opt("level", "level", Kind::Enum(LEVELS)),
            reference(
                opt("departmentId", "department_id", Kind::Text),
                "departments",
            ),
            col("event", "event", Kind::Enum(EVENTS)),
            col("startDate", "start_date", Kind::Date),
            opt("endDate", "end_date", Kind::Date),
        ],
        key: &[0],
    },
    Entity {
        name: "leave_balances",
        table: "leave_balances",
        columns: &[
            reference(col("employeeId", "employee_id", Kind::Text), "employees"),
            col("year", "year", Kind::Int),
            col("leaveType", "leave_type", Kind::Enum(LEAVE)),
            col("entitledDays", "entitled_days", Kind::Days),
            col("usedDays", "used_days", Kind::Days),
            col("pendingDays", "pending_days", Kind::Days),
        ],
        key: &[0, 1, 2],
    },
];

/// The entity called `name`.
pub fn entity(name: &str) -> Option<&'static Entity> {
    ENTITIES.iter().find(|e| e.name == name)
}

/// Entities whose rows point at an employee and go with them.
pub const EMPLOYEE_DEPENDENTS: &[&str] =
    &["employee_skills", "employment_history", "leave_balances"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_single_key_entities() {
        for e in ENTITIES {
            for c in e.columns {
                if let Some(target) = c.refers {
                    let t = entity(target).expect("known target");
                    assert_eq!(t.key.len(), 1, "{}.{}", e.name, c.name);
                }
            }
        }
    }
}
