// Charts for generate-employee-report: headcount, turnover, compensation.
// Each chart is an SVG hidden from screen readers with the same numbers in
// a table behind it (open "Show the numbers" to see it).
const { el, svg } = Bridge;
const $ = (id) => document.getElementById(id);
const ROW = 24;
const LABEL_W = 170;
const WIDTH = 640;

function fit(label) {
  const s = String(label);
  return s.length > 24 ? s.slice(0, 23) + "…" : s;
}

// Horizontal bars; rows are { label, value, text, low?, high? }.
function bars(rows, max) {
  const top = Math.max(max || 0, ...rows.map((r) => Math.max(r.value, r.high || 0)), 1);
  const span = WIDTH - LABEL_W - 90;
  const chart = svg("svg", { viewBox: "0 0 " + WIDTH + " " + (rows.length * ROW + 4), "aria-hidden": "true", focusable: "false" });
  rows.forEach((r, i) => {
    const y = i * ROW + 2;
    const w = Math.max(1, (r.value / top) * span);
    chart.append(svg("text", { x: LABEL_W - 6, y: y + 15, "text-anchor": "end" }, fit(r.label)));
    chart.append(svg("rect", { class: "bar", x: LABEL_W, y: y + 3, width: w.toFixed(1), height: ROW - 8, rx: 2 }));
    if (r.low !== undefined && r.high !== undefined) {
      const x1 = LABEL_W + (r.low / top) * span;
      const x2 = LABEL_W + (r.high / top) * span;
      chart.append(svg("line", { class: "range", x1: x1.toFixed(1), x2: x2.toFixed(1), y1: y + ROW / 2, y2: y + ROW / 2 }));
    }
    // The value goes past the range line too, so the line never crosses it.
    const end = r.high !== undefined ? Math.max(w, (r.high / top) * span) : w;
    chart.append(svg("text", { class: "value", x: (LABEL_W + end + 6).toFixed(1), y: y + 15 }, r.text));
  });
  return el("div", { class: "chart" }, chart);
}

function table(caption, head, rows) {
  return el("details", {},
    el("summary", {}, "Show the numbers"),
    el("table", {}, el("caption", { class: "sr-only" }, caption),
      el("thead", {}, el("tr", {}, head.map((h, i) => el("th", { scope: "col", class: i ? "num" : null }, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) => i ? el("td", { class: "num" }, c) : el("th", { scope: "row" }, c)))))));
}

// The table is in the accessibility tree even while the details are closed.
function section(title, chart, numbers) {
  const tbl = numbers.querySelector("table").cloneNode(true);
  tbl.className = "sr-only";
  return el("section", { "aria-label": title }, el("h2", {}, title), chart, tbl, numbers);
}

function stats(items) {
  return el("div", { class: "stats" }, items.map(([k, v]) => el("div", { class: "stat" }, el("b", {}, v), k)));
}

function headcount(d) {
  const groups = [["By department", d.byDepartment], ["By location", d.byLocation],
    ["By employment type", d.byEmploymentType], ["By office type", d.byOfficeType]];
  return [stats([["active employees", d.totalActive], ["as of", d.asOf]])].concat(groups
    .filter(([, g]) => Array.isArray(g) && g.length)
    .map(([title, g]) => section("Headcount " + title.toLowerCase(),
      bars(g.map((b) => ({ label: b.label, value: b.headcount, text: b.headcount + " (" + b.percent + "%)" }))),
      table(title, ["Group", "Headcount", "Share %"], g.map((b) => [b.label, b.headcount, b.percent])))));
}

function turnover(d) {
  const rows = d.byDepartment || [];
  const o = d.overall || {};
  return [
    stats([["turnover rate %", o.turnoverRatePercent], ["hires", o.hires], ["leavers", o.terminations], ["period", d.periodStart + " – " + d.asOf]]),
    section("Turnover rate by department",
      bars(rows.map((r) => ({ label: r.department, value: r.turnoverRatePercent, text: r.turnoverRatePercent + "%" }))),
      table("Turnover by department", ["Department", "Rate %", "Hires", "Leavers", "Voluntary", "Involuntary", "Headcount start", "Headcount end"],
        rows.map((r) => [r.department, r.turnoverRatePercent, r.hires, r.terminations, r.voluntary, r.involuntary, r.headcountStart, r.headcountEnd]))),
    section("Hires and leavers by department",
      bars(rows.flatMap((r) => [{ label: r.department + " hires", value: r.hires, text: r.hires },
        { label: r.department + " leavers", value: r.terminations, text: r.terminations }])),
      table("Hires and leavers", ["Department", "Hires", "Leavers"], rows.map((r) => [r.department, r.hires, r.terminations]))),
  ];
}

function money(currency) {
  try {
    const f = new Intl.NumberFormat(undefined, { style: "currency", currency, maximumFractionDigits: 0 });
    return (n) => f.format(n);
  } catch (_) {
    return (n) => Math.round(n) + " " + currency;
  }
}

function compensation(d) {
  const fmt = money(d.currency || "USD");
  const group = (title, rows) => !rows.length ? null : section("Salaries " + title,
    bars(rows.map((r) => ({ label: r.label, value: r.averageSalary, low: r.minSalary, high: r.maxSalary, text: fmt(r.averageSalary) }))),
    table("Salaries " + title, ["Group", "People", "Average", "Median", "Min", "Max", "Compa-ratio", "Band position %"],
      rows.map((r) => [r.label, r.headcount, fmt(r.averageSalary), fmt(r.medianSalary), fmt(r.minSalary), fmt(r.maxSalary), r.averageCompaRatio, r.averageBandPositionPercent])));
  const o = d.overall || {};
  return [
    stats([["people", o.headcount], ["average salary", fmt(o.averageSalary)], ["average compa-ratio", o.averageCompaRatio], ["as of", d.asOf]]),
    el("p", { class: "muted" }, "Bars: average salary; line: lowest to highest."),
    group("by department", d.byDepartment || []),
    group("by level", d.byLevel || []),
  ];
}

const REPORTS = { headcount: ["Headcount", headcount], turnover: ["Turnover", turnover], compensation: ["Compensation", compensation] };

function render(result) {
  if (result.isError) { Bridge.status(result.content && result.content[0] ? String(result.content[0].text) : "The tool call failed."); return; }
  const d = Bridge.data(result);
  const report = d && REPORTS[d.reportType];
  if (!report) throw new Error("No report in this result.");
  $("title").textContent = report[0] + " report";
  $("subtitle").textContent = d.asOf ? "As of " + d.asOf : "";
  $("charts").replaceChildren(...report[1](d).filter(Boolean));
  Bridge.status("");
}

Bridge.on("ui/notifications/tool-result", render);
Bridge.start("employee-report").catch(Bridge.showError);
