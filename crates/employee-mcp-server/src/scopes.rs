//! The OAuth scopes of the HR directory, and how broader scopes imply
//! narrower ones.
//!
//! | scope             | grants                                                                                   |
//! |-------------------|------------------------------------------------------------------------------------------|
//! | `hr:directory`    | names, titles, teams, departments, managers, tenure, skills: `get-employee-details` (without contact fields), `list-department-employees`, `get-team-members` (without contact fields), `calculate-employee-tenure`, `search-employees-by-skill` |
//! | `hr:contact`      | the contact fields (email, phone, location) inside `get-employee-details` and `get-team-members`; implies `hr:directory` |
//! | `hr:compensation` | `get-compensation-info` (salary bands and actual-salary statistics); needed, together with `hr:reports`, for the compensation report |
//! | `hr:leave`        | `check-leave-balance` for anyone. Without it, an employee may read their OWN balance (token claim `employee_id` equal to the `employeeId` argument) |
//! | `hr:reports`      | `generate-employee-report` headcount and turnover; the compensation report additionally needs `hr:compensation` |
//! | `hr:admin`        | everything above                                                                         |
//!
//! Hierarchy (RFC: "a broader scope implies the narrower ones"): `hr:admin`
//! implies every other scope, and `hr:contact` implies `hr:directory`
//! (contact details are a wider view of the same records). The expansion is
//! applied once, when the [`Principal`](mcpwire_server::Principal) is built (from
//! a token or from the stdio environment); the engine then checks plain
//! membership.
//!
//! Why the compensation report needs two scopes: it is a report (so
//! `hr:reports` grants the tool) that reveals salary statistics per
//! department and level (so it also needs `hr:compensation`). The tool
//! declares `hr:reports`, and an argument rule (`argument_scopes`) requires
//! all of `hr:reports hr:compensation` for `reportType: "compensation"`; the
//! engine enforces it before the handler runs: JSON-RPC -31001 and, over
//! HTTP, 403 with an `insufficient_scope` challenge naming both scopes; the
//! call is audited as `denied`.

use std::collections::BTreeSet;

/// Read the directory: names, roles, teams, tenure, skills.
pub const DIRECTORY: &str = "hr:directory";
/// See contact details (email, phone, location).
pub const CONTACT: &str = "hr:contact";
/// See salary bands and salary statistics.
pub const COMPENSATION: &str = "hr:compensation";
/// Read anyone's leave balance.
pub const LEAVE: &str = "hr:leave";
/// Generate organisation-wide reports.
pub const REPORTS: &str = "hr:reports";
/// Everything.
pub const ADMIN: &str = "hr:admin";

/// Every scope this server understands, narrowest first; published as the
/// Protected Resource Metadata `scopes_supported`.
pub const ALL: [&str; 6] = [DIRECTORY, CONTACT, COMPENSATION, LEAVE, REPORTS, ADMIN];

/// What each scope implies (besides itself).
const IMPLIES: [(&str, &[&str]); 2] = [
    (ADMIN, &[DIRECTORY, CONTACT, COMPENSATION, LEAVE, REPORTS]),
    (CONTACT, &[DIRECTORY]),
];

/// Expands granted scopes with everything they imply. Unknown scopes are
/// kept as they are (they may matter to another resource and are harmless
/// here).
pub fn expand<I, S>(granted: I) -> BTreeSet<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out: BTreeSet<String> = granted.into_iter().map(|s| s.as_ref().to_owned()).collect();
    // The hierarchy is two levels deep; iterate to a fixed point anyway so a
    // future deeper chain needs no change here.
    loop {
        let before = out.len();
        for (broad, narrower) in IMPLIES {
            if out.contains(broad) {
                out.extend(narrower.iter().map(|s| (*s).to_owned()));
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// Parses a space-separated scope string (the OAuth `scope` claim format)
/// and expands it.
pub fn parse(scope: &str) -> BTreeSet<String> {
    expand(scope.split_ascii_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_implies_everything() {
        let s = parse("hr:admin");
        for scope in ALL {
            assert!(s.contains(scope), "{scope}");
        }
    }

    #[test]
    fn contact_implies_directory_only() {
        let s = parse("hr:contact");
        assert!(s.contains(DIRECTORY));
        assert!(!s.contains(COMPENSATION));
        assert!(!s.contains(LEAVE));
    }

    #[test]
    fn narrow_scopes_stay_narrow() {
        let s = parse(" hr:directory  other ");
        assert_eq!(
            s.into_iter().collect::<Vec<_>>(),
            vec!["hr:directory".to_owned(), "other".to_owned()]
        );
    }
}
