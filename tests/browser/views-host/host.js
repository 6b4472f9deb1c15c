// The test's MCP Apps host: renders one `ui://` page exactly as the server
// served it in a sandboxed iframe and talks to it through the official host
// bridge (AppBridge + PostMessageTransport from @modelcontextprotocol/ext-apps).
// Calls the view makes are forwarded to node (window.hostCallTool, exposed by
// views.mjs), where a real MCP client sends them to the server: the server
// sends no CORS headers, and node records every call for the assertions.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { z } from "zod";

const HOST_INFO = { name: "views-test-host", version: "1.0.0" };
const CAPABILITIES = { serverTools: {}, openLinks: {}, logging: {} };

// The page's declared CSP as a policy (SEP-1865: no domains → no origin).
export function policy(csp) {
  const connect = (csp && csp.connectDomains) || [];
  const resources = ((csp && csp.resourceDomains) || []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`.trim(),
    `style-src 'unsafe-inline' ${resources}`.trim(),
    `img-src data: ${resources}`.trim(),
    `font-src data: ${resources}`.trim(),
    `connect-src ${connect.length ? connect.join(" ") : "'none'"}`,
    "frame-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

// The host's CSP goes in first; the page's own meta tag can only narrow it.
function withPolicy(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy(csp)}">`;
  const at = html.search(/<head[^>]*>/i);
  if (at < 0) return meta + html;
  const end = html.indexOf(">", at) + 1;
  return html.slice(0, end) + meta + html.slice(end);
}

// What the view sent, in order (the handshake comes first).
const log = { sizes: [], initialized: 0, calls: [], order: [] };
let bridge = null;

/** Mounts a view and sends it the tool input and result once it is initialized. */
async function mount({ html, csp, hostContext, toolInput, toolResult, height }) {
  if (bridge) await bridge.close();
  document.getElementById("frame")?.remove();
  log.sizes = [];
  log.initialized = 0;
  log.order = [];
  const iframe = document.createElement("iframe");
  iframe.id = "frame";
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.cssText = `width: 760px; height: ${height || 600}px; border: 1px solid #888;`;
  document.body.append(iframe);

  bridge = new AppBridge(null, HOST_INFO, CAPABILITIES, { hostContext });
  bridge.oncalltool = async (params) => {
    log.calls.push(params);
    log.order.push("tools/call");
    return window.hostCallTool(params);
  };
  // As hosts do: the frame takes the height the view asks for.
  bridge.onsizechange = (size) => {
    log.sizes.push(size);
    log.order.push("size-changed");
    if (size.height > 0) iframe.style.height = size.height + "px";
  };
  bridge.onloggingmessage = () => {};
  const ready = new Promise((resolve) => {
    bridge.oninitialized = () => {
      log.initialized += 1;
      log.order.push("initialized");
      resolve();
    };
  });
  // Listen before the page loads: its first message is ui/initialize.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withPolicy(html, csp);
  await ready;
  await bridge.sendToolInput({ arguments: toolInput });
  await bridge.sendToolResult(toolResult);
  return { appVersion: bridge.getAppVersion(), appCapabilities: bridge.getAppCapabilities() };
}

/** A new theme or style variables, as hosts send them when the user switches. */
function setContext(hostContext) {
  bridge.setHostContext(hostContext);
}

/** Asks the view to tear down (a request the view must answer). */
function teardown() {
  return bridge.teardownResource({});
}

/** A request the view does not know: JSON-RPC says "method not found". */
async function unknownRequest() {
  try {
    return { result: await bridge.request({ method: "x-views-test/unknown", params: {} }, z.object({}).passthrough()) };
  } catch (e) {
    return { code: e.code, message: String(e.message) };
  }
}

window.host = { mount, setContext, teardown, unknownRequest, log };
