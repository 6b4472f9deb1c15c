// Roster table for list-department-employees and search-employees-by-skill:
// sortable columns, a filter, and "Load more" through the tool's nextCursor
// (the same tool called again by the view, through the host).
const { el } = Bridge;
const $ = (id) => document.getElementById(id);
const KINDS = {
  department: {
    tool: "list-department-employees",
    rows: (d) => d.employees,
    args: (d) => ({ departmentId: d.department && d.department.departmentId }),
    columns: [
      ["name", "Name"], ["title", "Title"], ["level", "Level"], ["team", "Team"],
      ["startDate", "Started"], ["tenure", "Tenure", (r) => (r.tenureYears || 0) * 12 + (r.tenureMonths || 0),
        (r) => (r.tenureYears || 0) + "y " + (r.tenureMonths || 0) + "m"],
    ],
    title: (d) => (d.department && d.department.name) || "Department",
    subtitle: (d) => d.total + " active employees" + (d.asOf ? " as of " + d.asOf : ""),
  },
  skill: {
    tool: "search-employees-by-skill",
    rows: (d) => d.matches,
    args: (d) => ({ skill: d.query }),
    columns: [
      ["name", "Name"], ["title", "Title"], ["department", "Department"], ["team", "Team"],
      ["skill", "Skill"], ["proficiency", "Proficiency", (r) => PROFICIENCY.indexOf(r.proficiency)],
    ],
    title: (d) => "Skill: " + d.query,
    subtitle: (d) => d.total + " matches in " + (d.matchedSkills || []).join(", "),
  },
};
const PROFICIENCY = ["beginner", "intermediate", "advanced", "expert"];
const state = { kind: null, rows: [], cursor: null, args: {}, sort: null, desc: false };

function kindOf(d) {
  if (d && Array.isArray(d.employees)) return KINDS.department;
  if (d && Array.isArray(d.matches)) return KINDS.skill;
  return null;
}

function show(d, append) {
  const kind = kindOf(d);
  if (!kind) throw new Error("No roster in this result.");
  state.kind = kind;
  // Hosts that sent no tool-input: the answer names what was asked.
  if (!append && Object.keys(state.args).length === 0) state.args = kind.args(d);
  state.rows = append ? state.rows.concat(kind.rows(d)) : kind.rows(d).slice();
  state.cursor = d.nextCursor || null;
  $("title").textContent = kind.title(d);
  $("subtitle").textContent = kind.subtitle(d);
  $("caption").textContent = kind.title(d);
  $("more").hidden = !state.cursor;
  $("table").hidden = false;
  drawColumns();
  drawRows();
  Bridge.status("");
}

function drawColumns() {
  $("columns").replaceChildren(...state.kind.columns.map(([key, label]) => {
    const sorted = state.sort === key ? (state.desc ? "descending" : "ascending") : "none";
    return el("th", { scope: "col", "aria-sort": sorted },
      el("button", { type: "button", onclick: () => sortBy(key) }, label));
  }));
}

function sortBy(key) {
  state.desc = state.sort === key ? !state.desc : false;
  state.sort = key;
  drawColumns();
  drawRows();
}

function cell(row, column) {
  const [key, , , text] = column;
  return text ? text(row) : String(row[key] === undefined || row[key] === null ? "" : row[key]);
}

function sortValue(row, column) {
  const [key, , value] = column;
  return value ? value(row) : String(row[key] || "").toLowerCase();
}

function drawRows() {
  const query = $("filter").value.trim().toLowerCase();
  const columns = state.kind.columns;
  let rows = state.rows.filter((r) => !query || columns.some((c) => cell(r, c).toLowerCase().includes(query)));
  const column = columns.find((c) => c[0] === state.sort);
  if (column) {
    rows = rows.slice().sort((a, b) => {
      const x = sortValue(a, column);
      const y = sortValue(b, column);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return state.desc ? -order : order;
    });
  }
  $("rows").replaceChildren(...rows.map((r) => el("tr", {}, columns.map((c) => el("td", {}, cell(r, c))))));
  $("shown").textContent = rows.length + " of " + state.rows.length + " loaded";
}

async function loadMore() {
  if (!state.cursor || !state.kind) return;
  $("more").disabled = true;
  Bridge.status("Loading more…");
  try {
    const args = Object.assign({}, state.args, { cursor: state.cursor });
    show(await Bridge.callTool(state.kind.tool, args), true);
  } catch (e) { Bridge.showError(e); } finally { $("more").disabled = false; }
}

$("filter").addEventListener("input", () => state.kind && drawRows());
$("more").addEventListener("click", loadMore);
Bridge.on("ui/notifications/tool-input", (p) => {
  state.args = Object.assign({}, p.arguments);
  delete state.args.cursor;
});
Bridge.on("ui/notifications/tool-result", (result) => {
  if (result.isError) { Bridge.status(result.content && result.content[0] ? String(result.content[0].text) : "The tool call failed."); return; }
  show(Bridge.data(result), false);
});
Bridge.start("employee-roster").catch(Bridge.showError);
