/* repromatrix page script: filters, stage colouring, permalinks (state in the URL hash),
 * keyboard navigation, the cell drawer and the stack advisor.
 * Cell details live in data chunks (data/c<N>.js, deflated JSON) loaded on demand as
 * scripts, so the page works from file://. Record text is hostile: this script only ever sets
 * textContent, never HTML, and keeps records in Maps (no record string is an object key). */
(function () {
  "use strict";
  var byId = function (id) { return document.getElementById(id); };
  var slice = function (list) { return Array.prototype.slice.call(list); };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  /* ------------------------------------------------- the known bugs' table, by kind */
  var kindSelect = byId("bugs-kind");
  if (kindSelect) {
    kindSelect.addEventListener("change", function () {
      var want = kindSelect.value;
      var rows = slice(document.querySelectorAll("#bugs-table tbody tr[data-kind]"));
      var shown = 0;
      rows.forEach(function (tr) {
        var on = !want || tr.getAttribute("data-kind") === want;
        tr.hidden = !on;
        shown += on ? 1 : 0;
      });
      byId("bugs-shown").textContent = shown + " of " + rows.length + " bugs";
    });
  }

  var dataNode = byId("report-data");
  if (!dataNode) { return; }
  var data = JSON.parse(dataNode.textContent);
  var byLetter = {};
  Object.keys(data.letters).forEach(function (s) { byLetter[data.letters[s]] = s; });

  /* ---------------------------------------------------------------- data chunks */
  var chunks = new Map();
  var waiting = new Map();

  function settle(number, cells) {
    if (cells) chunks.set(number, cells);
    (waiting.get(number) || []).forEach(function (fn) { fn(cells); });
    waiting.delete(number);
  }

  /* A chunk's JSON comes deflated (zlib) as one base64 string. */
  function inflate(packed) {
    var raw = atob(packed), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text();
  }

  window.repromatrixChunk = function (number, packed) {
    var read;
    try { read = inflate(packed); } catch (e) { settle(number, null); return; }
    read.then(function (text) {
      var payload = JSON.parse(text), cells = new Map();
      payload.cells.forEach(function (pair) {
        var c = pair[1];
        c.envRows = payload.envs[c.env] || [];
        cells.set(pair[0], c);
      });
      settle(number, cells);
    }).catch(function () { settle(number, null); });
  };

  function withChunk(number, fn) {
    if (chunks.has(number)) { fn(chunks.get(number)); return; }
    if (waiting.has(number)) { waiting.get(number).push(fn); return; }
    waiting.set(number, [fn]);
    var script = document.createElement("script");
    script.src = data.data + "/c" + number + ".js";
    script.onerror = function () { settle(number, null); };
    document.head.appendChild(script);
  }

  function withCell(id, number, fn) {
    var k = parseInt(number, 10);
    if (isNaN(k)) { fn(null); return; }
    withChunk(k, function (cells) { fn(cells ? cells.get(id) || null : null); });
  }

  /* ---------------------------------------------------------------- cell detail (drawer and repro rows) */
  function badge(status) {
    var known = Object.prototype.hasOwnProperty.call(data.letters, status);
    var b = el("span", "badge st-" + (known ? status : "unknown"));
    b.appendChild(el("b", null, known ? data.letters[status] : "?"));
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

  function table(cls, headings) {
    var t = el("table", cls);
    var head = el("tr");
    headings.forEach(function (h) { head.appendChild(el("th", null, h)); });
    t.appendChild(el("thead")).appendChild(head);
    return {table: t, body: t.appendChild(el("tbody"))};
  }

  function stagesTable(stages) {
    var t = table("stages d-stages", ["stage", "role", "status", "duration", "message"]);
    stages.forEach(function (s) {
      var tr = t.body.appendChild(el("tr", "role-" + (s.role === "workaround" || s.role === "info" ? s.role : "main")));
      tr.appendChild(el("td", null, s.name));
      tr.appendChild(el("td", "role", s.role));
      tr.appendChild(el("td")).appendChild(badge(s.status));
      tr.appendChild(el("td", null, s.duration));
      var msg = el("td", "msg", s.message);
      if (s.standins) { msg.appendChild(el("br")); msg.appendChild(el("span", "standin-flag", "◇ stood in: " + s.standins)); }
      if (s.evidence) { msg.appendChild(el("br")); msg.appendChild(el("code", null, s.evidence)); }
      tr.appendChild(msg);
    });
    return t.table;
  }

  function timeline(c) {
    var box = el("div", "history");
    box.appendChild(el("h4", null, "history (status changes, newest first)"));
    var list = box.appendChild(el("ol", "timeline d-history"));
    (c.history || []).slice().reverse().forEach(function (h) {
      var li = list.appendChild(el("li"));
      li.appendChild(badge(h[0]));
      if (h[6] === "standin") { li.appendChild(el("span", "standin-flag", " ◇ TensorRT stood in")); }
      var span = h[5] === 1 ? " in run " + h[1] + " (" + h[2] + ")"
        : " in " + h[5] + " runs, from " + h[1] + " (" + h[2] + ") to " + h[3] + " (" + h[4] + ")";
      li.appendChild(el("span", "when", span));
    });
    if (c.history_dropped) { box.appendChild(el("p", "muted", c.history_dropped + " older change(s) not shown; results.json.gz has every record")); }
    return box;
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
    if (c.untold) { field(dl, c.status === "error" ? "not the bug" : "cannot tell", c.untold, "untold"); }
    if (c.standin) { field(dl, "evidence", "◇ " + c.standin + " (no GPU; a record from real TensorRT outranks it)", "standin-flag"); }
    field(dl, "stack", c.stack + (c.scope && c.scope !== "published" ? " (" + c.scope + ")" : ""));
    field(dl, "repro", c.repro);
    field(dl, "signature", c.signature);
    field(dl, "workaround", c.workaround);
    field(dl, "message", c.message, "msg");
    field(dl, "duration", c.duration);
    field(dl, "exit", c.exit);
    field(dl, "image", c.image);
    field(dl, "built", c.built);
    field(dl, "run", (c.run_id || "") + " on " + (c.host || "?") + " (" + (c.backend || "?") + "), " +
          (c.started_at || "?") + " → " + (c.finished_at || "?"));
    if (c.flaky) { field(dl, "flaky", "the run's attempts disagree (" + c.flaky + "): cannot tell", "contra"); }
    if (c.conflict) { field(dl, "conflict", "conflicting records for this cell (in one run, or shards disagreeing about one environment); see results.json.gz", "contra"); }
    if (c.stages && c.stages.length) { box.appendChild(stagesTable(c.stages)); }
    if (c.history && c.history.length) { box.appendChild(timeline(c)); }
    if (c.traceback) {
      box.appendChild(el("h4", null, "traceback (tail)"));
      box.appendChild(el("pre", "tb d-tb", c.traceback));
    }
    if (c.envRows.length) {
      var det = box.appendChild(el("details", "env"));
      det.appendChild(el("summary", null, "environment probe"));
      var tbody = det.appendChild(el("table", "envtab")).appendChild(el("tbody"));
      c.envRows.forEach(function (kv) {
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

  function missing() { return el("p", "contra d-missing", "The details of this cell could not be loaded (data/ missing?)."); }

  /* ---------------------------------------------------------------- repro pages */
  function fillSlot(det) {
    var slot = det.querySelector(".slot");
    var row = det.closest("tr");
    if (!slot || slot.childNodes.length || !row) { return; }
    withCell(det.getAttribute("data-cell"), row.getAttribute("data-k"), function (c) {
      if (!slot.childNodes.length) { slot.appendChild(c ? buildDetail(c) : missing()); }
    });
  }

  function openHashTarget() {
    var id = location.hash.slice(1);
    if (!id) { return; }
    var row = byId(id);
    if (!row) { try { row = byId(decodeURIComponent(id)); } catch (e) { row = null; } }
    var det = row ? row.querySelector("details.cell-detail") : null;
    if (det) {
      row.classList.remove("scope-off");
      det.open = true;
      fillSlot(det);
      row.scrollIntoView({block: "center"});
    }
  }

  if (!byId("matrix")) {
    document.addEventListener("toggle", function (ev) {
      if (ev.target.matches && ev.target.matches("details.cell-detail") && ev.target.open) { fillSlot(ev.target); }
    }, true);
    var scopeToggle = byId("show-scope-off");
    if (scopeToggle) {
      scopeToggle.addEventListener("change", function () {
        document.body.classList.toggle("show-scope-off", scopeToggle.checked);
      });
    }
    window.addEventListener("hashchange", openHashTarget);
    openHashTarget();
    return;
  }

  /* ---------------------------------------------------------------- the matrix page */
  var form = byId("filters");
  var statusBoxes = slice(form.querySelectorAll("input[name=status]"));
  var allStatuses = statusBoxes.map(function (b) { return b.value; });
  var reproSelect = byId("f-repro");
  var stageSelect = byId("f-stage");
  var scopeSelect = byId("f-scope");
  var defaultScope = scopeSelect.getAttribute("data-default") || "all";
  var textInput = byId("f-q");
  var contraBox = byId("f-contra");
  var compactBox = byId("f-compact");
  /* columns and rows the page folded (report.fold: no stack here could tell), shown on demand */
  var unfoldBox = byId("f-unfold");
  var folded = slice(document.querySelectorAll("#folds li[data-repro]")).map(function (li) { return li.getAttribute("data-repro"); });
  var headers = slice(document.querySelectorAll("#matrix thead [data-repro]"));
  var groupRows = slice(document.querySelectorAll("#matrix tbody tr.group"));
  var rows = slice(document.querySelectorAll("#matrix tbody tr[data-stack]")).map(function (tr) {
    return {tr: tr, text: tr.querySelector("th.stack").textContent.toLowerCase(),
            scope: tr.getAttribute("data-scope"), group: tr.getAttribute("data-group"),
            rank: parseInt(tr.getAttribute("data-rank"), 10) || 0,
            label: tr.querySelector("th.stack .sid").textContent,
            tds: slice(tr.querySelectorAll("td.cell"))};
  });
  var tdById = new Map();
  var titles = new Map();
  var links = [];
  rows.forEach(function (r) {
    r.tds.forEach(function (td) {
      var id = td.getAttribute("data-cell");
      if (id === null) { return; }
      tdById.set(id, td);
      var a = td.querySelector("a");
      titles.set(td, (a.getAttribute("title") || "").toLowerCase());
      a.tabIndex = -1;
      links.push(a);
    });
  });
  if (links.length) { links[0].tabIndex = 0; }
  var selected = null;
  var opener = null;

  function readState() {
    var p = new URLSearchParams(location.hash.slice(1));
    var st = p.get("status");
    var scope = p.get("scope");
    return {
      status: st === null ? allStatuses.slice() : st.split(",").filter(function (s) { return allStatuses.indexOf(s) >= 0; }),
      repro: p.get("repro") || "",
      q: p.get("q") || "",
      contra: p.get("contra") === "1",
      compact: p.get("compact") === "1",
      unfold: p.get("unfold") === "1",
      stage: p.get("stage") || "",
      scope: scope === null ? defaultScope : scope,
      bugs: (p.get("bugs") || "").split(",").filter(function (b) { return b; }),
      cell: p.get("cell")
    };
  }

  function writeState(state) {
    var p = new URLSearchParams();
    if (state.status.length !== allStatuses.length) { p.set("status", state.status.join(",")); }
    if (state.repro) { p.set("repro", state.repro); }
    if (state.q) { p.set("q", state.q); }
    if (state.contra) { p.set("contra", "1"); }
    if (state.compact) { p.set("compact", "1"); }
    if (state.unfold) { p.set("unfold", "1"); }
    if (state.stage) { p.set("stage", state.stage); }
    if (state.scope !== defaultScope) { p.set("scope", state.scope); }
    if (state.bugs && state.bugs.length) { p.set("bugs", state.bugs.join(",")); }
    if (state.cell) { p.set("cell", state.cell); }
    var hash = p.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  function stageName() {
    var i = stageSelect.value;
    return i === "" ? "" : data.stages[parseInt(i, 10)] || "";
  }

  function formState() {
    return {
      status: statusBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; }),
      repro: reproSelect.value, q: textInput.value.trim(), contra: contraBox.checked,
      compact: compactBox.checked, unfold: unfoldBox.checked, stage: stageName(), scope: scopeSelect.value, bugs: pickedBugs(),
      cell: selected
    };
  }

  /* the bugs ticked in "Which stack should I use?" (kept in the URL like the filters) */
  function pickedBugs() {
    return slice(document.querySelectorAll("#advisor input[name=bug]:checked")).map(function (b) { return b.value; });
  }

  function selectValue(select, value, fallback) {
    var known = slice(select.options).some(function (o) { return o.value === value; });
    select.value = known ? value : fallback;
  }

  function showState(state) {
    statusBoxes.forEach(function (b) { b.checked = state.status.indexOf(b.value) >= 0; });
    selectValue(reproSelect, state.repro, "");
    selectValue(stageSelect, String(data.stages.indexOf(state.stage)), "");
    selectValue(scopeSelect, state.scope, defaultScope);
    textInput.value = state.q;
    contraBox.checked = state.contra;
    compactBox.checked = state.compact;
    unfoldBox.checked = !!state.unfold;
    if (state.bugs) {
      slice(document.querySelectorAll("#advisor input[name=bug]")).forEach(function (b) {
        b.checked = state.bugs.indexOf(b.value) >= 0;
      });
    }
  }

  /* colour every cell by one stage's status (letter and class change together: never colour alone) */
  function colourByStage(index) {
    var name = index >= 0 ? data.stages[index] : "";
    document.body.classList.toggle("stage-mode", index >= 0);
    tdById.forEach(function (td, id) {
      var shown = td.getAttribute("data-shown") || td.getAttribute("data-status");
      var want = td.getAttribute("data-status");
      var a = td.querySelector("a");
      if (index >= 0) {
        want = "none";
        (td.getAttribute("data-sg") || "").split(".").forEach(function (code) {
          if (code && parseInt(code, 10) === index) { want = byLetter[code.slice(-1)] || "none"; }
        });
        a.setAttribute("aria-label", id + ": stage " + name + " " + (want === "none" ? "not run" : want));
      } else {
        a.removeAttribute("aria-label");
      }
      if (shown !== want) {
        td.classList.remove("st-" + shown);
        td.classList.add("st-" + want);
        td.setAttribute("data-shown", want);
        a.querySelector(".l").textContent = want === "none" ? "–" : data.letters[want];
      }
    });
  }

  function applyFilters(state) {
    var wanted = new Set(state.status);
    var unfiltered = wanted.size === allStatuses.length && !state.contra;
    var q = state.q.toLowerCase();
    var shown = 0;
    var total = 0;
    var counts = {};
    var groupsOn = new Set();
    document.body.classList.toggle("compact", state.compact);
    byId("matrix").classList.toggle("unfold", !!state.unfold || folded.indexOf(state.repro) >= 0);
    colourByStage(state.stage ? data.stages.indexOf(state.stage) : -1);
    headers.forEach(function (th) {
      th.classList.toggle("col-off", !!state.repro && th.getAttribute("data-repro") !== state.repro);
    });
    rows.forEach(function (row) {
      var inScope = state.scope === "all" || row.scope === state.scope;
      var rowMatches = !q || row.text.indexOf(q) >= 0;
      var any = false;
      row.tr.classList.toggle("scope-off", !inScope);
      row.tds.forEach(function (td) {
        var colOff = !!state.repro && td.getAttribute("data-repro") !== state.repro;
        td.classList.toggle("col-off", colOff);
        var status = td.getAttribute("data-status");
        var visible;
        if (!status) {
          visible = unfiltered && rowMatches;
        } else {
          visible = wanted.has(status) && (!state.contra || td.classList.contains("contra")) &&
                    (rowMatches || titles.get(td).indexOf(q) >= 0);
          if (inScope) { total += 1; counts[status] = (counts[status] || 0) + 1; }
          if (visible && !colOff && inScope) { any = true; shown += 1; }
        }
        td.classList.toggle("off", !visible);
      });
      row.tr.classList.toggle("row-off", !any);
      if (any && inScope) { groupsOn.add(row.group); }
    });
    groupRows.forEach(function (g) { g.classList.toggle("row-off", !groupsOn.has(g.getAttribute("data-group"))); });
    byId("shown").textContent = shown + " of " + total + " cells";
    statusBoxes.forEach(function (b) {  /* the counts are of the stacks in view, as the grid */
      var count = b.parentNode.querySelector(".count");
      if (count) { count.textContent = String(counts[b.value] || 0); }
    });
    keepTabStop();
  }

  /* the grid's one tab stop stays on a cell in view (a fold or a filter may hide it) */
  function keepTabStop() {
    var current = links.filter(function (l) { return l.tabIndex === 0; })[0];
    if (current && visibleLink(current.parentNode)) { return; }
    for (var i = 0; i < links.length; i++) {
      if (visibleLink(links[i].parentNode)) {
        if (current) { current.tabIndex = -1; }
        links[i].tabIndex = 0;
        return;
      }
    }
  }

  /* ---------------------------------------------------------------- the drawer */
  function fillDrawer(id, c) {
    byId("d-title").textContent = id;
    byId("d-permalink").setAttribute("href", "#cell=" + encodeURIComponent(id));
    var td = tdById.get(id);
    var repro = td ? td.getAttribute("data-repro") : c && c.repro;
    var page = data.pages && Object.prototype.hasOwnProperty.call(data.pages, repro) ? data.pages[repro] : "index.html";
    byId("d-repro").setAttribute("href", page + "#c-" + encodeURIComponent(id));
    var body = byId("d-body");
    body.textContent = "";
    body.appendChild(c ? buildDetail(c) : missing());
  }

  function openCell(id, focus) {
    if (selected && tdById.has(selected)) { tdById.get(selected).classList.remove("selected"); }
    var td = id ? tdById.get(id) : null;
    var drawer = byId("drawer");
    selected = td ? id : null;
    if (!td) {
      drawer.hidden = true;
      if (opener && focus) { opener.focus(); }
      return;
    }
    td.classList.add("selected");
    td.scrollIntoView({block: "nearest", inline: "nearest"});
    withCell(id, td.getAttribute("data-k"), function (c) {
      if (selected !== id) { return; }
      fillDrawer(id, c);
      drawer.hidden = false;
      if (focus) { byId("d-title").focus(); }
    });
  }

  function update() {
    var state = formState();
    writeState(state);
    applyFilters(state);
    advise();
  }

  function fromHash() {
    var state = readState();
    showState(state);
    applyFilters(state);
    openCell(state.cell, false);
    advise();
  }

  /* ---------------------------------------------------------------- keyboard: arrows move in the grid */
  function visibleLink(td) {
    if (!td || td.classList.contains("off") || td.classList.contains("col-off")) { return null; }
    if (!td.getClientRects().length) { return null; }  /* folded (report.fold) */
    var tr = td.parentNode;
    if (tr.classList.contains("row-off") || tr.classList.contains("scope-off")) { return null; }
    return td.querySelector("a");
  }

  function moveFrom(td, key) {
    var tr = td.parentNode;
    var col = td.cellIndex;
    var next = null;
    if (key === "ArrowLeft" || key === "ArrowRight" || key === "Home" || key === "End") {
      var cells = slice(tr.cells).filter(function (c) { return c.tagName === "TD" && visibleLink(c); });
      var at = cells.indexOf(td);
      var to = key === "Home" ? 0 : key === "End" ? cells.length - 1 : at + (key === "ArrowLeft" ? -1 : 1);
      next = cells[to] || null;
    } else {
      var step = key === "ArrowUp" ? -1 : 1;
      var i = rows.findIndex(function (r) { return r.tr === tr; }) + step;
      for (; i >= 0 && i < rows.length && !next; i += step) {
        var cand = rows[i].tr.cells[col];
        if (visibleLink(cand)) { next = cand; }
      }
    }
    return next ? next.querySelector("a") : null;
  }

  function focusLink(a) {
    links.forEach(function (l) { if (l.tabIndex === 0) { l.tabIndex = -1; } });
    a.tabIndex = 0;
    a.focus();
  }

  byId("matrix").addEventListener("keydown", function (ev) {
    var td = ev.target.closest ? ev.target.closest("td.cell[data-cell]") : null;
    if (!td || ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"].indexOf(ev.key) < 0) { return; }
    var a = moveFrom(td, ev.key);
    ev.preventDefault();
    if (a) { focusLink(a); }
  });

  byId("matrix").addEventListener("focusin", function (ev) {
    var a = ev.target.closest ? ev.target.closest("td.cell[data-cell] a") : null;
    if (a && a.tabIndex !== 0) { focusLink(a); }
  });

  /* ---------------------------------------------------------------- which stack should I use? */
  function advise() {
    var picked = pickedBugs();
    var out = byId("advice");
    out.textContent = "";
    if (!picked.length) { out.appendChild(el("p", "none", "Pick one or more bugs.")); return; }
    var scope = scopeSelect.value;
    var clear = [], workaround = [], unknown = 0;
    rows.slice().sort(function (a, b) { return b.rank - a.rank; }).forEach(function (row) {
      if (scope !== "all" && row.scope !== scope) { return; }
      var verdict = "clear";
      picked.forEach(function (repro) {
        /* data-v: what the cell's record says of its bug (rules.verdict: bad, good, cannot tell) */
        var td = row.tds.filter(function (t) { return t.getAttribute("data-repro") === repro; })[0];
        var said = td ? td.getAttribute("data-v") : "";
        if (said === "good" || verdict === "bad") { return; }
        if (said === "bad" && td.getAttribute("data-w") === "pass") {
          if (verdict === "clear") { verdict = "workaround"; }
        } else if (said === "bad") {
          verdict = "bad";
        } else if (verdict !== "bad") {
          verdict = "unknown";
        }
      });
      if (verdict === "clear") { clear.push(row); }
      if (verdict === "workaround") { workaround.push(row); }
      if (verdict === "unknown") { unknown += 1; }
    });
    function list(title, items, cls) {
      out.appendChild(el("h3", null, title + " (" + items.length + ")"));
      if (!items.length) { out.appendChild(el("p", "none", "none")); return; }
      var ul = out.appendChild(el("ul", cls));
      items.slice(0, 5).forEach(function (row) {
        var li = ul.appendChild(el("li"));
        var a = li.appendChild(el("a", null, row.label));
        a.setAttribute("href", "#q=" + encodeURIComponent(row.tr.getAttribute("data-stack")) +
                       "&bugs=" + encodeURIComponent(picked.join(",")));
        li.appendChild(el("small", "ver", " " + row.tr.getAttribute("data-stack")));
      });
      if (items.length > 5) { out.appendChild(el("p", "muted", (items.length - 5) + " older")); }
    }
    list("Newest stacks where none of them reproduces", clear, "advice-clear");
    list("Newest stacks where they reproduce but the workaround works", workaround, "advice-workaround");
    if (unknown) { out.appendChild(el("p", "muted", unknown + " stack(s) cannot tell (skipped, errors or no result) for at least one of them.")); }
  }

  /* ---------------------------------------------------------------- wiring */
  form.addEventListener("submit", function (ev) { ev.preventDefault(); });
  form.addEventListener("change", update);
  textInput.addEventListener("input", update);
  byId("advisor").addEventListener("change", update);
  byId("f-reset").addEventListener("click", function () {
    showState({status: allStatuses.slice(), repro: "", q: "", contra: false, compact: false, stage: "",
               scope: defaultScope, unfold: false});
    update();
  });
  byId("matrix").addEventListener("click", function (ev) {
    var td = ev.target.closest ? ev.target.closest("td.cell[data-cell]") : null;
    if (!td) { return; }
    ev.preventDefault();
    opener = td.querySelector("a");
    openCell(td.getAttribute("data-cell"), true);
    update();
  });
  byId("changes").addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a.permalink[data-cell]") : null;
    if (!a) { return; }
    ev.preventDefault();
    opener = a;
    openCell(a.getAttribute("data-cell"), true);
    update();
  });
  byId("d-close").addEventListener("click", function () { openCell(null, true); update(); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && selected) { openCell(null, true); update(); }
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
}());
