// Leave balance bars for check-leave-balance: one bar per leave type, the
// entitlement split into used, pending and remaining days, with the same
// numbers in a table. Other leave types are asked for on demand (the same
// tool, called by the view through the host).
const { el, svg } = Bridge;
const $ = (id) => document.getElementById(id);
const TYPES = ["annual", "sick", "parental", "bereavement", "unpaid"];
const ROW = 30;
const LABEL_W = 110;
const WIDTH = 640;
const state = { employeeId: null, balances: [] };

const days = (n) => (typeof n === "number" && isFinite(n) ? n : 0);

// Stacked bar: used, then pending, then what remains of the entitlement.
function bar(chart, b, i, scale) {
  const y = i * ROW + 2;
  let x = LABEL_W;
  chart.append(svg("text", { x: LABEL_W - 6, y: y + 18, "text-anchor": "end" }, b.leaveType));
  for (const part of ["used", "pending", "remaining"]) {
    const w = Math.max(0, days(b[part])) * scale;
    if (w > 0) chart.append(svg("rect", { class: part, x: x.toFixed(1), y: y + 5, width: w.toFixed(1), height: ROW - 12 }));
    x += w;
  }
  chart.append(svg("text", { class: "value", x: (x + 6).toFixed(1), y: y + 18 },
    days(b.remaining) + " of " + days(b.entitled) + " " + (b.unit || "days") + " left"));
}

function draw() {
  const top = Math.max(1, ...state.balances.map((b) => Math.max(days(b.entitled), days(b.used) + days(b.pending))));
  const scale = (WIDTH - LABEL_W - 150) / top;
  const chart = svg("svg", { viewBox: "0 0 " + WIDTH + " " + (state.balances.length * ROW + 4), "aria-hidden": "true", focusable: "false" });
  state.balances.forEach((b, i) => bar(chart, b, i, scale));
  $("chart").replaceChildren(chart);
  $("rows").replaceChildren(...state.balances.map((b) => el("tr", {}, el("th", { scope: "row" }, b.leaveType),
    ["entitled", "used", "pending", "remaining"].map((k) => el("td", { class: "num" }, String(days(b[k])))))));
  $("balances").hidden = false;
  drawOthers();
}

// A button for each leave type not shown yet.
function drawOthers() {
  const shown = new Set(state.balances.map((b) => b.leaveType));
  $("others").replaceChildren(...TYPES.filter((t) => !shown.has(t)).map((t) =>
    el("button", { type: "button", onclick: () => addType(t) }, "Show " + t + " leave")));
}

async function addType(leaveType) {
  Bridge.status("Loading " + leaveType + " leave…");
  try {
    add(await Bridge.callTool("check-leave-balance", { employeeId: state.employeeId, leaveType }));
    Bridge.status("");
    const next = $("others").querySelector("button");
    if (next) next.focus();
  } catch (e) { Bridge.showError(e); }
}

function add(b) {
  if (!b || typeof b.leaveType !== "string") throw new Error("No leave balance in this result.");
  state.employeeId = b.employeeId;
  state.balances = state.balances.filter((x) => x.leaveType !== b.leaveType).concat([b]);
  $("title").textContent = "Leave balance: " + b.name;
  $("subtitle").textContent = b.year + " · in " + (b.unit || "days");
  draw();
}

Bridge.on("ui/notifications/tool-result", (result) => {
  if (result.isError) { Bridge.status(result.content && result.content[0] ? String(result.content[0].text) : "The tool call failed."); return; }
  state.balances = [];
  add(Bridge.data(result));
  Bridge.status("");
});
Bridge.start("employee-leave-balance").catch(Bridge.showError);
