// hive dashboard. Everything that comes from the daemon is set with
// textContent, never as HTML.
"use strict";
(() => {
const $ = (id) => document.getElementById(id);
const CSRF = document.querySelector('meta[name="csrf"]').content;

function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") Object.assign(e.style, v); // CSSOM: the CSP allows no style attributes
    else if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (k in e && typeof v !== "string") e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of kids) if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function loggedOut(msg) {
  const b = $("banner");
  b.textContent = msg || "Not logged in (or the session ended): run `hive dashboard` for a new login link.";
  b.hidden = false;
}

async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET") {
    opt.headers["X-Hive-CSRF"] = CSRF;
    if (body !== undefined) { opt.headers["Content-Type"] = "application/json"; opt.body = JSON.stringify(body); }
  }
  const r = await fetch(path, opt);
  let v = null;
  try { v = await r.json(); } catch (_) { /* empty */ }
  if (r.status === 401) loggedOut();
  if (!r.ok) throw new Error((v && v.error) || (r.status + " " + r.statusText));
  return v;
}

const ago = (ms) => {
  if (!ms) return "–";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  if (s < 86400) return Math.floor(s / 3600) + "h ago";
  return Math.floor(s / 86400) + "d ago";
};
const dur = (ms) => {
  if (ms == null) return "–";
  if (ms < 1000) return ms + "ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + Math.floor(s % 60) + "s";
  return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
};
const bytes = (n) => n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : n < 1 << 30 ? (n / 1048576).toFixed(1) + " MiB" : (n / 1073741824).toFixed(2) + " GiB";
const clock = (ms) => new Date(ms).toLocaleTimeString();

// --- agent header ---
let state = null;
async function loadState() {
  try { state = await api("GET", "/api/state"); } catch (e) { return; }
  renderState();
}
function renderState() {
  if (!state) return;
  $("agent-name").textContent = state.name;
  document.title = state.name + " · hive";
  $("status").textContent = state.status ? state.status + " (" + ago(state.status_set_at * 1000) + ")" : "–";
  $("turn").textContent = state.turn_state + " since " + ago(state.turn_state_since * 1000).replace(" ago", "");
  $("usage").textContent = state.context_usage == null ? "not reported" : Math.round(state.context_usage * 100) + "%";
  $("compact-pending").textContent = state.compact_pending ? "pending" : "not pending";
  $("daemon").textContent = "v" + state.version + ", pid " + state.pid + ", up " + dur((state.uptime_secs + (Date.now() - stateAt) / 1000) * 1000);
}
let stateAt = Date.now();
$("compact").addEventListener("click", async () => {
  const m = $("compact-msg");
  m.textContent = "";
  try { await api("POST", "/api/compact"); m.textContent = "compaction asked"; }
  catch (e) { m.textContent = e.message; }
  loadState();
});

// --- jobs table ---
const jobs = { rows: new Map(), cursor: [], next: "", limit: 50 };
// The filter: a state, or "status:ok" / "status:error" (what an ended
// job's end means; error is every job that did not succeed).
function jobFilter() {
  const p = new URLSearchParams({ limit: jobs.limit });
  const f = $("f-state").value;
  if (f.startsWith("status:")) p.set("status", f.slice(7));
  else if (f) p.set("state", f);
  if ($("f-q").value) p.set("q", $("f-q").value);
  return p;
}
const ended = (j) => j.state !== "running" && j.state !== "pending";
// A job's semantic status as the filter knows it: ok, error, or "" while it runs.
const outcome = (j) => !ended(j) ? "" : j.semantic_status === "ok" ? "ok" : "error";
function matches(j) {
  const f = $("f-state").value, q = $("f-q").value.toLowerCase();
  if (f.startsWith("status:") ? outcome(j) !== f.slice(7) : f && j.state !== f) return false;
  return !q || (j.id + " " + (j.name || "") + " " + j.cmd).toLowerCase().includes(q);
}
async function loadJobs() {
  const p = jobFilter();
  const before = jobs.cursor[jobs.cursor.length - 1];
  if (before) p.set("before", before);
  let v;
  try { v = await api("GET", "/api/jobs?" + p); } catch (e) { $("jobs-msg").textContent = e.message; return; }
  $("jobs-msg").textContent = "";
  const tb = $("jobs").tBodies[0];
  tb.replaceChildren();
  jobs.rows.clear();
  for (const j of v.jobs) tb.append(jobRow(j));
  if (!v.jobs.length) tb.append(el("tr", { class: "none" }, el("td", { colspan: "8", class: "dim" }, "no jobs" + ($("f-state").value || $("f-q").value ? " match" : " yet"))));
  jobs.next = v.next_before || "";
  $("p-older").disabled = !jobs.next;
  $("p-newest").disabled = jobs.cursor.length === 0;
  drawTimeline(v.jobs);
}
// A view's time (RFC 3339) in ms since the epoch; 0 for none.
function at(s) { return s ? Date.parse(s) : 0; }
function statusText(j) {
  if (!ended(j)) return "";
  let s = j.exit_code != null ? "exit " + j.exit_code : "";
  if (j.semantic_status) s += (s ? " · " : "") + j.semantic_status + (j.semantic_message ? ": " + j.semantic_message : "");
  if (j.error && !(j.semantic_message || "").includes(j.error)) s += (s ? " · " : "") + j.error;
  return s;
}
// The badge says what a job's end means: green done, red for every job
// that did not succeed ("error" for a done job's failing exit).
function badge(j) {
  let cls = "b-run", text = j.state.replace("_", " ");
  if (j.state === "pending") cls = "b-pending";
  else if (ended(j)) {
    cls = outcome(j) === "ok" ? "b-ok" : "b-bad";
    if (j.state === "done" && cls === "b-bad") text = "error";
  }
  return el("span", { class: "badge " + cls, title: statusText(j) || j.state }, text);
}
const label = (j) => j.name && j.name !== j.id ? j.name + " (" + j.id + ")" : j.id;
// A job's label in a row: on a phone its name alone (the id is on its page).
const rowLabel = (j) => j.name && j.name !== j.id ? [j.name, el("span", { class: "hide-phone" }, " (" + j.id + ")")] : [j.id];
// An absolute time: the clock today, with the date before.
function absTime(ms) {
  const d = new Date(ms), now = new Date();
  return d.toDateString() === now.toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}
function whenCell(j) {
  const t = at(j.started) || at(j.created);
  if (!t) return el("td", { class: "when hide-narrow" }, "–");
  return el("td", { class: "when hide-narrow", title: new Date(t).toString() }, el("span", { class: "rel" }, ago(t)), el("span", { class: "abs" }, absTime(t)));
}
function jobCells(j) {
  const st = statusText(j);
  return [
    el("td", { class: "s-" + j.state }, badge(j)),
    el("td", { class: "job" }, el("a", { href: "#/job/" + encodeURIComponent(j.id), title: label(j) }, ...rowLabel(j))),
    el("td", { class: "cmd", title: j.cmd }, j.cmd),
    whenCell(j),
    el("td", { class: "dur hide-phone" }, dur(j.duration_ms)),
    el("td", { class: "st hide-narrow " + (outcome(j) === "ok" ? "ok" : outcome(j) ? "bad" : ""), title: st }, st),
    el("td", { class: "hide-narrow" }, bytes(j.stdout_bytes + j.stderr_bytes)),
    el("td", { class: "acts" },
      el("a", { class: "btn logs", href: "#/job/" + encodeURIComponent(j.id), title: "output of " + j.id }, "Logs"),
      ended(j) ? el("button", { type: "button", class: "rerun", title: "run " + label(j) + " again" + (j.name ? ", with its name" : ""), on: { click: () => rowAct(j, "/rerun") } }, "Run again")
        : el("button", { type: "button", class: "stop", title: "stop " + j.id + " (SIGINT, then SIGKILL)", on: { click: () => rowAct(j, "/stop", { force: false }) } }, "Stop")),
  ];
}
async function rowAct(j, path, body) {
  const m = $("jobs-msg");
  m.textContent = "";
  try {
    const v = await api("POST", "/api/jobs/" + encodeURIComponent(j.id) + path, body);
    m.textContent = path === "/rerun" ? "started " + label(v) : "stop signalled to " + j.id;
  } catch (e) { m.textContent = e.message; }
}
function jobRow(j) {
  const tr = el("tr", { class: "row", "data-id": j.id, "data-name": j.name || "", on: { click: (ev) => {
    if (!ev.target.closest("a, button")) location.hash = "#/job/" + encodeURIComponent(j.id);
  } } });
  tr.job = j;
  tr.append(...jobCells(j));
  jobs.rows.set(j.id, tr);
  return tr;
}
// A running job's duration ticks between its events, and the relative
// times move on.
setInterval(() => {
  for (const tr of jobs.rows.values()) {
    const j = tr.job;
    if (j.state === "running" && at(j.started)) tr.querySelector(".dur").textContent = dur(Date.now() - at(j.started));
    const rel = tr.querySelector(".when .rel"), t = at(j.started) || at(j.created);
    if (rel && t) rel.textContent = ago(t);
  }
}, 1000);
// A job event's command may be cut (cmd_truncated): keep the whole one
// already loaded.
function keepCmd(j, had) {
  return j.cmd_truncated && had && !had.cmd_truncated ? Object.assign({}, j, { cmd: had.cmd, argv: had.argv, cmd_truncated: false }) : j;
}
// A job_counters event carries a running job's counters only.
function onCounters(c) {
  const tr = jobs.rows.get(c.id);
  const had = tr ? tr.job : view.job && view.job.id === c.id ? view.job.info : null;
  if (had) onJob(Object.assign({}, had, c));
}
function onJob(j) {
  const tr = jobs.rows.get(j.id);
  if (tr) j = keepCmd(j, tr.job);
  if (tr) { tr.job = j; tr.replaceChildren(...jobCells(j)); }
  else if (jobs.cursor.length === 0 && matches(j)) {
    const tb = $("jobs").tBodies[0];
    for (const none of tb.querySelectorAll("tr.none")) none.remove();
    tb.prepend(jobRow(j));
    while (tb.rows.length > jobs.limit) { const last = tb.rows[tb.rows.length - 1]; jobs.rows.delete(last.dataset.id); last.remove(); }
  }
  if (view.job && view.job.id === j.id) onViewedJob(j);
  clearTimeout(tlTimer);
  tlTimer = setTimeout(() => drawTimeline([...jobs.rows.values()].map((tr) => tr.job)), 200);
}
let tlTimer = 0;
let qTimer = 0;
$("f-q").addEventListener("input", () => { clearTimeout(qTimer); qTimer = setTimeout(() => { jobs.cursor = []; loadJobs(); }, 250); });
$("f-state").addEventListener("change", () => { jobs.cursor = []; loadJobs(); });
$("p-older").addEventListener("click", () => { if (jobs.next) { jobs.cursor.push(jobs.next); loadJobs(); } });
$("p-newest").addEventListener("click", () => { jobs.cursor = []; loadJobs(); });

// The jobs of the last 5 minutes, 15 minutes or hour (the shortest that
// shows them all), a bar a job in one of 6 lanes, labelled with its name
// (or id); the axis below says when.
const SPANS = [5, 15, 60];
function drawTimeline(list) {
  const t = $("tl-lanes"), now = Date.now();
  const oldest = Math.min(now, ...list.map((j) => at(j.started) || now));
  const mins = SPANS.find((m) => now - oldest <= m * 60e3) || 60, span = mins * 60e3;
  const ticks = { 5: [5, 4, 3, 2, 1], 15: [15, 10, 5], 60: [60, 45, 30, 15] }[mins];
  $("tl-axis").replaceChildren(...ticks.map((m, k) => el("span", {}, m + (k ? "" : " min ago"))), el("span", {}, "now"));
  t.replaceChildren();
  let lane = 0;
  for (const j of [...list].reverse()) {
    if (!at(j.started)) continue;
    const end = at(j.ended) || now;
    if (end < now - span) continue;
    const x0 = Math.max(0, (at(j.started) - (now - span)) / span), x1 = Math.min(1, (end - (now - span)) / span);
    const w = Math.max(0.3, (x1 - x0) * 100), left = Math.min(x0 * 100, 100 - w), top = 2 + (lane++ % 6) * 14 + "px";
    const title = label(j) + " · " + j.state + (statusText(j) ? " · " + statusText(j) : "") + "\n" + j.cmd;
    t.append(el("span", { class: "bar " + (!at(j.ended) ? "" : outcome(j) === "ok" ? "ended" : "ended bad"), title,
      style: { left: left.toFixed(2) + "%", width: w.toFixed(2) + "%", top } }));
    // The label beside its bar: to the right, or to the left near now.
    const pos = left + w < 70 ? { left: (left + w).toFixed(2) + "%" } : { right: (100 - left).toFixed(2) + "%", textAlign: "right" };
    t.append(el("span", { class: "lbl", title, style: Object.assign(pos, { top }) }, j.name || j.id));
  }
}

// --- loose ends and inbox ---
// A list is drawn again only when what it shows changed, and keeps the
// todos checked: a live update neither steals a click nor a selection.
const drawn = {};
function changed(name, v) {
  const s = JSON.stringify(v);
  if (drawn[name] === s) return false;
  drawn[name] = s;
  return true;
}
async function loadLooseEnds() {
  let v;
  try { v = await api("GET", "/api/loose-ends"); } catch (e) { return; }
  const todos = $("todos");
  const checked = new Set([...todos.querySelectorAll("input:checked")].map((c) => c.value));
  if (changed("todos", v.todos)) todos.replaceChildren(...v.todos.map((t) => el("li", { "data-id": t.id },
    el("input", { type: "checkbox", value: String(t.id), checked: checked.has(String(t.id)), "aria-label": "select todo " + t.key }),
    el("span", { class: "dim" }, t.subsystem + "/" + t.key),
    el("span", { class: "body" }, t.summary),
    el("button", { type: "button", class: "clear", on: { click: () => clearTodos([t.id]) } }, "Clear"))));
  if (!v.todos.length && !todos.children.length) todos.append(el("li", { class: "dim" }, "none"));
  const rs = $("reminders");
  if (changed("reminders", v.reminders)) rs.replaceChildren(...v.reminders.map((r) => el("li", { "data-id": r.id },
    el("span", { class: "dim" }, "due " + new Date(at(r.due)).toLocaleString()),
    el("span", { class: "body" }, r.preview),
    el("button", { type: "button", class: "cancel", on: { click: () => act("/api/reminders/" + r.id + "/cancel") } }, "Cancel"))));
  if (!v.reminders.length && !rs.children.length) rs.append(el("li", { class: "dim" }, "none"));
  $("undelivered").textContent = "(" + v.undelivered + " undelivered)";
  const ms = $("messages");
  if (changed("messages", v.messages)) ms.replaceChildren(...v.messages.map((m) => {
    const body = el("span", { class: "body" }, m.preview);
    return el("li", { "data-id": m.id },
      el("span", { class: "dim" }, "from " + m.from + ", " + ago(at(m.at)) + (m.in_flight ? " (in flight)" : "")),
      body,
      el("button", { type: "button", class: "read", on: { click: async () => {
        try { const f = await api("GET", "/api/messages/" + m.id); body.textContent = f.body; } catch (e) { body.textContent = e.message; }
      } } }, "Read"),
      el("button", { type: "button", class: "drop", on: { click: () => act("/api/messages/" + m.id + "/drop") } }, "Drop"));
  }));
  if (!v.messages.length && !ms.children.length) ms.append(el("li", { class: "dim" }, "none"));
}
async function act(path, body) {
  try { await api("POST", path, body); } catch (e) { alertMsg(e.message); }
  loadLooseEnds();
}
function alertMsg(s) { $("send-msg").textContent = s; }
function clearTodos(ids) { if (ids.length) act("/api/todos/clear", { ids }); }
$("clear-sel").addEventListener("click", () =>
  clearTodos([...document.querySelectorAll("#todos input:checked")].map((c) => Number(c.value))));
$("send").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const m = $("send-msg");
  try {
    const v = await api("POST", "/api/messages", { body: $("send-body").value });
    m.textContent = "sent (message " + v.id + ")";
    $("send-body").value = "";
  } catch (e) { m.textContent = e.message; }
});

// --- shells ---
async function loadPtys() {
  let v;
  try { v = await api("GET", "/api/ptys"); } catch (e) { return; }
  const ul = $("ptys");
  ul.replaceChildren(...v.ptys.map((p) => el("li", {},
    el("a", { href: "#/pty/" + encodeURIComponent(p.id) }, p.name ? p.name + " (" + p.id + ")" : p.id),
    el("span", { class: "body" }, p.cmd),
    el("span", { class: "dim" }, (p.running ? "running" : "exited " + p.exit_code) + ", " + p.cols + "×" + p.rows +
      (p.held_by ? ", taken over by " + p.held_by : "")))));
  if (!v.ptys.length) ul.append(el("li", { class: "dim" }, "none"));
}

// --- activity ---
const calls = [];
function addCall(c) {
  calls.unshift(c);
  if (calls.length > 500) calls.pop();
}
// A session reads as its client's name and its short id: "claude-code · unix-3".
function sessionLabel(c) { return (c.client ? c.client + " · " : "") + c.session; }
function renderActivity() {
  const f = $("f-act").value.toLowerCase();
  $("activity").tBodies[0].replaceChildren(...calls.filter((c) => !f || (c.tool + " " + sessionLabel(c) + " " + c.outcome).toLowerCase().includes(f)).slice(0, 200).map((c) =>
    el("tr", {}, el("td", {}, clock(Date.parse(c.at))), el("td", { title: c.session + (c.client ? " (" + c.client + ")" : "") }, sessionLabel(c)), el("td", {}, c.tool),
      el("td", { class: "hide-phone" }, String(c.duration_ms)),
      el("td", { class: "outcome " + (c.outcome === "ok" ? "ok" : "bad"), title: c.outcome }, c.outcome))));
}
async function loadActivity() {
  let v;
  try { v = await api("GET", "/api/activity"); } catch (e) { return; }
  calls.length = 0;
  for (const c of v.calls) addCall(c);
  renderActivity();
}
$("f-act").addEventListener("input", renderActivity);

// --- job view ---
const view = { job: null, pty: null };
const RANGE = 256 << 10, KEEP = 4 << 20, MAXLINES = 20000;
async function openJob(id) {
  const v = { id, info: null, out: newStream("stdout"), err: newStream("stderr"), log: newLog() };
  view.job = v;
  v.out.pre = $("jv-stdout"); v.err.pre = $("jv-stderr");
  $("jv-stdout").textContent = ""; $("jv-stderr").textContent = ""; $("jv-msg").textContent = ""; $("jv-found").textContent = "";
  $("jv-log").replaceChildren(); $("jv-log-note").hidden = true; $("jv-badge").replaceChildren();
  let j;
  try { j = await api("GET", "/api/jobs/" + encodeURIComponent(id)); } catch (e) { if (view.job === v) $("jv-title").textContent = e.message; return; }
  if (view.job !== v) return; // another page was opened meanwhile
  v.id = j.id; // a name (#/job/build) stands for its newest job: follow that one
  const base = "/api/jobs/" + encodeURIComponent(j.id) + "/raw";
  $("jv-raw").href = base; $("jv-raw-out").href = base + "?stream=stdout"; $("jv-raw-err").href = base + "?stream=stderr";
  v.info = j;
  await loadOutput(j);
  if (view.job === v) onViewedJob(j);
}
// The output as the mode asks: the merged log, or the two panes.
async function loadOutput(j) {
  const v = view.job;
  if (!v) return;
  const merged = $("jv-mode").value === "merged";
  $("jv-merged").hidden = !merged; $("jv-panes").hidden = merged;
  if (merged) await logFrom(v.log, -RANGE);
  else { await tail(v.out, j.stdout_bytes); await tail(v.err, j.stderr_bytes); }
}

// The merged log: the job's two streams in arrival order, one element a
// line: its number, its time, its text. Text is set as text nodes only;
// SGR escapes become classes (colours of 256 or RGB: CSSOM colours),
// every other escape is dropped, never interpreted.
function newLog() { return { next: 0, busy: false, line: 0, known: true, cur: null, cr: false, esc: "", sgr: [{}, {}], lines: 0, total: 0 }; }
async function logFrom(g, offset) {
  Object.assign(g, newLog());
  $("jv-log").replaceChildren();
  g.next = offset;
  g.first = true;
  await moreLog(g);
}
async function moreLog(g) {
  const v = view.job;
  if (!v || g.busy) return;
  g.busy = true;
  try {
    for (let i = 0; i < 16; i++) {
      const q = "offset=" + g.next + "&limit=" + RANGE + (g.first ? "&lines=1" : "");
      const r = await api("GET", "/api/jobs/" + encodeURIComponent(v.id) + "/log?" + q);
      if (view.job !== v || v.log !== g) return;
      if (g.first) {
        g.first = false;
        g.line = r.line > 0 ? r.line : 0;
        g.known = r.line !== -1;
        const note = $("jv-log-note");
        note.hidden = r.offset === 0;
        note.textContent = r.offset === 0 ? "" : "The output begins " + bytes(r.offset) + " earlier (Jump to start)." +
          (g.known ? "" : " Line numbers count from the first line shown.");
      }
      const box = $("jv-log"), follow = $("jv-follow").checked;
      for (const seg of r.segments) feed(g, seg);
      if (r.skipped) feedNote(g, "[" + bytes(r.skipped) + " not kept]");
      trimLog(g);
      if (follow) box.scrollTop = box.scrollHeight;
      g.next = r.next; g.total = r.total;
      $("jv-log-n").textContent = g.lines + " lines shown of " + bytes(r.total);
      if (r.next >= r.total || !r.segments.length) break;
      if (!$("jv-follow").checked) break;
    }
  } catch (e) { $("jv-msg").textContent = e.message; }
  finally { g.busy = false; }
}
function newLine(g, err) {
  g.line++; g.lines++;
  const tx = el("span", { class: "tx" });
  const ln = el("div", { class: "ln" + (err ? " e" : "") }, el("span", { class: "no" }, (g.known ? "" : "+") + g.line),
    el("span", { class: "ts" }, g.at ? new Date(g.at).toLocaleTimeString() : ""), tx);
  $("jv-log").append(ln);
  g.cur = tx;
  return tx;
}
function feedNote(g, text) {
  const tx = newLine(g, false);
  tx.append(el("span", { class: "dim" }, text));
  g.cur = null;
}
function trimLog(g) {
  const box = $("jv-log");
  while (box.childElementCount > MAXLINES) box.firstElementChild.remove();
}
// The class list and CSSOM style of an SGR state.
function sgrStyle(st, err) {
  const cls = [];
  if (err && st.fg == null) cls.push("e"); // stderr text without a colour of its own
  if (st.b) cls.push("a-b"); if (st.d) cls.push("a-d"); if (st.i) cls.push("a-i"); if (st.u) cls.push("a-u"); if (st.s) cls.push("a-s");
  const style = {};
  let fg = st.fg, bg = st.bg;
  if (st.inv) [fg, bg] = [bg == null ? 7 : bg, fg == null ? 0 : fg];
  if (typeof fg === "number") cls.push("f" + fg); else if (fg) style.color = fg;
  if (typeof bg === "number") cls.push("g" + bg); else if (bg) style.backgroundColor = bg;
  return { cls: cls.join(" "), style };
}
// 256-colour index n as a colour: the 16 as classes, the rest as rgb().
function color256(n) {
  if (n < 16) return n;
  if (n >= 232) { const v = 8 + (n - 232) * 10; return "rgb(" + v + "," + v + "," + v + ")"; }
  n -= 16;
  const c = (x) => (x ? 55 + x * 40 : 0);
  return "rgb(" + c(Math.floor(n / 36)) + "," + c(Math.floor(n / 6) % 6) + "," + c(n % 6) + ")";
}
function applySGR(st, params) {
  const p = params === "" ? [0] : params.split(/[;:]/).map((x) => (x === "" ? 0 : Number(x)));
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (!Number.isInteger(n)) return;
    if (n === 0) { for (const k of Object.keys(st)) delete st[k]; }
    else if (n === 1) st.b = true; else if (n === 2) st.d = true; else if (n === 3) st.i = true; else if (n === 4) st.u = true;
    else if (n === 7) st.inv = true; else if (n === 9) st.s = true;
    else if (n === 22) { st.b = false; st.d = false; } else if (n === 23) st.i = false; else if (n === 24) st.u = false;
    else if (n === 27) st.inv = false; else if (n === 29) st.s = false;
    else if (n >= 30 && n <= 37) st.fg = n - 30; else if (n === 39) delete st.fg;
    else if (n >= 40 && n <= 47) st.bg = n - 40; else if (n === 49) delete st.bg;
    else if (n >= 90 && n <= 97) st.fg = n - 90 + 8; else if (n >= 100 && n <= 107) st.bg = n - 100 + 8;
    else if (n === 38 || n === 48) {
      let c = null;
      if (p[i + 1] === 5 && Number.isInteger(p[i + 2]) && p[i + 2] >= 0 && p[i + 2] <= 255) { c = color256(p[i + 2]); i += 2; }
      else if (p[i + 1] === 2 && [p[i + 2], p[i + 3], p[i + 4]].every((x) => Number.isInteger(x) && x >= 0 && x <= 255)) {
        c = "rgb(" + p[i + 2] + "," + p[i + 3] + "," + p[i + 4] + ")"; i += 4;
      } else return;
      if (n === 38) st.fg = c; else st.bg = c;
    }
  }
}
// Appends text to the current line in the stream's SGR state.
function put(g, s, text) {
  if (!text) return;
  if (g.cr) { g.cr = false; if (g.cur) g.cur.replaceChildren(); } // a lone CR: the line is written again
  const tx = g.cur || newLine(g, s === 1);
  const { cls, style } = sgrStyle(g.sgr[s], s === 1);
  const last = tx.lastChild;
  if (last && last.dataset && last.dataset.k === cls + JSON.stringify(style)) { last.append(text); return; }
  const span = el("span", { class: cls, style }, text);
  span.dataset.k = cls + JSON.stringify(style);
  tx.append(span);
}
// feed writes one segment: lines, escapes, carriage returns. An escape
// cut at the segment's end waits for the next segment of the stream.
function feed(g, seg) {
  g.at = seg.t;
  const s = seg.s;
  let d = (g.esc && g.escStream === s ? g.esc : "") + seg.data;
  g.esc = "";
  let i = 0, run = "";
  const flush = () => { put(g, s, run); run = ""; };
  while (i < d.length) {
    const c = d[i];
    if (c === "\n") { flush(); if (!g.cur) newLine(g, s === 1); g.cur = null; g.cr = false; i++; continue; }
    if (c === "\r") { flush(); if (d[i + 1] !== "\n" && i + 1 < d.length) g.cr = true; i++; continue; }
    if (c !== "\x1b" && c !== "\x9b") { run += c; i++; continue; }
    flush();
    // CSI: ESC [ params intermediates final; OSC: ESC ] ... BEL or ESC \; others: ESC and one more.
    let m;
    const rest = d.slice(i);
    if ((m = /^(?:\x1b\[|\x9b)([0-9;:<=>?]*)([ -\/]*)([@-~])/.exec(rest))) {
      if (m[3] === "m" && !m[2] && !/[<=>?]/.test(m[1])) applySGR(g.sgr[s], m[1]);
      i += m[0].length; continue;
    }
    if ((m = /^\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/.exec(rest))) { i += m[0].length; continue; }
    if (/^(?:\x1b\[|\x9b)[0-9;:<=>?]*[ -\/]*$/.test(rest) || /^\x1b\][^\x07\x1b]*\x1b?$/.test(rest) || rest === "\x1b") {
      if (rest.length < 4096) { g.esc = rest; g.escStream = s; }
      break; // cut at the segment's end
    }
    i += rest.length > 1 && rest[0] === "\x1b" ? 2 : 1; // another escape: dropped
  }
  flush();
}

// The two panes, each stream by ranges.
function newStream(name) { return { name, start: 0, next: 0, busy: false, pre: null }; }
async function tail(s, total) {
  s.start = s.next = Math.max(0, total - RANGE);
  s.pre.textContent = "";
  await more(s);
}
async function more(s) {
  const v = view.job;
  if (!v || s.busy) return;
  s.busy = true;
  try {
    for (let i = 0; i < 16; i++) {
      const r = await api("GET", "/api/jobs/" + encodeURIComponent(v.id) + "/output?stream=" + s.name + "&offset=" + s.next + "&limit=" + RANGE);
      if (view.job !== v) return;
      if (r.skipped && s.next === s.start) s.start = r.offset;
      if (r.data) {
        const follow = $("jv-follow").checked;
        s.pre.append(document.createTextNode(r.data));
        let text = s.pre.textContent;
        if (text.length > KEEP) { s.pre.textContent = text.slice(text.length - KEEP); s.start = r.next - KEEP; }
        if (follow) s.pre.scrollTop = s.pre.scrollHeight;
      }
      s.next = r.next;
      if (r.next >= r.total || !r.data) break;
      if (!$("jv-follow").checked) break;
    }
  } catch (e) { $("jv-msg").textContent = e.message; }
  finally { s.busy = false; }
}
function onViewedJob(j) {
  const v = view.job;
  j = keepCmd(j, v.info);
  v.info = j;
  $("jv-badge").replaceChildren(badge(j));
  $("jv-title").textContent = "Job " + label(j);
  $("jv-cmd").textContent = j.cmd;
  const facts = [["state", j.state], ["status", statusText(j) || "–"], ["started", at(j.started) ? new Date(at(j.started)).toLocaleString() + " (" + ago(at(j.started)) + ")" : "–"],
    ["duration", dur(j.duration_ms)], ["cwd", j.cwd || "–"], ["pid", j.pid || "–"], ["source", j.source || "–"], ...usageFacts(j)];
  $("jv-facts").replaceChildren(...facts.map(([k, x]) => el("div", {}, el("dt", {}, k),
    el("dd", { class: (k === "state" || k === "status") && outcome(j) ? (outcome(j) === "ok" ? "ok" : "bad") : k === "state" ? "s-" + j.state : "" }, String(x)))));
  $("jv-out-n").textContent = bytes(j.stdout_bytes) + (j.stdout_dropped ? ", " + bytes(j.stdout_dropped) + " dropped" : "");
  $("jv-err-n").textContent = bytes(j.stderr_bytes) + (j.stderr_dropped ? ", " + bytes(j.stderr_dropped) + " dropped" : "");
  const live = !ended(j);
  $("jv-stop").disabled = !live; $("jv-force").disabled = !live;
  if ($("jv-mode").value === "merged") {
    const g = v.log;
    if (!g.first && j.stdout_bytes + j.stderr_bytes > g.next && ($("jv-follow").checked || g.lines < MAXLINES)) moreLog(g);
  } else if ($("jv-follow").checked) {
    if (j.stdout_bytes > v.out.next) more(v.out);
    if (j.stderr_bytes > v.err.next) more(v.err);
  }
}
// usageFacts are a job's memory and CPU (so far while it runs: its memory now), the limit it hit
// and its limits with how each is enforced, where it has them.
function usageFacts(j) {
  const f = [], u = j.usage;
  if (u) {
    f.push(["memory", bytes(j.state === "running" && u.memory_bytes ? u.memory_bytes : u.memory_peak_bytes) + (j.state === "running" ? " now" : " peak")]);
    f.push(["cpu", dur(u.cpu_user_ms + u.cpu_system_ms)]);
  }
  if (j.limit_hit) f.push(["limit hit", j.limit_hit]);
  if (j.limits) f.push(["limits", Object.entries(j.limits).map(([k, x]) => k + " " + x + " (" + ((j.limits_enforced_by || {})[k] || "–") + ")").join(", ")]);
  return f;
}
async function jobAct(path, body) {
  const v = view.job;
  try {
    const j = await api("POST", "/api/jobs/" + encodeURIComponent(v.id) + path, body);
    if (path === "/rerun") location.hash = "#/job/" + encodeURIComponent(j.id);
    else $("jv-msg").textContent = "stop signalled";
  } catch (e) { $("jv-msg").textContent = e.message; }
}
$("jv-stop").addEventListener("click", () => jobAct("/stop", { force: false }));
$("jv-force").addEventListener("click", () => jobAct("/stop", { force: true }));
$("jv-rerun").addEventListener("click", () => jobAct("/rerun"));
$("jv-start").addEventListener("click", async () => {
  $("jv-follow").checked = false;
  if ($("jv-mode").value === "merged") { await logFrom(view.job.log, 0); $("jv-log").scrollTop = 0; return; }
  for (const s of [view.job.out, view.job.err]) { s.start = s.next = 0; s.pre.textContent = ""; more(s).then(() => { s.pre.scrollTop = 0; }); }
});
$("jv-end").addEventListener("click", () => {
  $("jv-follow").checked = true;
  const j = view.job.info;
  if ($("jv-mode").value === "merged") { logFrom(view.job.log, -RANGE); return; }
  tail(view.job.out, j.stdout_bytes); tail(view.job.err, j.stderr_bytes);
});
$("jv-mode").addEventListener("change", () => { if (view.job && view.job.info) { $("jv-follow").checked = true; loadOutput(view.job.info); } });
$("jv-ts").addEventListener("change", () => $("jv-log").classList.toggle("show-ts", $("jv-ts").checked));
// Follow is on while the log is scrolled to its bottom.
$("jv-log").addEventListener("scroll", () => {
  const b = $("jv-log"), bottom = b.scrollHeight - b.scrollTop - b.clientHeight < 4;
  if (view.job && !view.job.log.busy) {
    $("jv-follow").checked = bottom;
    const g = view.job.log;
    if (bottom && g.next < g.total) moreLog(g);
  }
});

// --- pty view ---
let ptyTimer = 0;
async function openPty(id) {
  view.pty = { id, live: false, takenAt: 0 };
  $("pv-msg").textContent = ""; $("pv-screen").classList.remove("live");
  $("pv-take").disabled = false; $("pv-force").hidden = true;
  await drawPty();
}
async function drawPty() {
  const v = view.pty;
  if (!v) return;
  let p;
  const asked = Date.now();
  try { p = await api("GET", "/api/ptys/" + encodeURIComponent(v.id)); } catch (e) { $("pv-msg").textContent = e.message; return; }
  if (view.pty !== v) return;
  $("pv-title").textContent = "Shell " + (p.name ? p.name + " (" + p.id + ")" : p.id) + " · " + p.cmd + " · " + (p.running ? "running" : "exited " + p.exit_code);
  $("pv-held").textContent = p.held_by && !p.held_by_you ? "taken over by " + p.held_by + " until " + clock(at(p.held_until)) : "";
  if (v.live && !p.held_by_you && asked > v.takenAt) stopTyping("the take-over ended (expired, or taken by another)");
  const lines = p.screen.text.split("\n");
  while (lines.length < p.rows) lines.push("");
  // The cursor's cell is a span; everything else is text.
  const r = p.screen.cursor_row, c = p.screen.cursor_col, chars = [...(lines[r] || "")];
  while (chars.length <= c) chars.push(" ");
  const before = lines.slice(0, r).concat([chars.slice(0, c).join("")]).join("\n");
  const after = chars.slice(c + 1).join("") + (r + 1 < lines.length ? "\n" + lines.slice(r + 1).join("\n") : "");
  $("pv-screen").replaceChildren(document.createTextNode(before), el("span", { class: "cursor" }, chars[c]), document.createTextNode(after));
}
function onPty(p) {
  if (view.pty && view.pty.id === p.id) { clearTimeout(ptyTimer); ptyTimer = setTimeout(drawPty, 50); }
}
// Typing needs the take-over, which the daemon records for this
// dashboard session; leaving the screen (a click elsewhere) releases it.
async function takeOver(force) {
  const v = view.pty;
  try {
    await api("POST", "/api/ptys/" + encodeURIComponent(v.id) + "/takeover", force ? { force: true } : undefined);
    v.live = true; v.takenAt = Date.now();
    $("pv-take").disabled = true; $("pv-force").hidden = true;
    $("pv-screen").classList.add("live");
    $("pv-msg").textContent = "you are typing into this shell (logged); click elsewhere to stop";
    $("pv-screen").focus();
  } catch (e) {
    $("pv-msg").textContent = e.message;
    $("pv-force").hidden = !/taken over by/.test(e.message);
  }
}
function stopTyping(msg) {
  const v = view.pty;
  if (!v || !v.live) return;
  v.live = false; pending = "";
  $("pv-take").disabled = false;
  $("pv-screen").classList.remove("live");
  $("pv-msg").textContent = msg;
}
async function release() {
  const v = view.pty;
  if (!v || !v.live) return;
  stopTyping("released: take over again to type");
  try { await api("POST", "/api/ptys/" + encodeURIComponent(v.id) + "/release"); } catch (e) { $("pv-msg").textContent = e.message; }
  drawPty();
}
$("pv-take").addEventListener("click", () => takeOver(false));
$("pv-force").addEventListener("click", () => takeOver(true));
$("pv-screen").addEventListener("blur", release);
const KEYS = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b", ArrowUp: "\x1b[A", ArrowDown: "\x1b[B",
  ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D", Home: "\x1b[H", End: "\x1b[F", Delete: "\x1b[3~", PageUp: "\x1b[5~", PageDown: "\x1b[6~" };
let pending = "", sending = false;
async function flushInput() {
  if (sending || !pending || !view.pty) return;
  sending = true;
  const data = pending; pending = "";
  try { await api("POST", "/api/ptys/" + encodeURIComponent(view.pty.id) + "/input", { data }); }
  catch (e) { stopTyping(e.message); }
  sending = false;
  if (pending) flushInput();
}
$("pv-screen").addEventListener("keydown", (e) => {
  if (!view.pty || !view.pty.live) return;
  let s = null;
  if (e.ctrlKey && e.key.length === 1 && /[a-z@\[\\\]^_]/i.test(e.key)) s = String.fromCharCode(e.key.toUpperCase().charCodeAt(0) & 31);
  else if (KEYS[e.key]) s = KEYS[e.key];
  else if (e.key.length === 1 && !e.metaKey && !e.altKey) s = e.key;
  if (s == null) return;
  e.preventDefault();
  pending += s;
  flushInput();
});
$("pv-screen").addEventListener("paste", (e) => {
  if (!view.pty || !view.pty.live) return;
  e.preventDefault();
  pending += e.clipboardData.getData("text");
  flushInput();
});

// --- daemon CPU/RSS sparklines ---
const usage = [];
function spark(id, values) {
  if (values.length === 1) values = [values[0], values[0]];
  const svg = $(id), top = Math.max(...values, 1e-9);
  const pts = values.map((v, i) => ((values.length === 1 ? 120 : i * 120 / (values.length - 1)).toFixed(1)) + "," + (19 - (v / top) * 18).toFixed(1)).join(" ");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", pts);
  svg.replaceChildren(line);
}
function drawUsage() {
  if (!usage.length) return;
  const last = usage[usage.length - 1];
  $("cpu").textContent = (last.cpu * 100).toFixed(1) + "%";
  $("rss").textContent = bytes(last.rss_bytes);
  spark("spark-cpu", usage.map((u) => u.cpu));
  spark("spark-rss", usage.map((u) => u.rss_bytes));
}
async function loadUsage() {
  let v;
  try { v = await api("GET", "/api/usage"); } catch (e) { return; }
  usage.length = 0;
  usage.push(...v.samples);
  drawUsage();
}
function onUsage(u) { usage.push(u); if (usage.length > 120) usage.shift(); drawUsage(); }

// --- find in the loaded output ---
// The hits are lines of the merged log (or places in the panes); Enter
// or ↓ goes to the next, Shift+Enter or ↑ to the one before, and selects
// the text found.
let findAt = { q: "", n: -1 };
function textRange(root, from, to) {
  const r = document.createRange();
  const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let pos = 0, node, started = false;
  while ((node = w.nextNode())) {
    const len = node.data.length;
    if (!started && from <= pos + len) { r.setStart(node, from - pos); started = true; }
    if (started && to <= pos + len) { r.setEnd(node, to - pos); return r; }
    pos += len;
  }
  return null;
}
function hits(q) {
  const out = [];
  if ($("jv-mode").value === "merged") {
    for (const tx of $("jv-log").querySelectorAll(".tx")) {
      const t = tx.textContent;
      for (let i = t.indexOf(q); i >= 0; i = t.indexOf(q, i + q.length)) out.push({ root: tx, i });
    }
  } else {
    for (const p of [$("jv-stdout"), $("jv-stderr")]) {
      const t = p.textContent;
      for (let i = t.indexOf(q); i >= 0; i = t.indexOf(q, i + q.length)) out.push({ root: p, i });
    }
  }
  return out;
}
function findNext(back) {
  const q = $("jv-find").value;
  for (const h of $("jv-log").querySelectorAll(".ln.hit")) h.classList.remove("hit");
  if (!q) { $("jv-found").textContent = ""; return; }
  const all = hits(q);
  if (!all.length) { $("jv-found").textContent = "not in the loaded output"; findAt = { q, n: -1 }; return; }
  let n = q === findAt.q ? findAt.n + (back ? -1 : 1) : back ? all.length - 1 : 0;
  n = (n + all.length) % all.length;
  findAt = { q, n };
  const h = all[n];
  const r = textRange(h.root, h.i, h.i + q.length);
  if (r) { const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r); }
  $("jv-follow").checked = false;
  const line = h.root.closest(".ln");
  if (line) { line.classList.add("hit"); line.scrollIntoView({ block: "center" }); }
  else if (r) {
    const box = r.getBoundingClientRect(), pbox = h.root.getBoundingClientRect();
    h.root.scrollTop += box.top - pbox.top - h.root.clientHeight / 2;
    h.root.scrollIntoView({ block: "nearest" });
  }
  $("jv-found").textContent = (n + 1) + " of " + all.length + " found (Enter: next)";
}
$("jv-find").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); findNext(e.shiftKey); } });
$("jv-next").addEventListener("click", () => findNext(false));
$("jv-prev").addEventListener("click", () => findNext(true));

// --- the swarm page ---
// The directory and the notices come live on the event stream
// (swarm_agent, swarm_gone, swarm_notice) while a page is open; the page
// reads the whole directory when shown, on swarm_reset, and every 30 s
// while shown, in case the stream missed something.
let swarmTimer = 0;
const SWARM_EVERY = 30000, QUIET_MS = 15000, NOTES_KEPT = 20;
const swarm = { name: "", self: "", agents: new Map(), notes: [] };
function agentRow(a, self) {
  const beat = at(a.heartbeat), quiet = Date.now() - beat > QUIET_MS;
  const le = a.loose_ends;
  const n = a.last_notice;
  const link = /^https?:\/\//i.test(a.dashboard_url || "") ? el("a", { href: a.dashboard_url, target: "_blank", rel: "noopener noreferrer" }, "dashboard") : "";
  return el("tr", { class: a.name === self ? "self" : "", "data-agent": a.name },
    el("td", null, el("span", { class: "badge " + (quiet ? "b-pending" : "b-ok"), title: "last heartbeat " + ago(beat) }, quiet ? "quiet" : "up"), " ", a.name),
    el("td", { class: "st" }, el("span", { class: "pill chip", title: a.status_text ? "set " + ago(at(a.status_set_at)) : "" }, a.status_text || "no status")),
    el("td", null, a.turn_state ? a.turn_state + " " + ago(at(a.turn_state_since)).replace(" ago", "") : "–"),
    el("td", { class: "jobs-n" }, String(a.jobs_running)),
    el("td", { class: "hide-phone" }, le ? "todos " + le.todos + " · reminders " + le.reminders + " · inbox " + le.inbox : "–"),
    el("td", { class: "note hide-narrow", title: n ? n.text : "" }, n ? n.text + " (" + ago(at(n.at)) + ")" : "–"),
    el("td", { class: "hide-narrow" }, a.hive),
    el("td", { class: "acts" }, link));
}
function drawSwarm() {
  const names = [...swarm.agents.keys()].sort();
  $("sw-name").textContent = swarm.name + " · " + names.length + (names.length === 1 ? " agent" : " agents");
  $("swarm").tBodies[0].replaceChildren(...names.map((n) => agentRow(swarm.agents.get(n), swarm.self)));
}
// One agent's row changed: only it is drawn again.
function drawAgent(name) {
  const tb = $("swarm").tBodies[0], a = swarm.agents.get(name);
  const tr = [...tb.rows].find((r) => r.dataset.agent === name);
  if (!a) { if (tr) { tr.remove(); drawSwarm(); } return; }
  if (tr) tr.replaceWith(agentRow(a, swarm.self)); else drawSwarm();
}
function drawNotes() {
  $("sw-notes").replaceChildren(...swarm.notes.map((n) =>
    el("li", { "data-agent": n.agent }, el("span", { class: "dim" }, new Date(at(n.at)).toLocaleTimeString()), " ", n.agent, ": ", n.text)));
}
function onSwarmAgent(a) {
  if (swarmBusy) swarmAgain = true; // the read under way may be older: read again after it
  if (!swarm.name) return; // the page has not read the directory yet
  swarm.agents.set(a.name, a);
  if (!$("swarmview").hidden) drawAgent(a.name);
}
function onSwarmGone(g) {
  if (swarmBusy) swarmAgain = true;
  if (!swarm.agents.delete(g.name)) return;
  if (!$("swarmview").hidden) drawAgent(g.name);
}
function onSwarmNotice(n) {
  swarm.notes.unshift(n);
  swarm.notes.length = Math.min(swarm.notes.length, NOTES_KEPT);
  if (!$("swarmview").hidden) drawNotes();
}
// A read of the directory asked for while one is under way (a
// swarm_reset), or an agent's change that comes meanwhile (the read may
// have been answered before it, and would draw the agent as it was),
// makes the page read it again once that read is drawn.
let swarmBusy = false, swarmAgain = false;
async function loadSwarm() {
  if (swarmBusy) { swarmAgain = true; return; }
  clearTimeout(swarmTimer);
  swarmBusy = true;
  swarmAgain = false;
  let sw = null, err = null;
  try { sw = await api("GET", "/api/swarm"); } catch (e) { err = e; }
  swarmBusy = false;
  drawLoadedSwarm(sw, err);
  if (swarmAgain) { swarmAgain = false; loadSwarm(); }
}
function drawLoadedSwarm(sw, err) {
  const shown = !$("swarmview").hidden;
  if (sw && !sw.swarm) { // the daemon joined none
    $("swarm-link").hidden = true;
    $("sw-msg").textContent = sw.note;
    return;
  }
  if (shown) swarmTimer = setTimeout(loadSwarm, SWARM_EVERY);
  if (err) { $("sw-msg").textContent = err.message; return; }
  $("swarm-link").hidden = false;
  $("swarm-link").textContent = "swarm " + sw.swarm;
  $("sw-msg").textContent = "";
  swarm.name = sw.swarm; swarm.self = sw.self;
  swarm.agents = new Map(sw.agents.map((a) => [a.name, a]));
  drawSwarm();
  drawNotes();
}
// The badges' "quiet" and the ages move on between events.
setInterval(() => { if (!$("swarmview").hidden && swarm.name) drawSwarm(); }, 5000);

// --- routing ---
function route() {
  const h = location.hash;
  const mj = h.match(/^#\/job\/(.+)$/), mp = h.match(/^#\/pty\/(.+)$/), ms = h === "#/swarm";
  $("overview").hidden = !!(mj || mp || ms);
  $("jobview").hidden = !mj;
  $("ptyview").hidden = !mp;
  $("swarmview").hidden = !ms;
  if (ms) loadSwarm(); else clearTimeout(swarmTimer);
  if (view.pty && view.pty.live) api("POST", "/api/ptys/" + encodeURIComponent(view.pty.id) + "/release").catch(() => {});
  view.job = null; view.pty = null;
  if (mj) openJob(decodeURIComponent(mj[1]));
  else if (mp) openPty(decodeURIComponent(mp[1]));
}
window.addEventListener("hashchange", route);

// --- live updates ---
let stateTimer = 0, leTimer = 0;
function soon(which) {
  if (which === "state") { clearTimeout(stateTimer); stateTimer = setTimeout(() => { stateAt = Date.now(); loadState(); }, 100); }
  else { clearTimeout(leTimer); leTimer = setTimeout(loadLooseEnds, 100); }
}
function loadAll() {
  for (const k of Object.keys(drawn)) delete drawn[k];
  stateAt = Date.now();
  loadState(); loadJobs(); loadLooseEnds(); loadPtys(); loadActivity(); loadUsage();
  route();
  if ($("swarmview").hidden) loadSwarm(); // the header's link
}
// One event stream while the tab is visible: a hidden tab closes its
// own (browsers allow 6 connections a host), and resumes from the last
// event it had when it is shown again.
let es = null, stopped = false, lastId = "";
function connect() {
  if (es || stopped || document.hidden) return;
  const src = new EventSource("/api/events" + (lastId ? "?last_event_id=" + encodeURIComponent(lastId) : ""));
  es = src;
  const on = (t, f) => src.addEventListener(t, (ev) => { if (ev.lastEventId) lastId = ev.lastEventId; f(JSON.parse(ev.data)); });
  on("hello", loadAll);
  on("reset", loadAll);
  on("agent", () => soon("state"));
  on("job", (j) => { onJob(j); soon("state"); });
  on("job_counters", onCounters);
  on("loose_ends", () => { soon("loose"); soon("state"); });
  on("pty", (p) => { loadPtys(); onPty(p); });
  on("pty_gone", () => loadPtys());
  on("activity", (c) => { addCall(c); renderActivity(); });
  on("usage", onUsage);
  on("swarm_agent", onSwarmAgent);
  on("swarm_gone", onSwarmGone);
  on("swarm_notice", onSwarmNotice);
  on("swarm_reset", () => { if (!$("swarmview").hidden) loadSwarm(); });
  src.onopen = () => { $("conn").textContent = "live"; $("banner").hidden = true; };
  src.onerror = async () => {
    if (src !== es) return;
    $("conn").textContent = "reconnecting";
    try {
      const r = await fetch("/api/state", { credentials: "same-origin" });
      if (r.status === 401 && src === es) { loggedOut(); src.close(); es = null; stopped = true; }
    } catch (_) { /* the daemon is down: EventSource retries */ }
  };
}
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) { connect(); return; }
  if (es) { es.close(); es = null; $("conn").textContent = "paused"; }
});
$("logout").addEventListener("click", async () => {
  try { await api("POST", "/api/logout"); } catch (e) { loggedOut(e.message); return; }
  stopped = true;
  if (es) { es.close(); es = null; }
  $("conn").textContent = "logged out";
  loggedOut("Logged out: run `hive dashboard` for a new login link.");
});
setInterval(renderState, 1000);
connect();
})();
