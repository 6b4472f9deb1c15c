// The Live page: appends each audit row the server pushes (Server-Sent
// Events) to the table. Cells are set with textContent, never as HTML.
"use strict";
(function () {
  var status = document.getElementById("live-status");
  var rows = document.getElementById("live-rows");
  if (!status || !rows || !window.EventSource) { return; }
  var after = status.getAttribute("data-after") || "0";
  var source = new EventSource("/live/events?after=" + encodeURIComponent(after));
  function cell(tr, text) {
    var td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
  }
  source.onopen = function () { status.textContent = "Live: new calls appear at the top."; };
  source.onerror = function () { status.textContent = "Live stream interrupted; retrying…"; };
  source.onmessage = function (e) {
    var r;
    try { r = JSON.parse(e.data); } catch (err) { return; }
    var tr = document.createElement("tr");
    var id = document.createElement("td");
    var link = document.createElement("a");
    link.href = "/audit/row?id=" + encodeURIComponent(r.id);
    link.textContent = String(r.id);
    id.appendChild(link);
    tr.appendChild(id);
    cell(tr, r.at);
    cell(tr, r.tool);
    cell(tr, r.subject || "-");
    cell(tr, r.client_name || r.client_id || "-");
    cell(tr, r.outcome + (r.count > 1 ? " ×" + r.count : ""));
    cell(tr, r.latency_ms + " ms");
    cell(tr, JSON.stringify(r.arguments));
    tr.className = "new";
    rows.insertBefore(tr, rows.firstChild);
    while (rows.children.length > 500) { rows.removeChild(rows.lastChild); }
  };
})();
