// The MCP Apps views in Chromium, through the official host bridge.
//
// A host page (views-host/host.js, bundled here with esbuild because AppBridge
// is ESM with bare imports) renders each `ui://` page exactly as the server's
// resources/read returned it, in a sandboxed iframe under the CSP the resource
// declares, and speaks to it with AppBridge over PostMessageTransport. Tool
// results come from real tools/call requests; calls the view makes go through
// the bridge to node (exposeFunction), where a real MCP client sends them to
// the server. The server sends no CORS headers, so a client in the page could
// not reach it, and node sees every call the view made.
//
// Prints `ok - …` / `not ok - …` lines; exits non-zero on any failure.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const HERE = dirname(fileURLToPath(import.meta.url));
const MCP_URL = process.env.BROWSER_MCP_URL;
const DATABASE = process.env.BROWSER_DATABASE;
const BIN = process.env.BROWSER_SERVER_BIN;
const SHOTS = process.env.BROWSER_SCREENSHOTS || join(HERE, "screenshots");
const HOST_URL = "http://views-host.test/";
const EXTENSION = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const LIGHT = {
  theme: "light",
  styles: { variables: { "--color-background-primary": "rgb(255, 250, 240)", "--color-text-primary": "rgb(20, 30, 40)" } },
};
const DARK = {
  theme: "dark",
  styles: { variables: { "--color-background-primary": "rgb(16, 24, 32)", "--color-text-primary": "rgb(230, 235, 240)" } },
};

let failures = 0;
function check(name, condition, detail) {
  if (condition) console.log("ok - " + name);
  else {
    failures += 1;
    console.log("not ok - " + name + (detail === undefined ? "" : "\n  # " + JSON.stringify(detail).slice(0, 600)));
  }
  return Boolean(condition);
}

// ---- the MCP side: a host's client (with the extension) and a plain one

/** The questions the server asked the host's user (approval confirmations). */
const questions = [];

// The host's client declares the extension and can ask its user (the
// compensation report needs the user's yes); the test's user says yes.
async function connect(withExtension) {
  const capabilities = withExtension ? { extensions: { [EXTENSION]: { mimeTypes: [MIME] } }, elicitation: { form: {} } } : {};
  const client = new Client({ name: withExtension ? "views-host" : "plain-client", version: "1.0.0" }, { capabilities });
  if (withExtension) {
    client.setRequestHandler("elicitation/create", async (request) => {
      questions.push(request.params.message);
      return { action: "accept", content: { approve: true } };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
  return client;
}

async function allTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

function structured(result) {
  if (result.structuredContent) return result.structuredContent;
  const text = (result.content || []).find((c) => c.type === "text");
  return text ? JSON.parse(text.text) : null;
}

// ---- the host page

async function hostPage() {
  const out = join(HERE, "views-host", "dist", "host.bundle.js");
  mkdirSync(dirname(out), { recursive: true });
  await build({
    entryPoints: [join(HERE, "views-host", "host.js")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "chrome120",
    outfile: out,
    logLevel: "error",
  });
  const script = readFileSync(out, "utf8").replaceAll("</script", "<\\/script");
  return `<!doctype html><html><head><meta charset="utf-8"><title>views test host</title></head>
<body style="margin: 8px; background: #ccc"><script type="module">${script}</script></body></html>`;
}

const watch = { requests: [], console: [], warnings: [], pageErrors: [] };

async function openBrowser(client) {
  const browser = await chromium.launch({ executablePath: process.env.BROWSER_CHROMIUM, headless: true });
  const context = await browser.newContext({ viewport: { width: 800, height: 900 } });
  const html = await hostPage();
  // Nothing reaches the network: the host page is served here, every other
  // request is recorded (a failure) and refused.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url === HOST_URL) return route.fulfill({ status: 200, contentType: "text/html", body: html });
    return route.abort();
  });
  // CSP violations in any frame, the view's included (the recorder is the
  // browser's, injected by Playwright, not part of the page).
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI);
    });
  });
  const page = await context.newPage();
  page.on("request", (r) => { if (r.url() !== HOST_URL) watch.requests.push(r.url()); });
  page.on("pageerror", (e) => watch.pageErrors.push(String(e)));
  page.on("console", (m) => {
    const text = m.text();
    if (m.type() === "error") watch.console.push(text);
    // The bridge warns when a view breaks the handshake order.
    else if (m.type() === "warning" && /\[ext-apps\]|\[MCP Apps\]|Content.Security/i.test(text)) watch.console.push(text);
    else if (m.type() === "warning") watch.warnings.push(text);
  });
  await page.exposeFunction("hostCallTool", async (params) => {
    const result = await client.callTool(params);
    calls.push({ name: params.name, arguments: params.arguments || {}, result });
    return result;
  });
  await page.goto(HOST_URL);
  await page.waitForFunction(() => window.host !== undefined);
  return { browser, page };
}

/** Every tools/call the view made through the bridge, as node sent it. */
const calls = [];

async function readView(client, uri) {
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  return { html: content.text, mimeType: content.mimeType, csp: content._meta?.ui?.csp };
}

/** Calls the tool for real, reads its view, and mounts both in the host. */
async function show(ctx, tool, args, hostContext = LIGHT) {
  const definition = ctx.tools.find((t) => t.name === tool);
  const uri = definition?._meta?.ui?.resourceUri;
  const view = await readView(ctx.client, uri);
  const result = await ctx.client.callTool({ name: tool, arguments: args });
  calls.length = 0;
  const mounted = await ctx.page.evaluate((m) => window.host.mount(m), {
    html: view.html, csp: view.csp, hostContext, toolInput: args, toolResult: result,
  });
  const frame = await (await ctx.page.$("#frame")).contentFrame();
  return { uri, view, result, data: structured(result), frame, mounted };
}

async function screenshot(page, name) {
  await page.screenshot({ path: join(SHOTS, "views-" + name + ".png"), fullPage: true });
}

const text = (frame, selector) => frame.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));
const idle = (frame) => frame.waitForFunction(() => document.getElementById("status").textContent === "");

async function waitForCall(name, predicate, timeout = 10000) {
  const until = Date.now() + timeout;
  while (Date.now() < until) {
    const call = calls.find((c) => c.name === name && predicate(c.arguments));
    if (call) return call;
    await new Promise((r) => setTimeout(r, 50));
  }
  return null;
}

// ---- the views

async function orgChartTeam(ctx) {
  const args = { teamId: "backend" };
  const { frame, data, mounted, uri } = await show(ctx, "get-team-members", args);
  check("org chart: served as " + MIME + " and linked from get-team-members", uri.endsWith("/org-chart"));
  check("org chart: the view introduced itself in ui/initialize", mounted.appVersion?.name === "employee-org-chart", mounted);
  await frame.waitForSelector("#view .tree");
  const names = await text(frame, "#view .tree button.link");
  const expected = data.members.map((m) => m.name);
  check("org chart (team): every member of the result is drawn", expected.every((n) => names.includes(n)) && names.length === expected.length, { names, expected });
  // The tree nests each member under their manager.
  const nested = await frame.$$eval("#view .tree li", (items) => items.map((li) => {
    const own = li.querySelector(":scope > .node button.link");
    const up = li.parentElement.closest("li");
    return [own && own.textContent, up ? up.querySelector(":scope > .node button.link").textContent : null];
  }));
  const byId = new Map(data.members.map((m) => [m.employeeId, m]));
  const wrong = nested.filter(([name, up]) => {
    const m = data.members.find((x) => x.name === name);
    const manager = m && m.managerId && byId.get(m.managerId);
    return (manager ? manager.name : null) !== up;
  });
  check("org chart (team): each member hangs under their manager", wrong.length === 0, wrong);
  const log = await ctx.page.evaluate(() => window.host.log);
  check("org chart: the view reported its size", log.sizes.length > 0 && log.sizes.every((s) => s.width > 0 && s.height > 0), log.sizes);
  check("org chart: nothing before the handshake (ui/notifications/initialized comes first)", log.order[0] === "initialized", log.order);
  const height = await frame.evaluate(() => Math.ceil(document.documentElement.getBoundingClientRect().height));
  check("org chart: the reported height is the page's", Math.abs(log.sizes[log.sizes.length - 1].height - height) <= 2, { reported: log.sizes.at(-1), height });
  await screenshot(ctx.page, "org-chart-team-light");

  // The search box filters.
  const target = data.members[data.members.length - 1];
  const other = data.members.find((m) => m.employeeId !== target.employeeId && m.managerId && m.employeeId !== target.managerId && !m.name.includes(target.name.split(" ")[0]));
  await frame.fill("#filter", target.name);
  const filtered = await text(frame, "#view .tree button.link");
  check("org chart: the search box keeps the match", filtered.includes(target.name), filtered);
  check("org chart: the search box hides the others", !other || !filtered.includes(other.name), { filtered, other: other && other.name });
  await frame.fill("#filter", "");

  // Clicking a person: get-employee-details through the bridge, then a redraw.
  await frame.getByRole("button", { name: target.name, exact: true }).first().click();
  const call = await waitForCall("get-employee-details", (a) => a.employeeId === target.employeeId);
  check("org chart: clicking a person calls get-employee-details through the bridge with their id", call, calls.map((c) => [c.name, c.arguments]));
  if (DATABASE && BIN) {
    // The audit trail tells the view's call from the model's (the node
    // client's own calls carry no view).
    const rows = execFileSync(BIN, ["audit", "--json", "--tool", "get-employee-details", "--limit", "50", "--database", DATABASE], { encoding: "utf8" })
      .trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
    check("org chart: the audit trail records the click's call as made from the org chart view",
      rows.some((r) => r.via === "ui://employee-directory/org-chart"), rows.map((r) => [r.id, r.via]));
    const team = execFileSync(BIN, ["audit", "--json", "--tool", "get-team-members", "--limit", "50", "--database", DATABASE], { encoding: "utf8" })
      .trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
    check("org chart: a call the host made itself is audited with no view", team.some((r) => r.via === null), team.map((r) => [r.id, r.via]));
  }
  await frame.waitForFunction((n) => document.getElementById("title").textContent === n, target.name);
  await frame.waitForSelector(".card");
  check("org chart: the chart redraws around that person", (await frame.textContent(".card .name")) === target.name);

  // Back, with the keyboard: Tab to a person, Enter opens them.
  await frame.focus("#back");
  await ctx.page.keyboard.press("Enter");
  await frame.waitForSelector("#view .tree");
  check("org chart: Back (Enter) returns to the team", (await frame.textContent("#title")) === data.team.name);
  calls.length = 0;
  await frame.focus("#filter");
  let focused = null;
  for (let i = 0; i < 6 && !focused; i++) {
    await ctx.page.keyboard.press("Tab");
    focused = await frame.evaluate(() => document.activeElement.classList.contains("link") ? document.activeElement.textContent : null);
  }
  check("org chart: Tab reaches a person", focused, focused);
  await ctx.page.keyboard.press("Enter");
  const person = data.members.find((m) => m.name === focused);
  check("org chart: Enter on a person opens them through the bridge", person && await waitForCall("get-employee-details", (a) => a.employeeId === person.employeeId));
  await frame.waitForFunction((n) => document.getElementById("title").textContent === n, focused);
  await idle(frame);
}

async function orgChartPerson(ctx, team) {
  // A team member below the team manager: a chain up and (for the manager) reports down.
  const member = team.members.find((m) => m.managerId && m.managerId === team.team.managerId);
  const args = { employeeId: member.employeeId };
  const { frame, data } = await show(ctx, "get-employee-details", args, DARK);
  await frame.waitForSelector(".card");
  await frame.waitForFunction(() => document.querySelectorAll(".chain li").length > 0);
  check("org chart (person): the card shows the result's name and title",
    (await frame.textContent(".card .name")) === data.name && (await frame.textContent("#subtitle")).includes(data.title));
  // The manager chain, as the server answers it.
  const chain = [];
  const seen = new Set([data.employeeId]);
  let id = data.managerId;
  while (id && !seen.has(id) && chain.length < 8) {
    seen.add(id);
    const m = structured(await ctx.client.callTool({ name: "get-employee-details", arguments: { employeeId: id } }));
    chain.unshift(m.name);
    id = m.managerId;
  }
  await frame.waitForFunction((n) => document.querySelectorAll(".chain li button").length === n, chain.length);
  const drawn = await text(frame, ".chain li button");
  check("org chart (person): the manager chain up to the top", JSON.stringify(drawn) === JSON.stringify(chain), { drawn, chain });
  // The career history of the result, oldest first, on a timeline with its table.
  const career = await frame.$$eval('section[aria-label="Career"] tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  const history = data.employmentHistory.slice().reverse();
  check("org chart (person): the career timeline has the result's history (oldest first)",
    history.length > 0 && JSON.stringify(career.map((r) => [r[0], r[2], r[3]])) === JSON.stringify(history.map((h) => [h.title, h.startDate, h.endDate || "now"])), { career, history });
  const spans = await frame.$$eval('section[aria-label="Career"] svg rect.bar', (r) => r.length);
  check("org chart (person): one timeline bar per position", spans === history.length, { spans });
  const skills = await text(frame, ".skills li");
  check("org chart (person): skills from the result", skills.length === data.skills.length, { skills, expected: data.skills });
  await screenshot(ctx.page, "org-chart-person-dark");

  // The manager: their direct reports are drawn below the card.
  const manager = team.members.find((m) => m.employeeId === team.team.managerId);
  const boss = await show(ctx, "get-employee-details", { employeeId: manager.employeeId });
  await boss.frame.waitForSelector(".card");
  await boss.frame.waitForFunction(() => [...document.querySelectorAll("h2")].some((h) => h.textContent === "Direct reports"));
  const reports = await text(boss.frame, "#view > div:last-child li button");
  const expected = team.members.filter((m) => m.managerId === manager.employeeId).map((m) => m.name);
  check("org chart (person): the manager's direct reports are drawn below", expected.length > 0 && expected.every((n) => reports.includes(n)), { reports, expected });
  check("org chart (person): as many reports as the result counts", reports.length === boss.data.directReports, { reports: reports.length, count: boss.data.directReports });
}

async function roster(ctx) {
  const args = { departmentId: "engineering" };
  const { frame, data, uri } = await show(ctx, "list-department-employees", args);
  check("roster: linked from list-department-employees", uri.endsWith("/roster"));
  check("roster: the department pages (more than one page of employees)", Boolean(data.nextCursor), { total: data.total, count: data.count });
  await frame.waitForSelector("#rows tr");
  const names = () => text(frame, "#rows tr td:first-child");
  const expected = data.employees.map((e) => e.name);
  check("roster: the rows are the result's, in its order", JSON.stringify(await names()) === JSON.stringify(expected), { drawn: await names(), expected });
  const titles = await text(frame, "#rows tr td:nth-child(2)");
  check("roster: each row shows the result's title", JSON.stringify(titles) === JSON.stringify(data.employees.map((e) => e.title)));
  await screenshot(ctx.page, "roster-light");

  // Sort by Name (ascending, then descending).
  await frame.getByRole("button", { name: "Name" }).click();
  const byName = expected.slice().sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0));
  check("roster: sorting by Name orders the rows", JSON.stringify(await names()) === JSON.stringify(byName), await names());
  check("roster: the sorted column says so (aria-sort)", (await frame.getAttribute("th:first-child", "aria-sort")) === "ascending");
  await frame.getByRole("button", { name: "Name" }).press("Enter");
  check("roster: Enter on the header sorts descending", JSON.stringify(await names()) === JSON.stringify(byName.slice().reverse()));

  // Filter.
  const one = data.employees[3];
  await frame.fill("#filter", one.name);
  const filtered = await frame.$$eval("#rows tr", (rows) => rows.map((r) => r.textContent.toLowerCase()));
  check("roster: the filter keeps the match and only rows that contain the text",
    filtered.length > 0 && filtered.length < expected.length && filtered.every((r) => r.includes(one.name.toLowerCase())), filtered);
  await frame.fill("#filter", "");

  // Load more: the same tool with the cursor, through the bridge; rows appended.
  await frame.click("#more");
  const call = await waitForCall("list-department-employees", (a) => a.cursor === data.nextCursor);
  check("roster: Load more calls the tool with nextCursor through the bridge", call && call.arguments.departmentId === "engineering", calls.map((c) => c.arguments));
  if (call) {
    const next = structured(call.result).employees.map((e) => e.name);
    await frame.waitForFunction((n) => document.querySelectorAll("#rows tr").length === n, expected.length + next.length);
    const all = await names();
    check("roster: the next page is appended", all.length === expected.length + next.length && next.every((n) => all.includes(n)), { all: all.length, next: next.length });
  }

  // A skill search.
  const skill = await show(ctx, "search-employees-by-skill", { skill: "Python" }, DARK);
  await skill.frame.waitForSelector("#rows tr");
  const drawn = await text(skill.frame, "#rows tr td:first-child");
  check("roster (skill): the rows are the result's matches", JSON.stringify(drawn) === JSON.stringify(skill.data.matches.map((m) => m.name)), { drawn, expected: skill.data.matches.map((m) => m.name) });
  const levels = await text(skill.frame, "#rows tr td:nth-child(6)");
  check("roster (skill): proficiency from the result", JSON.stringify(levels) === JSON.stringify(skill.data.matches.map((m) => m.proficiency)));
  await screenshot(ctx.page, "roster-skill-dark");
  if (skill.data.nextCursor) {
    await skill.frame.click("#more");
    const more = await waitForCall("search-employees-by-skill", (a) => a.cursor === skill.data.nextCursor && a.skill === "Python");
    check("roster (skill): Load more sends the skill and the cursor", more, calls.map((c) => c.arguments));
  }
}

// Numbers as the view prints them in its tables.
const cells = (frame, section) => frame.$$eval(`section[aria-label="${section}"] details table tbody tr`,
  (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));

async function report(ctx) {
  const head = await show(ctx, "generate-employee-report", { reportType: "headcount" });
  check("report: linked from generate-employee-report", head.uri.endsWith("/report"));
  await head.frame.waitForSelector("section svg");
  for (const [key, title] of [["byDepartment", "Headcount by department"], ["byLocation", "Headcount by location"],
    ["byEmploymentType", "Headcount by employment type"], ["byOfficeType", "Headcount by office type"]]) {
    const groups = head.data[key] || [];
    if (!groups.length) continue;
    const bars = await head.frame.$$eval(`section[aria-label="${title}"] svg rect.bar`, (r) => r.length);
    check(`report: "${title}" draws one bar per group`, bars === groups.length, { bars, groups: groups.length });
    const table = await cells(head.frame, title);
    const want = groups.map((g) => [g.label, String(g.headcount), String(g.percent)]);
    check(`report: the "${title}" table has the result's numbers`, JSON.stringify(table) === JSON.stringify(want), { table, want });
    const hidden = await head.frame.$$eval(`section[aria-label="${title}"] > table.sr-only tbody tr`, (r) => r.length);
    check(`report: the "${title}" numbers are in the accessibility tree`, hidden === groups.length);
  }
  await head.frame.click("section summary");
  await screenshot(ctx.page, "report-headcount-light");

  const turn = await show(ctx, "generate-employee-report", { reportType: "turnover" }, DARK);
  await turn.frame.waitForSelector("section svg");
  const rows = turn.data.byDepartment || [];
  const rate = await cells(turn.frame, "Turnover rate by department");
  const want = rows.map((r) => [r.department, r.turnoverRatePercent, r.hires, r.terminations, r.voluntary, r.involuntary, r.headcountStart, r.headcountEnd].map(String));
  check("report (turnover): the table has the result's numbers", rows.length > 0 && JSON.stringify(rate) === JSON.stringify(want), { rate, want });
  const bars = await turn.frame.$$eval('section[aria-label="Hires and leavers by department"] svg rect.bar', (r) => r.length);
  check("report (turnover): hires and leavers drawn per department", bars === rows.length * 2);
  const stat = await text(turn.frame, ".stat b");
  check("report (turnover): the overall rate is shown", stat[0] === String(turn.data.overall.turnoverRatePercent), stat);
  await screenshot(ctx.page, "report-turnover-dark");

  // Compensation: the server asks the user first (approval), then the charts.
  const asked = questions.length;
  const comp = await show(ctx, "generate-employee-report", { reportType: "compensation" });
  check("report (compensation): the server asked the host's user to confirm", questions.length > asked, questions);
  check("report (compensation): the confirmed call answered", !comp.result.isError, comp.result.content);
  await comp.frame.waitForSelector("section svg");
  for (const [key, title] of [["byDepartment", "Salaries by department"], ["byLevel", "Salaries by level"]]) {
    const groups = comp.data[key] || [];
    const table = await cells(comp.frame, title);
    const digits = (t) => t.replace(/\D/g, "");
    const same = table.length === groups.length && groups.every((g, i) => table[i][0] === g.label && table[i][1] === String(g.headcount)
      && digits(table[i][2]) === String(Math.round(g.averageSalary)) && digits(table[i][4]) === String(Math.round(g.minSalary))
      && digits(table[i][5]) === String(Math.round(g.maxSalary)) && table[i][6] === String(g.averageCompaRatio));
    check(`report (compensation): the "${title}" table has the result's numbers`, groups.length > 0 && same, { table: table.slice(0, 3), groups: groups.slice(0, 3) });
    const ranges = await comp.frame.$$eval(`section[aria-label="${title}"] svg line.range`, (l) => l.length);
    check(`report (compensation): "${title}" draws a bar and a range per group`, ranges === groups.length);
    // Each value label starts past its range line (the line never strikes it out).
    const crossed = await comp.frame.$$eval(`section[aria-label="${title}"] svg line.range`, (lines) => lines.filter((l) => {
      const label = [...l.parentNode.querySelectorAll("text.value")].find((t) => t.getAttribute("y") - 15 === l.getAttribute("y1") - 12);
      return !label || +label.getAttribute("x") < +l.getAttribute("x2");
    }).length);
    check(`report (compensation): "${title}" value labels clear the range lines`, crossed === 0, { crossed });
  }
  await screenshot(ctx.page, "report-compensation-light");
}

const rowsOf = (frame, selector) => frame.$$eval(selector, (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
const leaveRow = (b) => [b.leaveType, b.entitled, b.used, b.pending, b.remaining].map(String);

async function leave(ctx) {
  const args = { employeeId: "AliceJohnson", leaveType: "annual" };
  const { frame, data, uri } = await show(ctx, "check-leave-balance", args);
  check("leave: linked from check-leave-balance", uri.endsWith("/leave-balance"), uri);
  await frame.waitForSelector("#rows tr");
  check("leave: the table has the result's days", JSON.stringify(await rowsOf(frame, "#rows tr")) === JSON.stringify([leaveRow(data)]), { table: await rowsOf(frame, "#rows tr"), data });
  const parts = await frame.$$eval("#chart svg rect", (r) => r.map((x) => [x.getAttribute("class"), +x.getAttribute("width")]));
  const expected = ["used", "pending", "remaining"].filter((k) => data[k] > 0);
  check("leave: one bar segment per non-zero amount (used, pending, remaining)", JSON.stringify(parts.map((p) => p[0])) === JSON.stringify(expected), { parts, data });
  const width = Object.fromEntries(parts);
  if (width.used && width.remaining) {
    check("leave: segment lengths are proportional to the days", Math.abs(width.used / width.remaining - data.used / data.remaining) < 0.02, { width, data });
  }
  check("leave: the title names the person and the year", (await frame.textContent("#title")).includes(data.name) && (await frame.textContent("#subtitle")).includes(String(data.year)));
  await screenshot(ctx.page, "leave-light");

  // Another leave type: the same tool through the bridge, a second bar.
  await frame.getByRole("button", { name: "Show sick leave" }).click();
  const sick = await waitForCall("check-leave-balance", (a) => a.leaveType === "sick" && a.employeeId === args.employeeId);
  check("leave: another leave type is asked for through the bridge", sick, calls.map((c) => c.arguments));
  await frame.waitForFunction(() => document.querySelectorAll("#rows tr").length === 2);
  check("leave: its row has that answer's days", JSON.stringify((await rowsOf(frame, "#rows tr"))[1]) === JSON.stringify(leaveRow(structured(sick.result))));
  // Keyboard: focus moves to the next button; Enter asks for it.
  const focused = await frame.evaluate(() => document.activeElement.textContent);
  await ctx.page.keyboard.press("Enter");
  const next = await waitForCall("check-leave-balance", (a) => focused.includes(a.leaveType) && a.leaveType !== "sick");
  check("leave: Enter on the focused button adds that leave type", next, { focused });
  await frame.waitForFunction(() => document.querySelectorAll("#rows tr").length === 3);
  const dark = await show(ctx, "check-leave-balance", args, DARK);
  await dark.frame.waitForSelector("#rows tr");
  await screenshot(ctx.page, "leave-dark");
}

async function tenure(ctx) {
  const args = { employeeId: "AliceJohnson" };
  const { frame, data, uri } = await show(ctx, "calculate-employee-tenure", args, DARK);
  check("tenure: linked from calculate-employee-tenure", uri.endsWith("/tenure"), uri);
  await frame.waitForSelector('section[aria-label="Time at the company"] svg');
  const stats = await text(frame, ".stat b");
  check("tenure: years, months and days from the result", JSON.stringify(stats.slice(0, 4)) === JSON.stringify([data.years, data.months, data.days, data.totalDays].map(String)), { stats, data });
  const span = await rowsOf(frame, 'section[aria-label="Time at the company"] tbody tr');
  check("tenure: the span table has the start and as-of dates", span.length === 1 && span[0][2] === data.startDate && span[0][3].startsWith(data.asOf), span);
  await frame.focus("#history");
  await ctx.page.keyboard.press("Enter");
  const call = await waitForCall("get-employee-details", (a) => a.employeeId === data.employeeId);
  check("tenure: the career history is asked for through the bridge (Enter)", call, calls.map((c) => [c.name, c.arguments]));
  await frame.waitForSelector('section[aria-label="Career history"] svg');
  const history = structured(call.result).employmentHistory.slice().reverse();
  const career = await rowsOf(frame, 'section[aria-label="Career history"] tbody tr');
  check("tenure: the career table is the answer's history, oldest first",
    JSON.stringify(career.map((r) => [r[0], r[2]])) === JSON.stringify(history.map((h) => [h.title, h.startDate])), { career, history });
  const bars = await frame.$$eval('section[aria-label="Career history"] svg rect.bar', (r) => r.length);
  check("tenure: one bar per position", bars === history.length);
  await screenshot(ctx.page, "tenure-dark");
}

async function themes(ctx) {
  const bg = (frame) => frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const light = await show(ctx, "generate-employee-report", { reportType: "headcount" }, LIGHT);
  await light.frame.waitForSelector("section svg");
  const lightBg = await bg(light.frame);
  check("theme: the host's style variables are applied (light)", lightBg === "rgb(255, 250, 240)", lightBg);
  check("theme: data-theme follows hostContext.theme", (await light.frame.getAttribute("html", "data-theme")) === "light");
  await ctx.page.evaluate((c) => window.host.setContext(c), DARK);
  await light.frame.waitForFunction(() => document.documentElement.dataset.theme === "dark");
  const switched = await bg(light.frame);
  check("theme: host-context-changed switches to dark and its variables", switched === "rgb(16, 24, 32)", switched);
  const text = await light.frame.evaluate(() => getComputedStyle(document.body).color);
  check("theme: text colour from the host variables", text === "rgb(230, 235, 240)", text);
  // No host variables: the view's own light and dark colours.
  const plainLight = await show(ctx, "generate-employee-report", { reportType: "headcount" }, { theme: "light" });
  await plainLight.frame.waitForSelector("section svg");
  const a = await bg(plainLight.frame);
  const plainDark = await show(ctx, "generate-employee-report", { reportType: "headcount" }, { theme: "dark" });
  await plainDark.frame.waitForSelector("section svg");
  const b = await bg(plainDark.frame);
  check("theme: the view's own light and dark backgrounds differ", a !== b && a === "rgb(255, 255, 255)", { light: a, dark: b });
  await screenshot(ctx.page, "report-own-dark");
  const unknown = await ctx.page.evaluate(() => window.host.unknownRequest());
  check("the view answers a request it does not know with \"method not found\"", unknown.code === -32601, unknown);
  const answer = await ctx.page.evaluate(() => window.host.teardown());
  check("the view answers ui/resource-teardown", answer && typeof answer === "object", answer);
}

// The watchers work: a load the view tries is refused by the CSP the host
// applied, seen as a violation, and never reaches the network.
async function cspInForce(ctx) {
  const { frame } = await show(ctx, "generate-employee-report", { reportType: "headcount" });
  await frame.waitForSelector("section svg");
  const before = watch.console.length;
  const outcome = await frame.evaluate(() => fetch("https://example.com/probe").then(() => "fetched", (e) => "refused: " + e.message));
  await ctx.page.waitForTimeout(200);
  const seen = watch.console.splice(before);
  check("CSP: the view cannot fetch an outside origin", outcome.startsWith("refused"), outcome);
  check("CSP: the refusal is seen as a violation", seen.some((t) => /Content Security Policy|CSP violation/i.test(t)), seen);
  const probe = watch.requests.filter((u) => u.includes("example.com"));
  watch.requests = watch.requests.filter((u) => !u.includes("example.com"));
  check("CSP: the refused request never reached the network", probe.length === 0, probe);
}

// A hostile name (one an import could bring) stays text: the view sets
// textContent, never markup, so nothing in the name runs or loads.
async function hostileName(ctx) {
  const NAME = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
  const args = { employeeId: "AliceJohnson" };
  const definition = ctx.tools.find((t) => t.name === "get-employee-details");
  const view = await readView(ctx.client, definition._meta.ui.resourceUri);
  const result = await ctx.client.callTool({ name: "get-employee-details", arguments: args });
  const forged = JSON.parse(JSON.stringify(result));
  forged.structuredContent.name = NAME;
  const mounted = await ctx.page.evaluate((m) => window.host.mount(m), {
    html: view.html, csp: view.csp, hostContext: LIGHT, toolInput: args, toolResult: forged,
  });
  const frame = await (await ctx.page.$("#frame")).contentFrame();
  await frame.waitForSelector(".card");
  check("hostile name: shown as the very text", (await frame.textContent(".card .name")) === NAME, mounted);
  check("hostile name: no element made from it", (await frame.$$("img, .card script")).length === 0);
  await ctx.page.waitForTimeout(200);
  check("hostile name: nothing in it ran", (await frame.evaluate(() => window.__pwned)) === undefined);
  await screenshot(ctx.page, "org-chart-hostile-name");
}

async function appOnly(ctx) {
  const plain = await connect(false);
  const plainNames = new Set((await allTools(plain)).map((t) => t.name));
  const appOnlyTools = ctx.tools.filter((t) => {
    const v = t._meta?.ui?.visibility;
    return Array.isArray(v) && v.includes("app") && !v.includes("model");
  });
  for (const t of appOnlyTools) {
    check(`app-only ${t.name}: absent from a plain tools/list`, !plainNames.has(t.name));
  }
  const extra = ctx.tools.map((t) => t.name).filter((n) => !plainNames.has(n));
  check("app-only tools: a plain client sees every tool but the app-only ones (the HR server has "
    + appOnlyTools.length + ")", JSON.stringify(extra) === JSON.stringify(appOnlyTools.map((t) => t.name)), { extra });
  for (const t of ctx.tools.filter((t) => t._meta?.ui?.resourceUri)) {
    check(`${t.name}: linked view ${t._meta.ui.resourceUri} is listed to the plain client's tools too`, plainNames.has(t.name));
  }
  await plain.close();
}

async function main() {
  if (!MCP_URL) throw new Error("BROWSER_MCP_URL is not set (run scripts/browser)");
  mkdirSync(SHOTS, { recursive: true });
  const client = await connect(true);
  const tools = await allTools(client);
  const { browser, page } = await openBrowser(client);
  const ctx = { client, tools, page };
  try {
    await orgChartTeam(ctx);
    const team = structured(await client.callTool({ name: "get-team-members", arguments: { teamId: "backend" } }));
    await orgChartPerson(ctx, team);
    await roster(ctx);
    await report(ctx);
    await leave(ctx);
    await tenure(ctx);
    await themes(ctx);
    await cspInForce(ctx);
    await hostileName(ctx);
    await appOnly(ctx);
  } catch (e) {
    check("views test ran to the end", false, String(e && e.stack || e));
    await screenshot(page, "failure").catch(() => {});
  }
  check("nothing external: no request left the host page", watch.requests.length === 0, watch.requests);
  check("no console errors, CSP violations or bridge warnings", watch.console.length === 0, watch.console);
  check("no page errors", watch.pageErrors.length === 0, watch.pageErrors);
  for (const w of watch.warnings) console.log("# warning: " + w);
  await browser.close();
  await client.close();
  console.log(failures ? `# ${failures} failed` : "# views: all passed");
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.log("not ok - views test crashed\n  # " + String(e && e.stack || e));
  process.exit(1);
});
