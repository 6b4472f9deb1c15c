// A timeline of dated spans ({ label, detail, from, to, open }) on one axis
// of years, shared by the org chart (a person's career) and the tenure view.
// The SVG is hidden from screen readers; the same rows are in a table.
const Timeline = (() => {
  const { el, svg } = Bridge;
  const ROW = 26;
  const LABEL_W = 210;
  const WIDTH = 640;
  const DAY = 86400000;

  // "YYYY-MM-DD" → ms since the epoch (UTC), or null.
  function day(text) {
    const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(String(text || ""));
    return m ? Date.UTC(+m[1], +m[2] - 1, +m[3]) : null;
  }

  function fit(label) {
    const s = String(label);
    return s.length > 30 ? s.slice(0, 29) + "…" : s;
  }

  // Year ticks between the first and last day, at most about eight.
  function ticks(start, end) {
    const first = new Date(start).getUTCFullYear() + 1;
    const last = new Date(end).getUTCFullYear();
    const step = Math.max(1, Math.ceil((last - first + 1) / 8));
    const out = [];
    for (let y = first; y <= last; y += step) out.push(y);
    return out;
  }

  /** The chart: one bar per span, oldest at the top. */
  function chart(spans) {
    const rows = spans.filter((s) => day(s.from) !== null && day(s.to) !== null);
    if (!rows.length) return null;
    const start = Math.min(...rows.map((s) => day(s.from)));
    const end = Math.max(...rows.map((s) => day(s.to)), start + DAY);
    const span = WIDTH - LABEL_W - 16;
    const x = (t) => LABEL_W + ((t - start) / (end - start)) * span;
    const height = rows.length * ROW + 22;
    const node = svg("svg", { viewBox: "0 0 " + WIDTH + " " + height, "aria-hidden": "true", focusable: "false" });
    for (const year of ticks(start, end)) {
      const at = x(Date.UTC(year, 0, 1)).toFixed(1);
      node.append(svg("line", { class: "tick", x1: at, x2: at, y1: 0, y2: rows.length * ROW }));
      node.append(svg("text", { class: "value", x: at, y: height - 6, "text-anchor": "middle" }, year));
    }
    rows.forEach((s, i) => {
      const y = i * ROW + 2;
      const x1 = x(day(s.from));
      const w = Math.max(2, x(day(s.to)) - x1);
      node.append(svg("text", { x: LABEL_W - 6, y: y + 16, "text-anchor": "end" }, fit(s.label)));
      node.append(svg("rect", { class: s.open ? "bar open" : "bar", x: x1.toFixed(1), y: y + 4, width: w.toFixed(1), height: ROW - 10, rx: 2 }));
    });
    return el("div", { class: "chart" }, node);
  }

  /** The same spans as a table (caption for screen readers). */
  function table(caption, spans) {
    return el("table", {}, el("caption", { class: "sr-only" }, caption),
      el("thead", {}, el("tr", {}, ["Position", "Details", "From", "To"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, spans.map((s) => el("tr", {}, el("th", { scope: "row" }, s.label), el("td", {}, s.detail || ""),
        el("td", { class: "date" }, s.from), el("td", { class: "date" }, s.open ? (s.openText || "now") : s.to)))));
  }

  // One history entry of get-employee-details as a span; open ones end at `until`.
  function fromHistory(h, until, openText) {
    const detail = [h.company, h.level, h.department, h.event].filter(Boolean).join(" · ");
    return { label: h.title, detail, from: h.startDate, to: h.endDate || until, open: !h.endDate, openText };
  }

  /** A person's career, oldest first (the result lists the most recent first). */
  function career(history, until, openText) {
    return (Array.isArray(history) ? history : []).slice().reverse().map((h) => fromHistory(h, until, openText));
  }

  return { chart, table, career, day };
})();
