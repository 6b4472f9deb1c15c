// The operator console in a real browser (Debian's Chromium, headless,
// driven by Playwright), as an operator uses it: log in with the token
// from its file, change tools and approval policies, decide calls that
// wait for an operator, search and export the audit trail, watch calls
// arrive live, read the health page; the read-only pages without
// JavaScript; forged form posts refused; and no console error, failed
// request or CSP violation on any page.
//
// Run by scripts/browser, which starts the server and exports BROWSER_*.
// The catalogue is shared with the tests that run after this one, so every
// change made here (enabled state, approval policies) is undone on exit.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run scripts/browser)`);
  return value;
};
const MCP_URL = env("BROWSER_MCP_URL");
const CONSOLE = env("BROWSER_CONSOLE_URL");
const TOKEN = readFileSync(env("BROWSER_CONSOLE_TOKEN_FILE"), "utf8").trim();
const DATABASE = env("BROWSER_DATABASE");
const BIN = env("BROWSER_SERVER_BIN");
const SHOTS = env("BROWSER_SCREENSHOTS");
const OPERATOR = "Olga Operator";
const ACTOR = `console:${OPERATOR}`;
const GATED = "get-employee-details";

// ---------------------------------------------------------------- MCP

let nextId = 1;

/** The JSON-RPC reply in a response body, plain JSON or an SSE stream. */
function reply(text, contentType) {
  if (!contentType.includes("text/event-stream")) return JSON.parse(text);
  const messages = text
    .split(/\r?\n\r?\n/)
    .map((event) => event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n"))
    .filter((data) => data.length > 0)
    .map((data) => JSON.parse(data));
  const answer = messages.find((m) => m.id !== undefined && (m.result !== undefined || m.error !== undefined));
  if (!answer) throw new Error(`no reply in the stream: ${text.slice(0, 300)}`);
  return answer;
}

/** A session of the 2025-11-25 wire: initialize, then initialized. */
async function mcpSession(clientName = "browser-test") {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const post = async (body, extra = {}) => {
    const res = await fetch(MCP_URL, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(body) });
    return res;
  };
  const init = await post({
    jsonrpc: "2.0",
    id: nextId++,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: clientName, version: "1.0.0" } },
  });
  assert.equal(init.status, 200, `initialize: ${init.status}`);
  const session = init.headers.get("mcp-session-id");
  assert.ok(session, "initialize gives an Mcp-Session-Id");
  const version = reply(await init.text(), init.headers.get("content-type") ?? "").result.protocolVersion;
  const sessionHeaders = { "Mcp-Session-Id": session, "MCP-Protocol-Version": version };
  const note = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, sessionHeaders);
  assert.equal(note.status, 202, "initialized accepted");
  const request = async (method, params) => {
    const res = await post({ jsonrpc: "2.0", id: nextId++, method, params }, sessionHeaders);
    const text = await res.text();
    assert.equal(res.status, 200, `${method}: ${res.status} ${text.slice(0, 200)}`);
    const message = reply(text, res.headers.get("content-type") ?? "");
    if (message.error) throw new Error(`${method}: ${JSON.stringify(message.error)}`);
    return message.result;
  };
  return {
    request,
    call: (name, args) => request("tools/call", { name, arguments: args }),
    close: () => fetch(MCP_URL, { method: "DELETE", headers: sessionHeaders }).catch(() => {}),
  };
}

/** Every tool `tools/list` gives (all pages). */
async function mcpTools() {
  const mcp = await mcpSession();
  const tools = [];
  let cursor;
  do {
    const page = await mcp.request("tools/list", cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  await mcp.close();
  return tools;
}

/** The names `tools/list` gives, sorted. */
async function mcpToolNames() {
  return (await mcpTools()).map((t) => t.name).sort();
}

const resultText = (result) => (result.content ?? []).map((c) => c.text ?? "").join(" ");

// ---------------------------------------------------------------- CLI

/** `tools list --json`, one object per tool. */
function cliTools() {
  const out = execFileSync(BIN, ["tools", "list", "--json", "--database", DATABASE], {
    encoding: "utf8",
    env: { ...process.env, RUST_LOG: "warn" },
  });
  return out.split("\n").filter((l) => l.trim().startsWith("{")).map((l) => JSON.parse(l));
}

function runTools(args) {
  execFileSync(BIN, ["tools", ...args, "--database", DATABASE, "--actor", "browser-test"], {
    encoding: "utf8",
    env: { ...process.env, RUST_LOG: "warn" },
  });
}

/** Puts the catalogue back as `before` had it (enabled state, overrides). */
function restoreCatalogue(before) {
  const now = cliTools();
  for (const was of before) {
    const is = now.find((t) => t.name === was.name);
    if (!is) continue;
    if (is.enabled !== was.enabled) runTools([was.enabled ? "enable" : "disable", was.name]);
    if (JSON.stringify(is.approval_override ?? null) !== JSON.stringify(was.approval_override ?? null)) {
      const level = typeof was.approval_override === "string" ? was.approval_override : "default";
      runTools(["approval", was.name, level, "--reason", "browser test: restore"]);
    }
  }
}

// ---------------------------------------------------------------- harness

const failures = [];
const problems = [];
/** Failed requests that are expected (streams closed by navigation, downloads). */
const EXPECTED_ABORTS = [/\/live\/events/, /\/audit\.(csv|jsonl)/];
let shot = 0;

async function step(name, fn) {
  const before = problems.length;
  try {
    await fn();
    const fresh = problems.slice(before);
    if (fresh.length) throw new Error(`page problems: ${fresh.join(" | ")}`);
    console.log(`ok - ${name}`);
  } catch (e) {
    failures.push(name);
    console.log(`not ok - ${name}\n  # ${String(e?.stack ?? e).split("\n").join("\n  # ")}`);
  }
}

/** Listens for everything a page must not do. */
function watch(page, label) {
  page.setDefaultTimeout(10000);
  page.on("console", (m) => {
    // A page answered 401/403/409 on purpose logs "Failed to load resource";
    // failing sub-resources are caught by status below instead.
    if (m.text().startsWith("Failed to load resource")) return;
    if (m.type() === "error" || m.type() === "warning") problems.push(`${label} console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`${label} page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const failure = r.failure()?.errorText ?? "";
    if (failure.includes("ERR_ABORTED") && EXPECTED_ABORTS.some((p) => p.test(r.url()))) return;
    problems.push(`${label} request failed: ${r.url()} ${failure}`);
  });
  page.on("response", (r) => {
    const status = r.status();
    // 401/403/409 answers are the pages that show a refusal; a sub-resource must never fail.
    if (status >= 400 && r.request().resourceType() !== "document") {
      problems.push(`${label} ${status} for ${r.url()}`);
    }
  });
}

async function screenshot(page, name) {
  shot += 1;
  await page.screenshot({ path: join(SHOTS, `console-${String(shot).padStart(2, "0")}-${name}.png`), fullPage: true });
}

async function eventually(what, check, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const notice = (page) => page.locator("p[role=status]").innerText();
const toolRow = (page, name) => page.locator("tbody tr").filter({ has: page.locator(`code:text-is("${name}")`) });

async function login(page, token, name = OPERATOR) {
  await page.goto(`${CONSOLE}/login`);
  await page.getByLabel("Your name").fill(name);
  await page.getByLabel("Console token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForLoadState("load");
}

// ---------------------------------------------------------------- steps

async function loginSteps(page) {
  await step("a wrong token is refused with a message", async () => {
    await page.goto(`${CONSOLE}/tools`);
    assert.match(page.url(), /\/login$/, "no session: the login form");
    await login(page, "not-the-token-0123456789");
    assert.match(page.url(), /\/login$/);
    assert.match(await notice(page), /Wrong console token/);
    await screenshot(page, "login-refused");
  });
  await step("the token from the file and a name open a session", async () => {
    await login(page, TOKEN);
    assert.match(page.url(), /\/tools$/);
    assert.match(await page.locator("nav").innerText(), new RegExp(`signed in as ${OPERATOR}`));
    await screenshot(page, "tools");
  });
}

async function toolsSteps(page) {
  await step("the Tools page lists every tool tools/list gives", async () => {
    await page.goto(`${CONSOLE}/tools`);
    const listed = await mcpToolNames();
    const shown = (await page.locator("tbody tr td:first-child code").allInnerTexts()).sort();
    assert.ok(listed.length >= 8, `tools/list: ${listed}`);
    for (const name of listed) assert.ok(shown.includes(name), `${name} on the page (${shown})`);
  });
  await step("each tool's schemas and annotations, as tools/list gives them", async () => {
    for (const listed of await mcpTools()) {
      const row = toolRow(page, listed.name);
      const input = row.locator("details", { hasText: "Input schema" });
      assert.equal(await input.evaluate((d) => d.open), false, "folded until opened");
      await input.locator("summary").click();
      assert.deepEqual(JSON.parse(await input.locator("pre").innerText()), listed.inputSchema, `${listed.name} input`);
      if (listed.outputSchema) {
        const output = row.locator("details", { hasText: "Output schema" });
        await output.locator("summary").click();
        assert.deepEqual(JSON.parse(await output.locator("pre").innerText()), listed.outputSchema, `${listed.name} output`);
      }
      const hints = await row.locator("ul.annotations li").allInnerTexts();
      for (const [key, value] of Object.entries(listed.annotations ?? {})) {
        assert.ok(hints.includes(`${key}: ${JSON.stringify(value)}`), `${listed.name} ${key} in ${hints}`);
      }
    }
    await screenshot(page, "tools-schemas");
  });
  const tool = "calculate-employee-tenure";
  await step("a tool disabled with the form leaves tools/list, by console:NAME", async () => {
    await toolRow(page, tool).getByRole("button", { name: "Disable" }).click();
    await page.waitForLoadState("load");
    assert.match(await notice(page), new RegExp(`${tool} disabled`));
    assert.match(await toolRow(page, tool).innerText(), /disabled/);
    await screenshot(page, "tool-disabled");
    await eventually("the tool leaves tools/list", async () => !(await mcpToolNames()).includes(tool));
    const row = cliTools().find((t) => t.name === tool);
    assert.equal(row.enabled, false, JSON.stringify(row));
    assert.equal(row.updated_by, ACTOR, JSON.stringify(row));
  });
  await step("and enabled again, it is served again", async () => {
    await toolRow(page, tool).getByRole("button", { name: "Enable" }).click();
    await page.waitForLoadState("load");
    assert.match(await notice(page), new RegExp(`${tool} enabled`));
    await eventually("the tool is back in tools/list", async () => (await mcpToolNames()).includes(tool));
    assert.equal(cliTools().find((t) => t.name === tool).enabled, true);
  });
  await step("an approval policy set with a reason, then restored", async () => {
    await setPolicy(page, tool, "confirm", "browser test: confirm");
    let row = cliTools().find((t) => t.name === tool);
    assert.equal(row.approval, "confirm", JSON.stringify(row));
    assert.equal(row.updated_by, ACTOR);
    assert.match(await toolRow(page, tool).innerText(), /override/);
    await screenshot(page, "tool-policy");
    await setPolicy(page, tool, "default", "browser test: restore");
    row = cliTools().find((t) => t.name === tool);
    assert.equal(row.approval_override ?? null, null, JSON.stringify(row));
  });
}

async function setPolicy(page, tool, level, reason) {
  const row = toolRow(page, tool);
  await row.locator("select[name=level]").selectOption(level);
  await row.locator("input[name=reason]").fill(reason);
  await row.getByRole("button", { name: "Set approval" }).click();
  await page.waitForLoadState("load");
  assert.match(await notice(page), new RegExp(tool), `notice after setting ${level}`);
}

/**
 * Starts a call of the gated tool for `employeeId` (it waits for an
 * operator) and waits for its row on the Approvals page. Servers apply a
 * policy within their catalogue poll, so a call served at once came
 * before the change: it is made again.
 */
async function waitingCall(page, mcp, employeeId) {
  return eventually("the call appears on the Approvals page", async () => {
    let served = false;
    const call = mcp.call(GATED, { employeeId });
    call.then(() => { served = true; }, () => { served = true; });
    for (let i = 0; i < 20 && !served; i++) {
      await page.goto(`${CONSOLE}/approvals`);
      const row = page.locator("tbody tr").filter({ has: page.locator("form[action='/approvals/decide']") }).filter({ hasText: employeeId });
      if ((await row.count()) === 1) return { call, row };
      await new Promise((r) => setTimeout(r, 250));
    }
    await call.catch(() => {});
    return null;
  }, 20000);
}

async function approvalSteps(page) {
  await step(`${GATED} set to operator on the page`, async () => {
    await page.goto(`${CONSOLE}/tools`);
    await setPolicy(page, GATED, "operator", "browser test: operator");
    assert.equal(cliTools().find((t) => t.name === GATED).approval, "operator");
  });
  await step("a waiting call, approved in the browser, is served", async () => {
    const mcp = await mcpSession("approval-client");
    // The call waits (--approval-wait) while the operator decides.
    const { call, row } = await waitingCall(page, mcp, "AliceJohnson");
    const text = await row.innerText();
    assert.match(text, new RegExp(GATED));
    assert.match(text, /\{"employeeId":"AliceJohnson"\}/, "the redacted arguments");
    await screenshot(page, "approvals-pending");
    await row.locator("input[name=reason]").fill("browser test: looks fine");
    await row.getByRole("button", { name: "Approve" }).click();
    await page.waitForLoadState("load");
    assert.match(await notice(page), /apr-\S+ approved/);
    const result = await call;
    assert.notEqual(result.isError, true, resultText(result));
    assert.match(resultText(result), /Alice/);
    await mcp.close();
  });
  await step("a denied call is refused, and the page says who decided and why", async () => {
    const mcp = await mcpSession("approval-client");
    const { call, row } = await waitingCall(page, mcp, "BobSmith");
    await row.locator("input[name=reason]").fill("browser test: not needed");
    await row.getByRole("button", { name: "Deny" }).click();
    await page.waitForLoadState("load");
    assert.match(await notice(page), /apr-\S+ denied/);
    const result = await call;
    assert.equal(result.isError, true, JSON.stringify(result));
    const decided = page.locator("tbody tr").filter({ hasText: "browser test: not needed" });
    assert.equal(await decided.count(), 1, "the denial is in the decided list");
    const text = await decided.innerText();
    assert.match(text, /denied/);
    assert.ok(text.includes(ACTOR), text);
    await screenshot(page, "approvals-decided");
    await mcp.close();
  });
  await step("the policy is restored", async () => {
    await page.goto(`${CONSOLE}/tools`);
    await setPolicy(page, GATED, "default", "browser test: restore");
    assert.equal(cliTools().find((t) => t.name === GATED).approval_override ?? null, null);
  });
}

async function auditSteps(page) {
  const tool = "search-employees-by-skill";
  await step("audit: search by tool, page with the cursor, open a row", async () => {
    // A formula-looking client name, for the export check below.
    const mcp = await mcpSession("=1+1");
    for (const skill of ["Python", "Rust", "Go"]) await mcp.call(tool, { skill });
    await mcp.close();
    await page.goto(`${CONSOLE}/audit`);
    await page.getByLabel("Tool").fill(tool);
    await page.getByLabel("Rows").fill("2");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForLoadState("load");
    const tools = await page.locator("#live-rows tr td:nth-child(3)").allInnerTexts();
    assert.equal(tools.length, 2, `two rows a page: ${tools}`);
    assert.ok(tools.every((t) => t === tool), `${tools}`);
    await screenshot(page, "audit-search");
    const firstIds = await page.locator("#live-rows tr td:first-child").allInnerTexts();
    await page.getByRole("link", { name: "Older rows →" }).click();
    await page.waitForLoadState("load");
    const olderIds = await page.locator("#live-rows tr td:first-child").allInnerTexts();
    assert.ok(olderIds.length >= 1, "an older page");
    assert.ok(Math.max(...olderIds.map(Number)) < Math.min(...firstIds.map(Number)), `${olderIds} older than ${firstIds}`);
    const id = olderIds[0];
    await page.getByRole("link", { name: id, exact: true }).click();
    await page.waitForLoadState("load");
    assert.match(await page.locator("h1").innerText(), new RegExp(`Audit row ${id}`));
    const detail = JSON.parse(await page.locator("pre").innerText());
    assert.equal(String(detail.id), id);
    assert.equal(detail.tool, tool);
    await screenshot(page, "audit-row");
  });
  await step("audit: the CSV export neutralises formulas, JSON Lines parse", async () => {
    await page.goto(`${CONSOLE}/audit?tool=${tool}`);
    const csv = await download(page, "Export CSV");
    const lines = csv.trim().split("\r\n");
    assert.match(lines[0], /^id,at,tool,/);
    assert.ok(lines.length >= 4, `${lines.length} lines`);
    assert.ok(csv.includes(`"'=1+1"`), `the client name behind a quote: ${lines[1]}`);
    assert.ok(!/(^|,)"?=1\+1/.test(csv), "no cell starts with =");
    const jsonl = await download(page, "Export JSON Lines");
    const rows = jsonl.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(rows.length, lines.length - 1, "the same rows");
    assert.ok(rows.every((r) => r.tool === tool));
    assert.ok(rows.some((r) => r.client_name === "=1+1"), "JSON keeps the value as it was");
  });
}

async function download(page, link) {
  const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: link }).click()]);
  const stream = await file.createReadStream();
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function liveAndHealthSteps(page) {
  await step("live: a call appears without a reload (Server-Sent Events)", async () => {
    await page.goto(`${CONSOLE}/live`);
    await page.locator("#live-status", { hasText: "new calls appear" }).waitFor();
    await page.evaluate(() => { window.notReloaded = true; });
    const skill = `Live${Date.now()}`;
    const mcp = await mcpSession("live-client");
    await mcp.call("search-employees-by-skill", { skill });
    await mcp.close();
    await page.locator("#live-rows tr.new", { hasText: skill }).waitFor({ timeout: 10000 });
    assert.equal(await page.evaluate(() => window.notReloaded), true, "the same page");
    const cells = await page.locator("#live-rows tr").first().locator("td").allInnerTexts();
    assert.equal(cells[2], "search-employees-by-skill", `${cells}`);
    assert.equal(cells[4], "live-client", `${cells}`);
    await screenshot(page, "live");
  });
  await step("live: activity per tool, pause holds new rows, the filter keeps other tools out", async () => {
    const tool = "search-employees-by-skill";
    await page.goto(`${CONSOLE}/live?tool=${tool}`);
    await page.locator("#live-status", { hasText: "new calls appear" }).waitFor();
    const activity = page.locator(`#live-activity tr[data-tool="${tool}"]`);
    const before = Number(await activity.locator(".recent").innerText());
    await page.getByRole("button", { name: "Pause" }).click();
    const skill = `Paused${Date.now()}`;
    const mcp = await mcpSession("live-client");
    await mcp.call(GATED, { employeeId: "AliceJohnson" });
    await mcp.call(tool, { skill });
    await mcp.close();
    await page.locator("#live-status", { hasText: "Paused: 1 new call(s) held" }).waitFor();
    assert.equal(await page.locator("#live-rows tr", { hasText: skill }).count(), 0, "held while paused");
    assert.equal(Number(await activity.locator(".recent").innerText()), before + 1, "counted in the last minute");
    assert.match(await activity.locator(".outcome").innerText(), /^(success|tool_error)$/, "its outcome");
    await screenshot(page, "live-paused");
    await page.getByRole("button", { name: "Resume" }).click();
    await page.locator("#live-rows tr.new", { hasText: skill }).waitFor();
    const tools = await page.locator("#live-rows tr td:nth-child(3)").allInnerTexts();
    assert.ok(tools.every((t) => t === tool), `only ${tool}: ${tools}`);
    assert.equal(await page.locator(`#live-activity tr[data-tool="${GATED}"]`).count(), 0, "the filter holds for activity");
  });
  await step("health: the page renders readiness, the hour's charts and counters", async () => {
    await page.goto(`${CONSOLE}/health`);
    assert.match(await page.locator("body").innerText(), /ready/);
    assert.ok((await page.locator("td").count()) > 0, "counters");
    // The hour's charts: a bar a minute, drawn with height; the calls this
    // test made are in the totals and in the table.
    assert.equal(await page.locator("#calls-chart rect").count(), 61, "a bar a minute");
    const box = await page.locator("#calls-chart").boundingBox();
    assert.ok(box && box.width > 300 && box.height > 20, `the chart is drawn: ${JSON.stringify(box)}`);
    const totals = await page.locator("#hour-totals").innerText();
    const calls = Number((totals.match(/^(\d+) calls/) || [])[1]);
    assert.ok(calls > 0, `calls counted: ${totals}`);
    assert.ok((await page.locator("#hour-table tbody tr").count()) > 0, "busy minutes listed");
    await screenshot(page, "health");
  });
}

/** Runs the server binary's `cmd` on the test database. */
function runBin(args) {
  return execFileSync(BIN, [...args, "--database", DATABASE], {
    encoding: "utf8",
    env: { ...process.env, RUST_LOG: "warn" },
  });
}

async function directorySteps(page) {
  await step("directory: an import's who, mode, file digests and counts per entity", async () => {
    // One employee's phone changed, then the export imported back: the
    // directory ends as it was, with two imports recorded.
    const dir = mkdtempSync(join(tmpdir(), "console-import-"));
    try {
      runBin(["export", "--out", join(dir, "was"), "--format", "jsonl"]);
      cpSync(join(dir, "was"), join(dir, "changed"), { recursive: true });
      const file = join(dir, "changed", "employees.jsonl");
      const lines = readFileSync(file, "utf8").split("\n");
      const first = JSON.parse(lines[0]);
      first.phone = "+1-555-0000";
      lines[0] = JSON.stringify(first);
      writeFileSync(file, lines.join("\n"));
      runBin(["import", join(dir, "changed"), "--format", "jsonl", "--actor", "browser-import"]);
      runBin(["import", join(dir, "was"), "--format", "jsonl", "--actor", "browser-import"]);
      const digest = execFileSync("sha256sum", [file], { encoding: "utf8" }).split(" ")[0];
      await page.goto(`${CONSOLE}/directory`);
      const imports = page.locator("#imports tr.import");
      assert.equal(await imports.count(), 2, "two imports");
      const older = imports.nth(1);
      const text = await older.innerText();
      assert.match(text, /browser-import/);
      assert.match(text, /merge \(jsonl\)/);
      assert.ok(text.includes(digest), `the changed file's sha256 ${digest}`);
      const employees = older.locator('tr[data-entity="employees"] td');
      assert.deepEqual((await employees.allInnerTexts()).slice(1, 3), ["0", "1"], "one employee updated");
      // The rows now: as many employees as the export wrote.
      const exported = lines.filter((l) => l.trim()).length;
      const now = await page.locator('#row-counts tr[data-entity="employees"] td').allInnerTexts();
      assert.deepEqual(now, ["employees", String(exported)], "the employees the directory holds now");
      await screenshot(page, "directory");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

async function noScriptSteps(browser) {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  watch(page, "no-js");
  await step("without JavaScript: log in and read every page", async () => {
    await login(page, TOKEN, "Nora NoScript");
    assert.match(page.url(), /\/tools$/);
    assert.ok((await page.locator("tbody tr").count()) >= 8);
    await page.goto(`${CONSOLE}/approvals`);
    assert.match(await page.locator("h2").first().innerText(), /Pending/);
    await page.goto(`${CONSOLE}/audit?tool=search-employees-by-skill`);
    const id = (await page.locator("#live-rows tr td:first-child").allInnerTexts())[0];
    assert.ok(id, "audit rows");
    await page.goto(`${CONSOLE}/audit/row?id=${id}`);
    assert.match(await page.locator("pre").innerText(), /search-employees-by-skill/);
    await page.goto(`${CONSOLE}/live`);
    assert.ok((await page.locator("#live-rows tr").count()) > 0, "the newest calls, server-rendered");
    assert.ok((await page.locator("#live-activity tr").count()) > 0, "the activity, server-rendered");
    assert.equal(await page.locator("#live-pause").isVisible(), false, "no pause without the script");
    await page.getByLabel("Tool").fill("search-employees-by-skill");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForLoadState("load");
    const tools = await page.locator("#live-rows tr td:nth-child(3)").allInnerTexts();
    assert.ok(tools.length > 0 && tools.every((t) => t === "search-employees-by-skill"), `${tools}`);
    await screenshot(page, "live-no-js");
    await page.goto(`${CONSOLE}/directory`);
    assert.match(await page.locator("h1").innerText(), /Directory/);
    await page.goto(`${CONSOLE}/health`);
    assert.match(await page.locator("body").innerText(), /ready/);
  });
  await context.close();
}

async function forgedPostSteps(context, page) {
  await step("a form POST without the CSRF token or from another Origin is refused", async () => {
    await page.goto(`${CONSOLE}/tools`);
    const csrf = await page.locator("input[name=csrf]").first().inputValue();
    const tool = "get-team-members";
    const noToken = await context.request.post(`${CONSOLE}/tools/enabled`, {
      form: { name: tool, enabled: "false" },
      maxRedirects: 0,
    });
    assert.equal(noToken.status(), 403, "no CSRF token");
    const wrongOrigin = await context.request.post(`${CONSOLE}/tools/enabled`, {
      form: { name: tool, enabled: "false", csrf },
      headers: { Origin: "http://evil.example" },
      maxRedirects: 0,
    });
    assert.equal(wrongOrigin.status(), 403, "another Origin");
    const wrongToken = await context.request.post(`${CONSOLE}/approvals/decide`, {
      form: { id: "apr-0", decision: "approve", csrf: "0".repeat(csrf.length) },
      maxRedirects: 0,
    });
    assert.equal(wrongToken.status(), 403, "a wrong CSRF token");
    assert.equal(cliTools().find((t) => t.name === tool).enabled, true, "nothing changed");
    assert.ok((await mcpToolNames()).includes(tool));
  });
}

async function logoutSteps(context, page) {
  await step("log out ends the session", async () => {
    await page.goto(`${CONSOLE}/tools`);
    await page.getByRole("button", { name: "Log out" }).click();
    await page.waitForLoadState("load");
    assert.match(page.url(), /\/login$/);
    await page.goto(`${CONSOLE}/audit`);
    assert.match(page.url(), /\/login$/, "pages need a login again");
    const post = await context.request.post(`${CONSOLE}/tools/enabled`, { form: { name: GATED, enabled: "false" }, maxRedirects: 0 });
    assert.equal(post.status(), 401);
  });
}

// ---------------------------------------------------------------- main

const before = cliTools();
const browser = await chromium.launch({ executablePath: env("BROWSER_CHROMIUM"), headless: true });
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  watch(page, "operator");
  await loginSteps(page);
  await toolsSteps(page);
  await approvalSteps(page);
  await auditSteps(page);
  await liveAndHealthSteps(page);
  await directorySteps(page);
  await forgedPostSteps(context, page);
  await noScriptSteps(browser);
  await logoutSteps(context, page);
  await context.close();
} catch (e) {
  failures.push("setup");
  console.log(`not ok - the run stopped: ${e?.stack ?? e}`);
} finally {
  await browser.close();
  try {
    restoreCatalogue(before);
    assert.deepEqual(
      cliTools().map((t) => [t.name, t.enabled, t.approval_override ?? null]),
      before.map((t) => [t.name, t.enabled, t.approval_override ?? null]),
    );
    console.log("ok - the catalogue is as it was");
  } catch (e) {
    failures.push("restore");
    console.log(`not ok - the catalogue is as it was: ${e?.message ?? e}`);
  }
}
if (failures.length) {
  console.log(`# ${failures.length} failed: ${failures.join("; ")}`);
  process.exit(1);
}
console.log("# console: all passed");
