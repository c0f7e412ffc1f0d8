/* repromatrix page script: filters, permalinks (state in the URL hash), the cell drawer.
 * Record text is hostile: this script only ever sets textContent, never HTML. */
(function () {
  "use strict";
  var byId = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  var dataNode = byId("report-data");
  if (!dataNode) { return; }
  var data = JSON.parse(dataNode.textContent);

  /* ---------------------------------------------------------------- cell detail (drawer and repro rows) */
  function badge(status) {
    var b = el("span", "badge st-" + (data.letters[status] ? status : "unknown"));
    b.appendChild(el("b", null, data.letters[status] || "?"));
    b.appendChild(document.createTextNode(" " + status));
    return b;
  }

  function field(dl, name, value, cls) {
    if (value === undefined || value === null || value === "") { return; }
    dl.appendChild(el("dt", null, name));
    var dd = el("dd", cls || null);
    if (typeof value === "string") { dd.textContent = value; } else { dd.appendChild(value); }
    dl.appendChild(dd);
  }

  function copyButton(code) {
    var button = el("button", "d-copy", "copy command");
    button.type = "button";
    button.addEventListener("click", function () {
      function selectText() {
        var range = document.createRange();
        range.selectNodeContents(code);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        button.textContent = "selected: press Ctrl+C";
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(code.textContent).then(function () { button.textContent = "copied"; }, selectText);
      } else {
        selectText();
      }
    });
    return button;
  }

  function stagesTable(stages) {
    var table = el("table", "stages d-stages");
    var head = el("tr");
    ["stage", "status", "duration", "message"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    stages.forEach(function (s) {
      var tr = el("tr");
      tr.appendChild(el("td", null, s.name));
      tr.appendChild(el("td")).appendChild(badge(s.status));
      tr.appendChild(el("td", null, s.duration));
      var msg = el("td", "msg", s.message);
      if (s.evidence) { msg.appendChild(el("br")); msg.appendChild(el("code", null, s.evidence)); }
      tr.appendChild(msg);
      body.appendChild(tr);
    });
    return table;
  }

  function buildDetail(c) {
    var box = el("div", "detail");
    var dl = box.appendChild(el("dl", "kv d-fields"));
    var st = el("span");
    st.appendChild(badge(c.status));
    if (c.previous) { st.appendChild(el("span", "prev", " (previous run: " + c.previous + ")")); }
    field(dl, "status", st);
    if (c.expected) {
      field(dl, "expected", c.expected + (c.expected_note ? " — " + c.expected_note : "") +
            (c.contradicted ? " (contradicted)" : ""), c.contradicted ? "contra" : null);
    }
    field(dl, "stack", c.stack);
    field(dl, "repro", c.repro);
    field(dl, "signature", c.signature);
    field(dl, "workaround", c.workaround);
    field(dl, "message", c.message, "msg");
    field(dl, "duration", c.duration);
    field(dl, "exit", c.exit);
    field(dl, "image", c.image);
    field(dl, "run", (c.run_id || "") + " on " + (c.host || "?") + " (" + (c.backend || "?") + "), " +
          (c.started_at || "?") + " → " + (c.finished_at || "?"));
    if (c.conflict) { field(dl, "conflict", "conflicting records for this cell (in one run, or shards disagreeing about one environment); see results.json", "contra"); }
    if (c.stages && c.stages.length) { box.appendChild(stagesTable(c.stages)); }
    if (c.traceback) {
      box.appendChild(el("h4", null, "traceback (tail)"));
      box.appendChild(el("pre", "tb d-tb", c.traceback));
    }
    var env = data.envs[c.env] || [];
    if (env.length) {
      var det = box.appendChild(el("details", "env"));
      det.appendChild(el("summary", null, "environment probe"));
      var tbody = det.appendChild(el("table", "envtab")).appendChild(el("tbody"));
      env.forEach(function (kv) {
        var tr = tbody.appendChild(el("tr"));
        tr.appendChild(el("th", null, kv[0]));
        tr.appendChild(el("td", null, kv[1]));
      });
    }
    box.appendChild(el("h4", null, "reproduce"));
    var code = box.appendChild(el("pre", "cmd")).appendChild(el("code", "d-cmd", c.command || ""));
    box.appendChild(copyButton(code));
    return box;
  }

  /* ---------------------------------------------------------------- repro pages */
  function fillSlot(det) {
    var slot = det.querySelector(".slot");
    var c = data.cells[det.getAttribute("data-cell")];
    if (slot && c && !slot.childNodes.length) { slot.appendChild(buildDetail(c)); }
  }

  function openHashTarget() {
    var id = location.hash.slice(1);
    if (!id) { return; }
    var row = byId(id);
    if (!row) { try { row = byId(decodeURIComponent(id)); } catch (e) { row = null; } }
    var det = row ? row.querySelector("details.cell-detail") : null;
    if (det) {
      det.open = true;
      fillSlot(det);
      row.scrollIntoView({block: "center"});
    }
  }

  if (!byId("matrix")) {
    document.addEventListener("toggle", function (ev) {
      if (ev.target.matches && ev.target.matches("details.cell-detail") && ev.target.open) { fillSlot(ev.target); }
    }, true);
    window.addEventListener("hashchange", openHashTarget);
    openHashTarget();
    return;
  }

  /* ---------------------------------------------------------------- the matrix page */
  var form = byId("filters");
  var statusBoxes = Array.prototype.slice.call(form.querySelectorAll("input[name=status]"));
  var allStatuses = statusBoxes.map(function (b) { return b.value; });
  var reproSelect = byId("f-repro");
  var textInput = byId("f-q");
  var contraBox = byId("f-contra");
  var headers = Array.prototype.slice.call(document.querySelectorAll("#matrix thead th.repro"));
  var rows = Array.prototype.slice.call(document.querySelectorAll("#matrix tbody tr")).map(function (tr) {
    var head = tr.querySelector("th.stack");
    return {tr: tr, text: head.textContent.toLowerCase(),
            tds: Array.prototype.slice.call(tr.querySelectorAll("td.cell"))};
  });
  var tdById = new Map();
  rows.forEach(function (r) {
    r.tds.forEach(function (td) {
      var id = td.getAttribute("data-cell");
      if (id !== null) { tdById.set(id, td); }
    });
  });
  var selected = null;

  function readState() {
    var p = new URLSearchParams(location.hash.slice(1));
    var st = p.get("status");
    return {
      status: st === null ? allStatuses.slice() : st.split(",").filter(function (s) { return allStatuses.indexOf(s) >= 0; }),
      repro: p.get("repro") || "",
      q: p.get("q") || "",
      contra: p.get("contra") === "1",
      cell: p.get("cell")
    };
  }

  function writeState(state) {
    var p = new URLSearchParams();
    if (state.status.length !== allStatuses.length) { p.set("status", state.status.join(",")); }
    if (state.repro) { p.set("repro", state.repro); }
    if (state.q) { p.set("q", state.q); }
    if (state.contra) { p.set("contra", "1"); }
    if (state.cell) { p.set("cell", state.cell); }
    var hash = p.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  function formState() {
    return {
      status: statusBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; }),
      repro: reproSelect.value,
      q: textInput.value.trim(),
      contra: contraBox.checked,
      cell: selected
    };
  }

  function showState(state) {
    statusBoxes.forEach(function (b) { b.checked = state.status.indexOf(b.value) >= 0; });
    var known = Array.prototype.some.call(reproSelect.options, function (o) { return o.value === state.repro; });
    reproSelect.value = known ? state.repro : "";
    textInput.value = state.q;
    contraBox.checked = state.contra;
  }

  function applyFilters(state) {
    var wanted = new Set(state.status);
    var unfiltered = wanted.size === allStatuses.length && !state.contra;
    var q = state.q.toLowerCase();
    var shown = 0;
    headers.forEach(function (th) {
      th.classList.toggle("col-off", !!state.repro && th.getAttribute("data-repro") !== state.repro);
    });
    rows.forEach(function (row) {
      var rowMatches = !q || row.text.indexOf(q) >= 0;
      var any = false;
      row.tds.forEach(function (td) {
        var colOff = !!state.repro && td.getAttribute("data-repro") !== state.repro;
        td.classList.toggle("col-off", colOff);
        var status = td.getAttribute("data-status");
        var visible;
        if (!status) {
          visible = unfiltered && rowMatches;
        } else {
          var c = data.cells[td.getAttribute("data-cell")] || {};
          visible = wanted.has(status) && (!state.contra || !!c.contradicted) &&
                    (rowMatches || (c.q || "").indexOf(q) >= 0);
          if (visible && !colOff) { any = true; shown += 1; }
        }
        td.classList.toggle("off", !visible);
      });
      row.tr.classList.toggle("row-off", !any);
    });
    byId("shown").textContent = shown + " of " + tdById.size + " cells";
  }

  /* ---------------------------------------------------------------- the drawer */
  function fillDrawer(c) {
    byId("d-title").textContent = c.id;
    byId("d-permalink").setAttribute("href", "#cell=" + encodeURIComponent(c.id));
    byId("d-repro").setAttribute("href", (data.pages[c.repro] || "index.html") + "#c-" + encodeURIComponent(c.id));
    var body = byId("d-body");
    body.textContent = "";
    body.appendChild(buildDetail(c));
  }

  function openCell(id) {
    if (selected && tdById.has(selected)) { tdById.get(selected).classList.remove("selected"); }
    var c = id ? data.cells[id] : null;
    selected = c ? id : null;
    var drawer = byId("drawer");
    if (!c) { drawer.hidden = true; return; }
    fillDrawer(c);
    drawer.hidden = false;
    var td = tdById.get(id);
    if (td) { td.classList.add("selected"); td.scrollIntoView({block: "nearest", inline: "nearest"}); }
  }

  function update() {
    var state = formState();
    writeState(state);
    applyFilters(state);
  }

  function fromHash() {
    var state = readState();
    showState(state);
    applyFilters(state);
    openCell(state.cell);
  }

  form.addEventListener("submit", function (ev) { ev.preventDefault(); });
  form.addEventListener("change", update);
  textInput.addEventListener("input", update);
  byId("f-reset").addEventListener("click", function () {
    showState({status: allStatuses.slice(), repro: "", q: "", contra: false});
    update();
  });
  byId("matrix").addEventListener("click", function (ev) {
    var td = ev.target.closest ? ev.target.closest("td.cell[data-cell]") : null;
    if (!td) { return; }
    ev.preventDefault();
    openCell(td.getAttribute("data-cell"));
    update();
  });
  byId("changes").addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a.permalink[data-cell]") : null;
    if (!a) { return; }
    ev.preventDefault();
    openCell(a.getAttribute("data-cell"));
    update();
  });
  byId("d-close").addEventListener("click", function () { openCell(null); update(); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && selected) { openCell(null); update(); }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
}());
