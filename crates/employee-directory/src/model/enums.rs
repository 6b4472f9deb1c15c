//! Closed sets of values (levels, leave types, ...).
//!
//! Each enum serializes to a lowercase / kebab-case string, exposes
//! `as_str()` (the same string, also what the database stores), `ALL` (every
//! variant, for "valid values are ..." messages) and a lenient `parse()`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a closed string enum with serde names, `ALL`, `as_str` and `parse`.
macro_rules! closed_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $s:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            Serialize, Deserialize, JsonSchema,
        )]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $s)] $variant, )+
        }

        impl $name {
            /// Every variant, in their natural order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The serialized (and stored) name of this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $s,)+
                }
            }

            /// Parses a name case-insensitively; spaces and underscores count
            /// as dashes, so `"Full Time"` and `"full_time"` both work.
            pub fn parse(input: &str) -> Option<Self> {
                let wanted: String = input
                    .trim()
                    .chars()
                    .map(|c| if c == ' ' || c == '_' { '-' } else { c.to_ascii_lowercase() })
                    .collect();
                Self::ALL.iter().copied().find(|v| v.as_str() == wanted)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s).ok_or_else(|| {
                    let valid: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!(
                        "unknown {} `{}`; valid values: {}",
                        stringify!($name),
                        s,
                        valid.join(", ")
                    )
                })
            }
        }
    };
}

closed_enum! {
    /// Career level. Individual contributors use junior..principal, people
    /// managers senior..director, the CEO and department heads executive.
    Level {
        /// Entry level.
        Junior => "junior",
        /// Fully independent contributor.
        Mid => "mid",
        /// Experienced contributor who leads work inside a team.
        Senior => "senior",
        /// Leads work across teams.
        Staff => "staff",
        /// Leads work across the company.
        Principal => "principal",
        /// Senior people manager of a large team.
        Director => "director",
        /// Company leadership: CEO and department heads.
        Executive => "executive",
    }
}

impl Level {
    /// Prefix used to build an individual contributor's job title
    /// (`Senior` + `Software Engineer`). Mid level has no prefix.
    pub const fn title_prefix(self) -> Option<&'static str> {
        match self {
            Level::Junior => Some("Junior"),
            Level::Senior => Some("Senior"),
            Level::Staff => Some("Staff"),
            Level::Principal => Some("Principal"),
            Level::Mid | Level::Director | Level::Executive => None,
        }
    }
}

closed_enum! {
    /// Kind of leave an employee can take.
    LeaveType {
        /// Paid vacation.
        Annual => "annual",
        /// Paid sick leave.
        Sick => "sick",
        /// Parental leave (birth, adoption).
        Parental => "parental",
        /// Leave after the death of a family member.
        Bereavement => "bereavement",
        /// Unpaid leave allowance.
        Unpaid => "unpaid",
    }
}

closed_enum! {
    /// Which organisation-wide report to generate.
    ReportType {
        /// Active headcount by department, location, employment and office type.
        Headcount => "headcount",
        /// Terminations and turnover rate over the trailing twelve months.
        Turnover => "turnover",
        /// Salary statistics and band positions by department and level.
        Compensation => "compensation",
    }
}

closed_enum! {
    /// Contract type.
    EmploymentType {
        /// Full-time employee.
        FullTime => "full-time",
        /// Part-time employee.
        PartTime => "part-time",
        /// External contractor.
        Contractor => "contractor",
    }
}

closed_enum! {
    /// Where the employee works from.
    OfficeType {
        /// Works fully remotely.
        Remote => "remote",
        /// Splits time between home and an office.
        Hybrid => "hybrid",
        /// Works from an office.
        OnSite => "on-site",
    }
}

closed_enum! {
    /// Whether the person still works here.
    EmploymentStatus {
        /// Currently employed.
        Active => "active",
        /// Has left the company.
        Terminated => "terminated",
    }
}

closed_enum! {
    /// Self-assessed skill proficiency, from lowest to highest.
    Proficiency {
        /// Learning the skill.
        Beginner => "beginner",
        /// Uses the skill with some help.
        Intermediate => "intermediate",
        /// Uses the skill independently.
        Advanced => "advanced",
        /// Teaches the skill to others.
        Expert => "expert",
    }
}

impl Proficiency {
    /// Numeric rank stored in the database (1 = beginner .. 4 = expert).
    pub const fn rank(self) -> u8 {
        match self {
            Proficiency::Beginner => 1,
            Proficiency::Intermediate => 2,
            Proficiency::Advanced => 3,
            Proficiency::Expert => 4,
        }
    }

    /// Inverse of [`Proficiency::rank`].
    pub const fn from_rank(rank: i64) -> Option<Self> {
        match rank {
            1 => Some(Proficiency::Beginner),
            2 => Some(Proficiency::Intermediate),
            3 => Some(Proficiency::Advanced),
            4 => Some(Proficiency::Expert),
            _ => None,
        }
    }
}

closed_enum! {
    /// What an employment history entry records.
    HistoryEvent {
        /// A position held at another company before joining.
        PreviousEmployer => "previous-employer",
        /// First position after joining.
        Hired => "hired",
        /// A new position after a promotion.
        Promoted => "promoted",
    }
}

closed_enum! {
    /// Why an employee left.
    TerminationReason {
        /// The employee resigned.
        Voluntary => "voluntary",
        /// The company ended the employment.
        Involuntary => "involuntary",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_lenient_and_round_trips() {
        for level in Level::ALL {
            assert_eq!(Level::parse(level.as_str()), Some(*level));
        }
        assert_eq!(
            EmploymentType::parse("Full Time"),
            Some(EmploymentType::FullTime)
        );
        assert_eq!(OfficeType::parse("ON_SITE"), Some(OfficeType::OnSite));
        assert_eq!(LeaveType::parse(" Annual "), Some(LeaveType::Annual));
        assert_eq!(LeaveType::parse("vacation"), None);
        assert!(
            "nope"
                .parse::<ReportType>()
                .unwrap_err()
                .contains("headcount")
        );
    }

    #[test]
    fn serde_names_match_as_str() {
        for t in LeaveType::ALL {
            let json = serde_json::to_string(t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
        }
        let parsed: OfficeType = serde_json::from_str("\"on-site\"").unwrap();
        assert_eq!(parsed, OfficeType::OnSite);
    }

    #[test]
    fn proficiency_rank_round_trips() {
        for p in Proficiency::ALL {
            assert_eq!(Proficiency::from_rank(i64::from(p.rank())), Some(*p));
        }
    }
}
