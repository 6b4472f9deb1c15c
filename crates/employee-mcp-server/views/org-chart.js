// Org chart: a team's reporting lines (get-team-members) or one person with
// their manager chain and direct reports (get-employee-details). Clicking a
// person asks the host to call get-employee-details and redraws.
const { el } = Bridge;
const MAX_CHAIN = 8;
const COLLAPSE_OVER = 60;
const state = { team: null, members: [], cursor: null, history: [], input: {} };
const $ = (id) => document.getElementById(id);

function header(title, subtitle) {
  $("title").textContent = title;
  $("subtitle").textContent = subtitle || "";
}

function personButton(id, name) {
  if (!id) return el("span", {}, name || "—");
  return el("button", { type: "button", class: "link", onclick: () => openPerson(id) }, name || id);
}

async function openPerson(id) {
  Bridge.status("Loading " + id + "…");
  try {
    const person = await Bridge.callTool("get-employee-details", { employeeId: id });
    remember();
    await showPerson(person);
  } catch (e) { Bridge.showError(e); }
}

async function openTeam(teamId) {
  Bridge.status("Loading the team…");
  try {
    const page = await Bridge.callTool("get-team-members", { teamId });
    remember();
    showTeam(page, false);
  } catch (e) { Bridge.showError(e); }
}

// What is on screen (the node itself, listeners and all), so Back returns to it.
function remember() {
  const current = $("view");
  const fresh = el("section", { id: "view", "aria-label": "Reporting lines" });
  current.replaceWith(fresh);
  state.history.push({ node: current, filter: $("filter").hidden, more: $("more").hidden, title: $("title").textContent, subtitle: $("subtitle").textContent });
  $("back").hidden = false;
}

function back() {
  const prev = state.history.pop();
  if (prev) {
    $("view").replaceWith(prev.node);
    $("filter").hidden = prev.filter;
    $("more").hidden = prev.more;
    header(prev.title, prev.subtitle);
  }
  $("back").hidden = state.history.length === 0;
}

// ---- a team

function showTeam(page, append) {
  if (!page || !Array.isArray(page.members)) throw new Error("No team in this result.");
  state.team = page.team || {};
  state.input.teamId = state.team.teamId || state.input.teamId;
  state.members = append ? state.members.concat(page.members) : page.members.slice();
  state.cursor = page.nextCursor || null;
  const t = state.team;
  header(t.name || "Team", [t.department, "manager: " + (t.manager || "none"),
    page.total + " people, " + state.members.length + " shown"].filter(Boolean).join(" · "));
  $("filter").hidden = false;
  $("more").hidden = !state.cursor;
  drawTree();
  Bridge.status("");
}

function drawTree() {
  const query = $("filter").value.trim().toLowerCase();
  const byManager = new Map();
  const ids = new Set(state.members.map((m) => m.employeeId));
  for (const m of state.members) {
    const up = m.managerId && ids.has(m.managerId) && m.managerId !== m.employeeId ? m.managerId : "";
    if (!byManager.has(up)) byManager.set(up, []);
    byManager.get(up).push(m);
  }
  const collapse = state.members.length > COLLAPSE_OVER && !query;
  const matches = (m) => !query || [m.name, m.title, m.role].some((v) => String(v || "").toLowerCase().includes(query));
  const tree = el("ul", { class: "tree", role: "tree" }, branch(byManager, "", matches, collapse, 0, new Set()));
  $("view").replaceChildren(tree);
}

function branch(byManager, managerId, matches, collapse, depth, seen) {
  return (byManager.get(managerId) || []).filter((m) => !seen.has(m.employeeId)).map((m) => {
    seen.add(m.employeeId);
    const kids = branch(byManager, m.employeeId, matches, collapse, depth + 1, seen);
    if (!matches(m) && kids.length === 0) return null;
    const sub = kids.length ? el("ul", { role: "group" }, kids) : null;
    const open = !(collapse && depth >= 1);
    if (sub) sub.hidden = !open;
    const toggle = sub ? el("button", { type: "button", class: "toggle", "aria-expanded": String(open),
      "aria-label": "Reports of " + m.name, onclick: (e) => {
        sub.hidden = !sub.hidden;
        e.currentTarget.setAttribute("aria-expanded", String(!sub.hidden));
        e.currentTarget.textContent = sub.hidden ? "+" + kids.length : "−";
      } }, open ? "−" : "+" + kids.length) : null;
    return el("li", { role: "treeitem" },
      el("span", { class: "node" }, toggle, personButton(m.employeeId, m.name),
        el("span", { class: "tag" }, [m.title, m.level].filter(Boolean).join(" · "))),
      sub);
  }).filter(Boolean);
}

async function loadMore() {
  if (!state.cursor) return;
  $("more").disabled = true;
  Bridge.status("Loading more…");
  try {
    const page = await Bridge.callTool("get-team-members", { teamId: state.input.teamId, cursor: state.cursor });
    showTeam(page, true);
  } catch (e) { Bridge.showError(e); } finally { $("more").disabled = false; }
}

// ---- one person

async function showPerson(p) {
  if (!p || !p.employeeId) throw new Error("No employee in this result.");
  header(p.name, [p.title, p.department, p.team].filter(Boolean).join(" · "));
  $("filter").hidden = true;
  $("more").hidden = true;
  const chain = el("ol", { class: "chain", "aria-label": "Manager chain" });
  const reports = el("div", {});
  $("view").replaceChildren(el("h2", {}, "Reports to"), chain, card(p), career(p), reports);
  Bridge.status("");
  await Promise.all([fillChain(chain, p), fillReports(reports, p)]);
}

function card(p) {
  const facts = [
    ["Level", p.level], ["Role", p.role], ["Location", p.location && p.location.display],
    ["Email", p.email], ["Started", p.startDate], ["Status", p.status],
    ["Direct reports", String(p.directReports || 0)],
  ].filter(([, v]) => v);
  return el("div", { class: "card" },
    el("div", { class: "name" }, p.name), el("div", { class: "muted" }, p.title || ""),
    el("dl", {}, facts.flatMap(([k, v]) => [el("dt", { class: "tag" }, k), el("dd", {}, v)])),
    (p.skills || []).length ? el("ul", { class: "skills", "aria-label": "Skills" },
      p.skills.map((s) => el("li", {}, s.skill + " (" + s.proficiency + ")"))) : null,
    p.teamId ? el("button", { type: "button", onclick: () => openTeam(p.teamId) }, "Show team " + (p.team || "")) : null);
}

// The career history of the result on a timeline; the current position runs
// to the last day (former employees) or to today.
function career(p) {
  const until = p.terminationDate || new Date().toISOString().slice(0, 10);
  const spans = Timeline.career(p.employmentHistory, until);
  if (!spans.length) return null;
  return el("section", { class: "career", "aria-label": "Career" }, el("h2", {}, "Career"),
    Timeline.chart(spans), Timeline.table("Career of " + p.name, spans));
}

// Managers up to the top, fetched one call at a time (each call audited).
async function fillChain(list, p) {
  const up = [];
  const seen = new Set([p.employeeId]);
  let next = p.managerId;
  let name = p.manager;
  while (next && !seen.has(next) && up.length < MAX_CHAIN) {
    seen.add(next);
    up.unshift({ id: next, name });
    try {
      const m = await Bridge.callTool("get-employee-details", { employeeId: next });
      up[0].title = m.title;
      next = m.managerId;
      name = m.manager;
    } catch (_) { break; }
  }
  list.replaceChildren(...(up.length ? up.map((m) => el("li", {}, personButton(m.id, m.name),
    m.title ? el("span", { class: "tag" }, " " + m.title) : null)) : [el("li", { class: "muted" }, "Nobody (top of the organisation)")]));
}

// Direct reports: the team members who report to this person.
async function fillReports(box, p) {
  if (!p.directReports || !p.teamId) return;
  try {
    const page = await Bridge.callTool("get-team-members", { teamId: p.teamId, limit: 250 });
    const direct = (page.members || []).filter((m) => m.managerId === p.employeeId);
    if (!direct.length) return;
    box.replaceChildren(el("h2", {}, "Direct reports"), el("ul", { class: "tree" },
      direct.map((m) => el("li", {}, personButton(m.employeeId, m.name), el("span", { class: "tag" }, " " + (m.title || ""))))));
  } catch (_) { /* the count on the card still says how many */ }
}

function render(result) {
  if (result.isError) { Bridge.status(result.content && result.content[0] ? String(result.content[0].text) : "The tool call failed."); return; }
  const d = Bridge.data(result);
  state.history = [];
  $("back").hidden = true;
  if (d && Array.isArray(d.members)) showTeam(d, false);
  else showPerson(d).catch(Bridge.showError);
}

$("filter").addEventListener("input", drawTree);
$("more").addEventListener("click", loadMore);
$("back").addEventListener("click", back);
Bridge.on("ui/notifications/tool-input", (p) => { state.input = Object.assign({}, p.arguments); });
Bridge.on("ui/notifications/tool-result", render);
Bridge.start("employee-org-chart").catch(Bridge.showError);
