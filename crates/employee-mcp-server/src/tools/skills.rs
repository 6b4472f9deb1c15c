//! search-employees-by-skill
//!
//! Every skill containing the query matches, ranked: the skill equal to
//! the query first, then skills starting with it, then the rest, each
//! skill by name and within it by proficiency (see
//! `employee_directory::page_order`). One page of matches per call
//! (`limit`, `cursor`; see [`super::paging`]), read from the database by
//! keyset: the cost follows the page, not the company.

use employee_directory::page_order::match_key;
use employee_directory::{
    Directory, MatchPosition, SkillMatch, SkillMatchKind, SkillQuery, SkillSearch,
};
use mcpwire_server::access::Approval;
use mcpwire_server::protocol::model::ToolAnnotations;
use mcpwire_server::{SharedOutput, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::paging;
use crate::scopes;

/// Matches listed when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u32 = 25;

/// Largest page a caller may ask for.
pub(crate) const MAX_LIMIT: u32 = 500;

/// Arguments of search-employees-by-skill.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Input {
    /// A skill such as "Rust" or "Negotiation"; matched case-insensitively against every skill containing it, the exact name ranked first, then names starting with it.
    #[schemars(
        length(min = 1, max = 60),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9 .+#/&'_-]*$")
    )]
    pub skill: String,
    /// Most matches to list (optional; default 25, at most 500).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page, to list the next one (optional; omit for the first page).
    #[schemars(length(min = 1, max = 2048))]
    pub cursor: Option<String>,
}

/// One page of a ranked skill search.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillPage {
    /// The skill searched for, as given.
    pub query: String,
    /// Exact when a skill equals the query, partial otherwise.
    pub match_kind: SkillMatchKind,
    /// Skill names that matched the query, in rank order (at most 50; see `matchedSkillCount`).
    pub matched_skills: Vec<String>,
    /// Number of skill names that matched the query (every skill containing it).
    pub matched_skill_count: u32,
    /// Number of matches over all pages.
    pub total: u32,
    /// Number of matches listed in this page.
    pub count: u32,
    /// True when more matches follow this page (see `nextCursor`).
    pub truncated: bool,
    /// Pass as `cursor` to list the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Matches of this page: the exact skill first, then skills starting with the query, then the rest, each skill by name; within a skill the strongest first, then by employee id.
    pub matches: Vec<SkillMatch>,
}

pub fn tool(directory: Directory) -> Tool {
    Tool::builder("search-employees-by-skill")
        .title("Find employees by skill")
        .description(
            concat!(
                "Find active employees with specific technical or professional skills. Every skill containing the query matches: the exact skill first, then skills starting with the query, then the rest; within a skill, strongest proficiency first.",
                " One page of matches per call: 25 by default, limit up to 500; total counts them all, and when nextCursor is present, call again with the same skill and cursor=nextCursor for the next page.",
            )
            .to_owned()
                + super::DATA_NOT_INSTRUCTIONS,
        )
        .annotations(ToolAnnotations::read_only())
        // MCP Apps hosts render this view; the result itself is unchanged.
        .view(crate::views::ROSTER)
        .required_scopes([scopes::DIRECTORY])
        // Approval: none. A directory look-up (names, titles, teams; contact
        // details behind hr:contact): the everyday work the scopes already
        // bound; asking every time would train people to click yes.
        .approval(Approval::None)
        .state(directory)
        .handler(search)
}

async fn search(directory: Directory, input: Input) -> ToolResult<SharedOutput<SkillPage>> {
    let query = input.skill.trim().to_lowercase();
    let list = format!("skill/{query}");
    let after = match input.cursor.as_deref().map(paging::open).transpose()? {
        Some((found, key)) => {
            paging::check_list(&found, &list)?;
            Some(MatchPosition::from_key(&key).ok_or_else(paging::forged)?)
        }
        None => None,
    };
    let q = SkillQuery {
        skill: input.skill.clone(),
        after,
        limit: input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
    };
    let answer = directory.skill_page(&q).await.map_err(super::unavailable)?;
    if answer.matched_skills.is_empty() || (answer.total == 0 && q.after.is_none()) {
        let skills = directory.skills().await.map_err(super::unavailable)?;
        return Err(ToolError::execution(format!(
            "No employee has a skill matching \"{}\". Known skills: {}.",
            input.skill,
            super::some_of(&skills, 2 * super::IDS_LISTED)
        )));
    }
    // Made once per kept answer: every call for the same page of the same
    // unchanged directory sends the same bytes.
    super::shared(&answer, |found| {
        SharedOutput::new(&page_of(found, &query, &list))
    })
}

/// The answer for one page of `search`.
fn page_of(search: &SkillSearch, query: &str, list: &str) -> SkillPage {
    let next_cursor = match search.matches.last() {
        Some(last) if search.truncated => Some(paging::encode(list, match_key(query, last))),
        _ => None,
    };
    SkillPage {
        query: search.query.clone(),
        match_kind: search.match_kind,
        matched_skills: search.matched_skills.clone(),
        matched_skill_count: search.matched_skill_count,
        total: search.total,
        count: u32::try_from(search.matches.len()).unwrap_or(u32::MAX),
        truncated: next_cursor.is_some(),
        next_cursor,
        matches: search.matches.clone(),
    }
}
