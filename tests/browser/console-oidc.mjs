// The console's login through the server's OAuth issuer, in a real browser
// (Debian's Chromium, headless, Playwright): a small issuer runs here (its
// metadata, an authorization endpoint that signs in the person the test
// names at once, a token endpoint that checks the PKCE verifier, the JWKS
// of an Ed25519 key), a second server binary trusts it and logs the
// console in through it. The browser follows the real redirects: console
// → issuer → console; an HR admin gets the Tools page under their
// subject, a person without the console scope is refused, and a refusal
// at the issuer opens nothing.
//
// Run by scripts/browser (BROWSER_SERVER_BIN, BROWSER_CHROMIUM, BROWSER_SCREENSHOTS).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run scripts/browser)`);
  return value;
};
const BIN = env("BROWSER_SERVER_BIN");
const SHOTS = env("BROWSER_SCREENSHOTS");
const AUDIENCE = "http://127.0.0.1/mcp";
const CLIENT_ID = "console-browser";

// ---------------------------------------------------------------- issuer

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const jwk = { ...publicKey.export({ format: "jwk" }), kid: "browser-test", alg: "EdDSA", use: "sig" };
const b64url = (buf) => Buffer.from(buf).toString("base64url");
/** Who the authorization endpoint signs in next; null: the person refuses. */
let login = null;
const codes = new Map();
const seen = { authorize: [], token: [] };

function token(issuer, sub, scope) {
  const now = Math.floor(Date.now() / 1000);
  const head = b64url(JSON.stringify({ alg: "EdDSA", kid: jwk.kid, typ: "JWT" }));
  const body = b64url(JSON.stringify({ iss: issuer, aud: AUDIENCE, sub, scope, client_id: CLIENT_ID, iat: now, exp: now + 600 }));
  return `${head}.${body}.${b64url(sign(null, Buffer.from(`${head}.${body}`), privateKey))}`;
}

function startIssuer() {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      const url = new URL(req.url, "http://issuer");
      const issuer = `http://${req.headers.host}`;
      const json = (status, value) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (url.pathname === "/.well-known/oauth-authorization-server") {
        return json(200, { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks.json`, code_challenge_methods_supported: ["S256"] });
      }
      if (url.pathname === "/jwks.json") return json(200, { keys: [jwk] });
      if (url.pathname === "/authorize") {
        const q = Object.fromEntries(url.searchParams);
        seen.authorize.push(q);
        const back = new URL(q.redirect_uri);
        back.searchParams.set("state", q.state ?? "");
        if (!login) back.searchParams.set("error", "access_denied");
        else {
          const code = b64url(randomBytes(16));
          codes.set(code, { challenge: q.code_challenge, redirect: q.redirect_uri, ...login });
          back.searchParams.set("code", code);
        }
        res.writeHead(302, { Location: back.toString() });
        return res.end();
      }
      if (url.pathname === "/token" && req.method === "POST") {
        let text = "";
        req.on("data", (c) => (text += c));
        req.on("end", () => {
          const f = Object.fromEntries(new URLSearchParams(text));
          seen.token.push(f);
          const flow = codes.get(f.code);
          codes.delete(f.code);
          const verified = flow && flow.redirect === f.redirect_uri
            && createHash("sha256").update(f.code_verifier ?? "").digest("base64url") === flow.challenge;
          if (!verified) return json(400, { error: "invalid_grant" });
          json(200, { access_token: token(issuer, flow.sub, flow.scope), token_type: "Bearer", expires_in: 600 });
        });
        return;
      }
      json(404, { error: "not_found" });
    });
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

// ---------------------------------------------------------------- server

async function startServer(issuer, dir) {
  const portFile = join(dir, "console-port");
  const child = spawn(BIN, [
    "--database", `sqlite://${join(dir, "hr.db")}`, "--listen", "127.0.0.1:0", "--port-file", join(dir, "port"),
    "--auth-issuer", issuer, "--auth-audience", AUDIENCE, "--auth-jwks-url", `${issuer}/jwks.json`,
    "--console-listen", "127.0.0.1:0", "--console-port-file", portFile, "--console-oidc-client-id", CLIENT_ID,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (c) => (log += c));
  for (let i = 0; i < 300 && !existsSync(join(dir, "port")); i++) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(join(dir, "port"))) throw new Error(`the server did not start: ${log}`);
  return { child, console: `http://${readFileSync(portFile, "utf8").trim()}`, log: () => log };
}

// ---------------------------------------------------------------- steps

const failures = [];
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failures.push(name);
    console.log(`not ok - ${name}\n  # ${String(e?.stack ?? e).split("\n").join("\n  # ")}`);
  }
}

const issuerServer = await startIssuer();
const ISSUER = `http://127.0.0.1:${issuerServer.address().port}`;
const dir = mkdtempSync(join(tmpdir(), "console-oidc-"));
const server = await startServer(ISSUER, dir);
const browser = await chromium.launch({ executablePath: env("BROWSER_CHROMIUM"), headless: true });
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(10000);
  const problems = [];
  page.on("pageerror", (e) => problems.push(e.message));

  await step("oidc: the login page offers the issuer and no token form", async () => {
    await page.goto(`${server.console}/login`);
    await page.locator("#oidc-login").waitFor();
    assert.ok((await page.locator("#oidc-login").innerText()).includes(ISSUER));
    assert.equal(await page.locator('input[name="token"]').count(), 0);
  });

  await step("oidc: an HR admin logs in through the issuer with PKCE and sees the console as themselves", async () => {
    login = { sub: "priya.hr", scope: "hr:admin" };
    await page.goto(`${server.console}/login`);
    await Promise.all([page.waitForURL(`${server.console}/tools`), page.click("#oidc-login")]);
    const asked = seen.authorize.at(-1);
    assert.equal(asked.code_challenge_method, "S256");
    assert.equal(asked.resource, AUDIENCE);
    assert.equal(asked.client_id, CLIENT_ID);
    assert.ok(seen.token.at(-1).code_verifier, "the verifier went to the token endpoint");
    assert.match(await page.locator("body").innerText(), /priya\.hr/);
    assert.ok((await page.locator("form[action='/tools/enabled']").count()) > 0, "the tools can be changed");
    await page.screenshot({ path: join(SHOTS, "console-oidc-tools.png"), fullPage: true });
    const cookies = await context.cookies(server.console);
    const session = cookies.find((c) => c.name === "console_session");
    assert.ok(session && session.httpOnly && session.sameSite === "Strict", JSON.stringify(cookies));
    assert.ok(!cookies.some((c) => c.name === "console_oidc" && c.value), "the flow cookie is cleared");
  });

  await step("oidc: logging out ends the session", async () => {
    await Promise.all([page.waitForURL(`${server.console}/login`), page.click("form[action='/logout'] button")]);
    await page.goto(`${server.console}/tools`);
    assert.equal(new URL(page.url()).pathname, "/login");
  });

  await step("oidc: a person without the console scope is refused and gets no session", async () => {
    login = { sub: "bob.reader", scope: "hr:directory" };
    await page.goto(`${server.console}/login`);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().includes("/oidc/callback")),
      page.click("#oidc-login"),
    ]);
    assert.equal(response.status(), 403);
    assert.match(await page.locator("body").innerText(), /scope/);
    await page.screenshot({ path: join(SHOTS, "console-oidc-refused.png"), fullPage: true });
    await page.goto(`${server.console}/tools`);
    assert.equal(new URL(page.url()).pathname, "/login");
  });

  await step("oidc: a refusal at the issuer opens nothing", async () => {
    login = null;
    await page.goto(`${server.console}/login`);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().includes("/oidc/callback")),
      page.click("#oidc-login"),
    ]);
    assert.equal(response.status(), 401);
    assert.match(await page.locator("body").innerText(), /access_denied|refused/);
  });

  await step("oidc: no script error on any page", async () => {
    assert.deepEqual(problems, []);
  });
} finally {
  await browser.close();
  server.child.kill();
  issuerServer.close();
  rmSync(dir, { recursive: true, force: true });
}
if (failures.length) {
  console.log(`# server log:\n${server.log().split("\n").slice(-20).join("\n")}`);
  console.log(`# ${failures.length} failed: ${failures.join("; ")}`);
  process.exit(1);
}
console.log("# console-oidc: all passed");
