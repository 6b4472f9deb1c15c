// The MCP Apps bridge every view shares: JSON-RPC 2.0 over postMessage with
// the host (SEP-1865). Data from tool results is only ever put in the page
// with textContent (see el()), so a hostile name stays text.
"use strict";
const Bridge = (() => {
  const TIMEOUT_MS = 30000;
  // Host requests every view answers (with an empty result).
  const ANSWERED = new Set(["ping", "ui/resource-teardown"]);
  const pending = new Map();
  const handlers = {};
  let nextId = 1;

  function post(message) {
    if (window.parent === window) return;
    window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*");
  }

  function request(method, params) {
    const id = nextId++;
    post({ id, method, params: params || {} });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(method + ": no answer from the host"));
      }, TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
    });
  }

  function notify(method, params) {
    post({ method, params: params || {} });
  }

  function settle(m) {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error) p.reject(new Error(String(m.error.message || "request failed")));
    else p.resolve(m.result);
  }

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (!m.method) {
      if (m.id !== undefined) settle(m);
      return;
    }
    const handler = handlers[m.method];
    if (handler) {
      try { handler(m.params || {}); } catch (e) { showError(e); }
    }
    // Host requests expect an answer: empty for the ones a view knows,
    // "method not found" (JSON-RPC) for the others, as the official App does.
    if (m.id === undefined) return;
    if (ANSWERED.has(m.method) || handler) post({ id: m.id, result: {} });
    else post({ id: m.id, error: { code: -32601, message: "Method not found: " + m.method } });
  });

  // Host theme and style variables (the host's fonts and colours); the
  // names last set, so that a new set replaces them.
  let hostVars = [];
  function applyContext(ctx) {
    if (!ctx) return;
    const root = document.documentElement;
    if (ctx.theme === "dark" || ctx.theme === "light") root.dataset.theme = ctx.theme;
    const vars = ctx.styles && ctx.styles.variables;
    if (vars && typeof vars === "object") {
      // A new set replaces the old one: a variable the host dropped falls back.
      for (const name of hostVars) root.style.removeProperty(name);
      hostVars = [];
      for (const [name, value] of Object.entries(vars)) {
        if (name.startsWith("--") && typeof value === "string") {
          root.style.setProperty(name, value);
          hostVars.push(name);
        }
      }
    }
  }

  function on(method, handler) { handlers[method] = handler; }
  on("ui/notifications/tool-cancelled", (p) => status("The tool call was cancelled" + (p.reason ? ": " + p.reason : ".")));

  // The page's natural height (not the frame's) and the frame's width, sent
  // when either changes, once per frame at most.
  function watchSize() {
    if (!("ResizeObserver" in window)) return;
    let queued = false;
    let last = "";
    const measure = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        const root = document.documentElement;
        const before = root.style.height;
        root.style.height = "max-content";
        const height = Math.ceil(root.getBoundingClientRect().height);
        root.style.height = before;
        const width = Math.ceil(window.innerWidth);
        if (width + "x" + height === last) return;
        last = width + "x" + height;
        notify("ui/notifications/size-changed", { width, height });
      });
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(document.documentElement);
    observer.observe(document.body);
  }

  // The handshake: ui/initialize, then initialized; only then does the view
  // send anything else (sizes, calls), as SEP-1865 orders it.
  async function start(name) {
    on("ui/notifications/host-context-changed", applyContext);
    const result = await request("ui/initialize", {
      protocolVersion: "2026-01-26",
      appInfo: { name, version: "1.0.0" },
      appCapabilities: {},
    });
    applyContext(result && result.hostContext);
    notify("ui/notifications/initialized");
    watchSize();
  }

  // The structured answer of a CallToolResult (or its JSON text block).
  function data(result) {
    if (!result) return null;
    if (result.structuredContent && typeof result.structuredContent === "object") return result.structuredContent;
    const block = (result.content || []).find((c) => c && c.type === "text");
    if (!block) return null;
    try { return JSON.parse(block.text); } catch (_) { return null; }
  }

  function errorText(result) {
    const block = ((result && result.content) || []).find((c) => c && c.type === "text");
    return block ? String(block.text) : "The tool call failed.";
  }

  // The page's ui:// URI: its calls carry it in _meta so the server's audit
  // trail records them as made from this view (the host passes _meta on).
  const VIEW_META = "dev.mcpwire/view";
  const tag = document.querySelector('meta[name="' + VIEW_META + '"]');
  const callMeta = tag ? { [VIEW_META]: tag.getAttribute("content") } : undefined;

  // tools/call through the host; resolves with the structured answer.
  async function callTool(name, args) {
    const params = { name, arguments: args };
    if (callMeta) params._meta = callMeta;
    const result = await request("tools/call", params);
    if (!result || result.isError) throw new Error(errorText(result));
    return data(result);
  }

  function openLink(url) { return request("ui/open-link", { url }); }

  function message(text) {
    return request("ui/message", { role: "user", content: [{ type: "text", text }] });
  }

  // An element whose children are elements or text (never parsed HTML).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  // An SVG element; text goes in with textContent, like el().
  function svg(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function showError(e) {
    const box = document.getElementById("status");
    if (box) box.textContent = String((e && e.message) || e);
  }

  function status(text) {
    const box = document.getElementById("status");
    if (box) box.textContent = text || "";
  }

  return { on, start, callTool, openLink, message, data, el, svg, showError, status };
})();
