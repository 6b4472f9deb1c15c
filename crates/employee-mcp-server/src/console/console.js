// The Live page: appends each audit row the server pushes (Server-Sent
// Events, filtered by the page's tool and outcome) to the table, keeps the
// per-tool activity (calls in the last minute, last call) current, and
// pauses: rows that arrive while paused are held and shown on resume.
// Cells are set with textContent, never as HTML.
"use strict";
(function () {
  var status = document.getElementById("live-status");
  var rows = document.getElementById("live-rows");
  var activity = document.getElementById("live-activity");
  var pause = document.getElementById("live-pause");
  if (!status || !rows || !window.EventSource) { return; }
  var WINDOW_MS = 60000;
  var paused = false;
  var held = [];

  function cell(tr, text, className) {
    var td = document.createElement("td");
    td.textContent = text;
    if (className) { td.className = className; }
    tr.appendChild(td);
    return td;
  }

  function callRow(r) {
    var tr = document.createElement("tr");
    var id = document.createElement("td");
    var link = document.createElement("a");
    link.href = "/audit/row?id=" + encodeURIComponent(r.id);
    link.textContent = String(r.id);
    id.appendChild(link);
    tr.appendChild(id);
    cell(tr, r.at);
    var tool = document.createElement("td");
    var code = document.createElement("code");
    code.textContent = r.tool;
    tool.appendChild(code);
    tr.appendChild(tool);
    cell(tr, r.subject || "-");
    var client = cell(tr, r.client_name || r.client_id || "-");
    if (r.via) {
      // As the server-rendered table: the view that made the call.
      var small = document.createElement("small");
      var view = document.createElement("code");
      view.textContent = r.via;
      small.append("from the view ", view);
      client.append(document.createElement("br"), small);
    }
    cell(tr, r.outcome + (r.count > 1 ? " ×" + r.count : ""));
    cell(tr, r.latency_ms + " ms");
    cell(tr, JSON.stringify(r.arguments));
    tr.className = "new";
    return tr;
  }

  function show(r) {
    rows.insertBefore(callRow(r), rows.firstChild);
    while (rows.children.length > 500) { rows.removeChild(rows.lastChild); }
  }

  // Activity: each tool's row keeps its calls per second of the window
  // ("second:calls,…"), so a flood of calls stays one entry a second.
  function toolRow(tool) {
    var found = null;
    Array.prototype.forEach.call(activity.children, function (tr) {
      if (tr.getAttribute("data-tool") === tool) { found = tr; }
    });
    if (found) { return found; }
    var tr = document.createElement("tr");
    tr.setAttribute("data-tool", tool);
    tr.setAttribute("data-seconds", "");
    var name = document.createElement("td");
    var code = document.createElement("code");
    code.textContent = tool;
    name.appendChild(code);
    tr.appendChild(name);
    cell(tr, "0", "recent");
    cell(tr, "", "last");
    cell(tr, "", "outcome");
    activity.appendChild(tr);
    return tr;
  }

  function seconds(tr) {
    var counts = {};
    (tr.getAttribute("data-seconds") || "").split(",").filter(Boolean).forEach(function (pair) {
      var kv = pair.split(":");
      counts[kv[0]] = (counts[kv[0]] || 0) + Number(kv[1] || 0);
    });
    return counts;
  }

  function store(tr, counts) {
    tr.setAttribute("data-seconds", Object.keys(counts).map(function (s) { return s + ":" + counts[s]; }).join(","));
  }

  function recount() {
    if (!activity) { return; }
    var since = Math.floor((Date.now() - WINDOW_MS) / 1000);
    Array.prototype.forEach.call(activity.children, function (tr) {
      var counts = seconds(tr), kept = {}, total = 0;
      Object.keys(counts).forEach(function (s) {
        if (Number(s) >= since) { kept[s] = counts[s]; total += counts[s]; }
      });
      store(tr, kept);
      tr.querySelector(".recent").textContent = String(total);
    });
  }

  function count(r) {
    if (!activity) { return; }
    var tr = toolRow(r.tool);
    var counts = seconds(tr), second = Math.floor(r.at_unix_ms / 1000);
    counts[second] = (counts[second] || 0) + Math.max(1, r.count || 1);
    store(tr, counts);
    tr.querySelector(".last").textContent = r.at;
    tr.querySelector(".outcome").textContent = r.outcome;
    tr.className = "active";
    recount();
  }

  function say() {
    status.textContent = paused
      ? "Paused: " + held.length + " new call(s) held; resume to show them."
      : "Live: new calls appear at the top.";
  }

  if (pause) {
    pause.hidden = false;
    pause.addEventListener("click", function () {
      paused = !paused;
      pause.textContent = paused ? "Resume" : "Pause";
      if (!paused) { held.forEach(show); held = []; }
      say();
    });
  }

  var query = "after=" + encodeURIComponent(status.getAttribute("data-after") || "0");
  ["tool", "outcome"].forEach(function (name) {
    var value = status.getAttribute("data-" + name);
    if (value) { query += "&" + name + "=" + encodeURIComponent(value); }
  });
  var source = new EventSource("/live/events?" + query);
  source.onopen = say;
  source.onerror = function () { status.textContent = "Live stream interrupted; retrying…"; };
  source.onmessage = function (e) {
    var r;
    try { r = JSON.parse(e.data); } catch (err) { return; }
    count(r);
    if (paused) { held.push(r); say(); } else { show(r); }
  };
  recount();
  window.setInterval(recount, 5000);
})();
