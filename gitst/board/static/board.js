// git st board: renders /api/state. Every text from the plan or a clone is untrusted: it is
// only ever set with textContent or setAttribute (never innerHTML), and the server's CSP
// forbids inline and foreign scripts besides.
"use strict";
(function () {
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const POLL_MS = 500;
  const PAGE = 100; // cards shown per column before "show more"
  const GRAPH_PAGE = 150; // nodes per page of the graph
  const COLUMNS = [
    ["ready", "Ready"], ["in_progress", "In progress"], ["blocked", "Blocked"], ["done", "Done"],
    ["parked", "Deferred / canceled"],
  ];
  let state = null;
  let etag = null;
  let view = "columns";
  let shown = {}; // column -> cards shown
  let graphPage = 0;
  let detailId = null;

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  function api(path) {
    const sep = path.includes("?") ? "&" : "?";
    return path + sep + "token=" + encodeURIComponent(TOKEN);
  }
  function ago(stamp) {
    if (!stamp) return "-";
    const seconds = Math.round((Date.now() - Date.parse(stamp)) / 1000);
    if (Number.isNaN(seconds)) return "-";
    if (seconds < 0) return "in " + (-seconds) + "s";
    if (seconds < 120) return seconds + "s ago";
    if (seconds < 7200) return Math.round(seconds / 60) + "m ago";
    return Math.round(seconds / 3600) + "h ago";
  }
  function age(stamp) {
    return el("span", { class: "age", "data-ts": stamp || "" }, ago(stamp));
  }
  function table(headers, rows) {
    const t = el("table");
    const head = el("tr");
    for (const h of headers) head.append(el("th", {}, h));
    t.append(head);
    for (const row of rows) {
      const tr = el("tr");
      for (const cell of row) {
        const td = el("td");
        if (cell instanceof Node) td.append(cell); else td.textContent = cell === null || cell === undefined ? "-" : String(cell);
        tr.append(td);
      }
      t.append(tr);
    }
    return t;
  }

  // --- columns -------------------------------------------------------------------------------
  function card(item) {
    const c = el("div", { class: "card " + item.column, "data-id": item.id, "data-status": item.status });
    c.append(el("div", { class: "id" }, item.id + " · " + item.status));
    c.append(el("div", { class: "title" }, item.step || ""));
    if (item.holder) {
      const where = item.holder.where && item.holder.where !== "here" ? " on " + item.holder.where : "";
      c.append(el("div", { class: "holder" }, "held by " + item.holder.session + where + " (" + item.holder.state + ")"));
    }
    const meta = [];
    if (item.branch) meta.push("branch " + item.branch);
    if (item.pr) meta.push("PR #" + item.pr);
    if (item.waiting_on && item.waiting_on.length) meta.push("waits on " + item.waiting_on.join(", "));
    if (meta.length) c.append(el("div", { class: "meta" }, meta.join(" · ")));
    return c;
  }
  function renderColumns() {
    const root = document.getElementById("columns");
    const by = {};
    for (const [key] of COLUMNS) by[key] = [];
    for (const item of state.plan.items) (by[item.column] || by.parked).push(item);
    const out = [];
    for (const [key, title] of COLUMNS) {
      const col = el("div", { class: "column", "data-column": key });
      col.append(el("h2", {}, title + " (" + by[key].length + ")"));
      const limit = shown[key] || PAGE;
      for (const item of by[key].slice(0, limit)) col.append(card(item));
      if (by[key].length > limit) {
        const more = el("button", { type: "button", class: "more" }, "show " + Math.min(PAGE * 5, by[key].length - limit) + " more of " + (by[key].length - limit));
        more.addEventListener("click", () => { shown[key] = limit + PAGE * 5; renderColumns(); });
        col.append(more);
      }
      out.push(col);
    }
    root.replaceChildren(...out);
  }

  // --- graph ---------------------------------------------------------------------------------
  function renderGraph() {
    const hide = document.getElementById("graph-hide-done").checked;
    const items = state.plan.items.filter((i) => !hide || (i.column !== "done" && i.column !== "parked"));
    const pages = Math.max(1, Math.ceil(items.length / GRAPH_PAGE));
    graphPage = Math.min(graphPage, pages - 1);
    const page = items.slice(graphPage * GRAPH_PAGE, (graphPage + 1) * GRAPH_PAGE);
    document.getElementById("graph-page").textContent =
      "page " + (graphPage + 1) + " of " + pages + " (" + items.length + " items" + (hide ? ", done and parked hidden" : "") + ")";
    const index = new Map(page.map((item) => [item.id, item]));
    const depth = new Map();
    function depthOf(item, seen) {
      if (depth.has(item.id)) return depth.get(item.id);
      if (seen.has(item.id)) return 0; // a cycle (doctor reports it): cut here
      seen.add(item.id);
      let d = 0;
      for (const dep of item.deps) if (index.has(dep)) d = Math.max(d, depthOf(index.get(dep), seen) + 1);
      depth.set(item.id, d);
      return d;
    }
    const rows = [];
    const pos = new Map();
    for (const item of page) {
      const d = depthOf(item, new Set());
      rows[d] = (rows[d] || 0) + 1;
      pos.set(item.id, [d, rows[d] - 1]);
    }
    const W = 190, H = 34, NW = 170, NH = 26;
    const width = Math.max(1, rows.length) * W + 20, height = Math.max(1, ...rows.map((n) => n || 0)) * H + 20;
    const root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height });
    const at = (id) => { const [d, r] = pos.get(id); return [10 + d * W, 10 + r * H]; };
    for (const item of page) {
      const [x, y] = at(item.id);
      for (const dep of item.deps) {
        if (!index.has(dep)) continue;
        const [dx, dy] = at(dep);
        root.append(svg("path", { class: "edge", d: "M" + (dx + NW) + "," + (dy + NH / 2) + " C" + (dx + NW + 15) + "," + (dy + NH / 2) + " " + (x - 15) + "," + (y + NH / 2) + " " + x + "," + (y + NH / 2) }));
      }
    }
    for (const item of page) {
      const [x, y] = at(item.id);
      const g = svg("g", { class: "node " + item.column, "data-id": item.id, transform: "translate(" + x + "," + y + ")" });
      g.append(svg("rect", { width: NW, height: NH, rx: 4 }));
      const label = item.id + " " + (item.step || "");
      g.append(svg("text", { x: 6, y: 17 }, label.length > 28 ? label.slice(0, 27) + "…" : label));
      g.append(svg("title", {}, label + " (" + item.status + ")"));
      g.addEventListener("click", () => openItem(item.id));
      root.append(g);
    }
    document.getElementById("graph").replaceChildren(root);
  }

  // --- sessions, remote claims, reservations, worktrees ----------------------------------------
  function stateCell(value) {
    return el("span", { class: "state-" + value }, value);
  }
  function renderSessions() {
    const rows = [];
    for (const s of state.sessions) {
      const holds = s.holds.map((h) => (h.issue ? "issue " + h.issue : "lock " + h.lock) + " (" + h.lease.state + (h.lease.token ? ", token " + h.lease.token : "") + ")");
      rows.push([s.session + (s.record ? "" : " (lock only)"), stateCell(s.state), s.pid, s.process, s.host, s.actor, age(s.heartbeat_at), holds.join("; ") || "-"]);
    }
    const sessions = document.getElementById("sessions");
    sessions.replaceChildren(rows.length ? table(["session", "state", "pid", "process", "host", "actor", "heartbeat", "holds"], rows) : el("p", { class: "muted" }, "no sessions"));
    const remote = document.getElementById("remote");
    if (!state.remote) remote.replaceChildren(el("p", { class: "muted" }, "no st.remote configured: claims are local only"));
    else if (state.remote.error) remote.replaceChildren(el("p", {}, state.remote.name + ": " + state.remote.error));
    else remote.replaceChildren(table(["issue", "state", "session", "host", "token", "branch", "renewed"],
      state.remote.claims.map((c) => [c.issue, stateCell(c.state), c.session, c.host, c.token, c.branch, age(c.renewed_at)])));
    const res = state.reservations || { available: false, items: [] };
    const reservations = document.getElementById("reservations");
    if (!res.available) reservations.replaceChildren(el("p", { class: "muted" }, "path reservations (git st reserve) are not available in this gitst"));
    else reservations.replaceChildren(res.items.length ? table(["pattern", "session", "state", "host", "item", "token", "remote", "expires"],
      res.items.map((r) => [r.pattern, r.session, stateCell(r.state), r.host, r.item, r.token, r.remote, r.expires])) : el("p", { class: "muted" }, "no reservations"));
  }
  function changesText(c) {
    if (!c) return "-";
    if (!c.total) return "clean";
    return ["+" + c.staged, "~" + c.unstaged, "?" + c.untracked].join(" ");
  }
  function renderWorktrees() {
    const rows = state.worktrees.map((w) => [w.issue, w.state, w.session, w.branch,
      w.dirty === null ? "-" : (w.dirty ? "dirty " + changesText(w.changes) : "clean"),
      w.ahead === null ? "-" : "+" + w.ahead + " -" + w.behind + (w.merge ? " (" + w.merge + ")" : ""),
      w.ports_text, w.pr && w.pr.number ? "#" + w.pr.number : "-", w.path]);
    document.getElementById("worktrees").replaceChildren(rows.length
      ? table(["issue", "state", "owner", "branch", "changes", "base", "ports", "PR", "path"], rows)
      : el("p", { class: "muted" }, "no worktrees"));
  }

  // --- one item ----------------------------------------------------------------------------------
  async function openItem(id) {
    detailId = id;
    const aside = document.getElementById("detail");
    const body = document.getElementById("detail-body");
    aside.hidden = false;
    body.replaceChildren(el("p", { class: "muted" }, "loading " + id + "…"));
    const response = await fetch(api("/api/item?id=" + encodeURIComponent(id)));
    const data = await response.json();
    if (detailId !== id) return;
    if (!response.ok) { body.replaceChildren(el("p", {}, data.error || "error")); return; }
    const item = data.item;
    const parts = [el("h2", { class: "detail-id" }, item.id), el("p", { class: "detail-title" }, item.step || ""),
      el("p", {}, "status " + item.status + " · " + item.dep_state)];
    if (item.deps && item.deps.length) parts.push(el("p", {}, "depends on " + item.deps.map((d) => d.id + (d.type !== "blocks" ? " (" + d.type + ")" : "")).join(", ")));
    if (data.dependents.length) parts.push(el("p", {}, "needed by " + data.dependents.map((d) => d.id).join(", ")));
    if (item.notes) parts.push(el("pre", { class: "notes" }, item.notes));
    if (item.comments && item.comments.length) {
      parts.push(el("h3", {}, "Comments (" + item.comments.length + ")"));
      const comments = el("ul", { class: "comments" });
      for (const c of item.comments) comments.append(el("li", {}, (c.author || "?") + " · " + (c.ts || "") + ": " + (c.text || "")));
      parts.push(comments);
    }
    parts.push(el("h3", {}, "History (" + data.history.length + " events)"));
    const list = el("ol", { class: "history" });
    for (const h of data.history) list.append(el("li", {}, "#" + h.seq + " " + (h.ts || "") + " " + (h.actor || "?") + ": " + h.what));
    parts.push(list);
    body.replaceChildren(...parts);
  }

  // --- the loop ----------------------------------------------------------------------------------
  function render() {
    const problems = document.getElementById("problems");
    const text = state.error ? [state.error] : state.plan.problems.concat(
      state.two_owners.map((d) => "issue " + d.issue + " has two owners: " + d.here + " here and " + d.remote.session + " on the remote"));
    problems.hidden = text.length === 0;
    problems.textContent = text.join("\n");
    if (state.error) return;
    if (view === "columns") renderColumns();
    else if (view === "graph") renderGraph();
    else if (view === "sessions") renderSessions();
    else renderWorktrees();
  }
  async function poll() {
    try {
      const headers = etag ? { "If-None-Match": etag } : {};
      const response = await fetch(api("/api/state"), { headers: headers, cache: "no-store" });
      const live = document.getElementById("live");
      if (response.status === 200) {
        etag = response.headers.get("ETag");
        state = await response.json();
        render();
        document.body.setAttribute("data-version", String(state.version));
        if (!document.body.hasAttribute("data-first-paint")) {
          // the first frame drawn with data: ms since navigation started (benchmarks/bench_board.py)
          requestAnimationFrame(() => setTimeout(() => document.body.setAttribute("data-first-paint", performance.now().toFixed(1)), 0));
        }
      } else if (response.status !== 304) {
        live.textContent = "error " + response.status;
        return;
      }
      live.textContent = "live · " + (state && state.plan ? state.plan.items.length + " items · " : "") + "updated " + new Date().toLocaleTimeString();
    } catch (err) {
      document.getElementById("live").textContent = "board stopped (" + err.message + ")";
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }
  function setView(next) {
    view = next;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === next);
    for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== "view-" + next;
    if (state && !state.error) render();
  }
  document.addEventListener("DOMContentLoaded", () => {
    for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => setView(b.dataset.view));
    document.getElementById("columns").addEventListener("click", (event) => {
      const c = event.target.closest(".card");
      if (c) openItem(c.getAttribute("data-id"));
    });
    document.getElementById("detail-close").addEventListener("click", () => { detailId = null; document.getElementById("detail").hidden = true; });
    document.getElementById("graph-hide-done").addEventListener("change", () => { graphPage = 0; renderGraph(); });
    document.getElementById("graph-prev").addEventListener("click", () => { graphPage = Math.max(0, graphPage - 1); renderGraph(); });
    document.getElementById("graph-next").addEventListener("click", () => { graphPage += 1; renderGraph(); });
    setInterval(() => { for (const a of document.querySelectorAll(".age")) a.textContent = ago(a.getAttribute("data-ts")); }, 1000);
    const start = new URLSearchParams(location.search).get("view");
    if (start) setView(start);
    poll();
  });
})();
