// Tenure timeline for calculate-employee-tenure: the time at the company
// from the result (start to as-of), and on demand the career history, which
// the view asks for with get-employee-details through the host.
const { el } = Bridge;
const $ = (id) => document.getElementById(id);
const state = { tenure: null };

function stats(t) {
  const items = [["years", t.years], ["months", t.months], ["days", t.days], ["days in total", t.totalDays], ["status", t.status]];
  return el("div", { class: "stats" }, items.filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => el("div", { class: "stat" }, el("b", {}, String(v)), k)));
}

function section(box, title, spans) {
  box.replaceChildren(el("h2", {}, title), Timeline.chart(spans), Timeline.table(title, spans));
}

function show(t) {
  if (!t || !t.startDate) throw new Error("No tenure in this result.");
  state.tenure = t;
  $("title").textContent = t.name;
  $("subtitle").textContent = (t.summary || "") + " · " + t.startDate + " – " + t.asOf;
  $("stats").replaceChildren(stats(t));
  const open = t.status === "active";
  section($("span"), "Time at the company", [{ label: "At the company", detail: t.summary, from: t.startDate, to: t.asOf, open, openText: t.asOf + " (as of)" }]);
  $("career").replaceChildren();
  $("history").hidden = false;
}

async function history() {
  const t = state.tenure;
  if (!t) return;
  $("history").disabled = true;
  Bridge.status("Loading the career history…");
  try {
    const p = await Bridge.callTool("get-employee-details", { employeeId: t.employeeId });
    const spans = Timeline.career(p && p.employmentHistory, t.asOf, t.asOf + " (as of)");
    if (!spans.length) throw new Error("No career history in the answer.");
    section($("career"), "Career history", spans);
    $("history").hidden = true;
    Bridge.status("");
  } catch (e) { Bridge.showError(e); } finally { $("history").disabled = false; }
}

$("history").addEventListener("click", history);
Bridge.on("ui/notifications/tool-result", (result) => {
  if (result.isError) { Bridge.status(result.content && result.content[0] ? String(result.content[0].text) : "The tool call failed."); return; }
  show(Bridge.data(result));
  Bridge.status("");
});
Bridge.start("employee-tenure").catch(Bridge.showError);
