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
function jobFilter() {
  const p = new URLSearchParams({ limit: jobs.limit });
  if ($("f-state").value) p.set("state", $("f-state").value);
  if ($("f-q").value) p.set("q", $("f-q").value);
  return p;
}
function matches(j) {
  const st = $("f-state").value, q = $("f-q").value.toLowerCase();
  if (st && j.state !== st) return false;
  return !q || (j.id + " " + (j.name || "") + " " + j.cmd).toLowerCase().includes(q);
}
async function loadJobs() {
  const p = jobFilter();
  const before = jobs.cursor[jobs.cursor.length - 1];
  if (before) p.set("before", before);
  let v;
  try { v = await api("GET", "/api/jobs?" + p); } catch (e) { return; }
  const tb = $("jobs").tBodies[0];
  tb.replaceChildren();
  jobs.rows.clear();
  for (const j of v.jobs) tb.append(jobRow(j));
  if (!v.jobs.length) tb.append(el("tr", { class: "none" }, el("td", { colspan: "7", class: "dim" }, "no jobs" + ($("f-state").value || $("f-q").value ? " match" : " yet"))));
  jobs.next = v.next_before || "";
  $("p-older").disabled = !jobs.next;
  $("p-newest").disabled = jobs.cursor.length === 0;
  drawTimeline(v.jobs);
}
// A view's time (RFC 3339) in ms since the epoch; 0 for none.
function at(s) { return s ? Date.parse(s) : 0; }
function statusText(j) {
  if (j.state === "running" || j.state === "pending") return "";
  let s = j.exit_code != null ? "exit " + j.exit_code : "";
  if (j.semantic_status) s += " · " + j.semantic_status + (j.semantic_message ? ": " + j.semantic_message : "");
  if (j.error) s += (s ? " · " : "") + j.error;
  return s;
}
function jobCells(j) {
  return [
    el("td", { class: "s-" + j.state }, j.state),
    el("td", {}, el("a", { href: "#/job/" + encodeURIComponent(j.id) }, j.name && j.name !== j.id ? j.name + " (" + j.id + ")" : j.id)),
    el("td", { class: "cmd", title: j.cmd }, j.cmd),
    el("td", { class: "hide-narrow" }, at(j.started) ? ago(at(j.started)) : "–"),
    el("td", {}, dur(j.duration_ms)),
    el("td", { class: j.semantic_status === "ok" ? "ok" : j.semantic_status ? "bad" : "" }, statusText(j)),
    el("td", { class: "hide-narrow" }, bytes(j.stdout_bytes + j.stderr_bytes)),
  ];
}
function jobRow(j) {
  const tr = el("tr", { class: "row", "data-id": j.id, "data-name": j.name || "", on: { click: (ev) => {
    if (!ev.target.closest("a")) location.hash = "#/job/" + encodeURIComponent(j.id);
  } } });
  tr.job = j;
  tr.append(...jobCells(j));
  jobs.rows.set(j.id, tr);
  return tr;
}
// A running job's duration ticks between its events.
setInterval(() => {
  for (const tr of jobs.rows.values()) {
    const j = tr.job;
    if (j.state === "running" && at(j.started)) tr.cells[4].textContent = dur(Date.now() - at(j.started));
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

function drawTimeline(list) {
  const t = $("timeline"), now = Date.now(), span = 3600e3;
  t.replaceChildren();
  let lane = 0;
  for (const j of list) {
    if (!at(j.started)) continue;
    const end = at(j.ended) || now;
    if (end < now - span) continue;
    const x0 = Math.max(0, (at(j.started) - (now - span)) / span), x1 = Math.min(1, (end - (now - span)) / span);
    const w = Math.max(0.4, (x1 - x0) * 100);
    t.append(el("span", { class: at(j.ended) ? "ended" : "", title: j.id + ": " + j.cmd,
      style: { left: Math.min(x0 * 100, 100 - w).toFixed(2) + "%", width: w.toFixed(2) + "%", top: 2 + (lane++ % 6) * 6 + "px" } }));
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
function renderActivity() {
  const f = $("f-act").value.toLowerCase();
  $("activity").tBodies[0].replaceChildren(...calls.filter((c) => !f || (c.tool + " " + c.session + " " + c.outcome).toLowerCase().includes(f)).slice(0, 200).map((c) =>
    el("tr", {}, el("td", {}, clock(Date.parse(c.at))), el("td", {}, c.session), el("td", {}, c.tool), el("td", {}, String(c.duration_ms)),
      el("td", { class: c.outcome === "ok" ? "ok" : "bad" }, c.outcome))));
}
async function loadActivity() {
  let v;
  try { v = await api("GET", "/api/activity"); } catch (e) { return; }
  calls.length = 0;
  for (const c of v.calls) addCall(c);
  renderActivity();
}
$("f-act").addEventListener("input", renderActivity);

// --- job view: output by ranges ---
const view = { job: null, pty: null };
const RANGE = 256 << 10, KEEP = 4 << 20;
function newStream(name) { return { name, start: 0, next: 0, busy: false, pre: null }; }
async function openJob(id) {
  view.job = { id, info: null, out: newStream("stdout"), err: newStream("stderr") };
  view.job.out.pre = $("jv-stdout"); view.job.err.pre = $("jv-stderr");
  $("jv-stdout").textContent = ""; $("jv-stderr").textContent = ""; $("jv-msg").textContent = "";
  let j;
  try { j = await api("GET", "/api/jobs/" + encodeURIComponent(id)); } catch (e) { $("jv-title").textContent = e.message; return; }
  view.job.id = j.id; // a name (#/job/build) stands for its newest job: follow that one
  await tail(view.job.out, j.stdout_bytes); await tail(view.job.err, j.stderr_bytes);
  onViewedJob(j);
}
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
  $("jv-title").textContent = "Job " + (j.name && j.name !== j.id ? j.name + " (" + j.id + ")" : j.id);
  $("jv-cmd").textContent = j.cmd;
  const facts = [["state", j.state], ["status", statusText(j) || "–"], ["started", at(j.started) ? new Date(at(j.started)).toLocaleString() : "–"],
    ["duration", dur(j.duration_ms)], ["cwd", j.cwd || "–"], ["pid", j.pid || "–"], ["source", j.source || "–"], ...usageFacts(j)];
  $("jv-facts").replaceChildren(...facts.map(([k, x]) => el("div", {}, el("dt", {}, k), el("dd", { class: k === "state" ? "s-" + j.state : "" }, String(x)))));
  $("jv-out-n").textContent = bytes(j.stdout_bytes) + (j.stdout_dropped ? ", " + bytes(j.stdout_dropped) + " dropped" : "");
  $("jv-err-n").textContent = bytes(j.stderr_bytes) + (j.stderr_dropped ? ", " + bytes(j.stderr_dropped) + " dropped" : "");
  const live = j.state === "running" || j.state === "pending";
  $("jv-stop").disabled = !live; $("jv-force").disabled = !live;
  if ($("jv-follow").checked) {
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
$("jv-start").addEventListener("click", () => {
  $("jv-follow").checked = false;
  for (const s of [view.job.out, view.job.err]) { s.start = s.next = 0; s.pre.textContent = ""; more(s).then(() => { s.pre.scrollTop = 0; }); }
});
$("jv-end").addEventListener("click", () => {
  $("jv-follow").checked = true;
  const j = view.job.info;
  tail(view.job.out, j.stdout_bytes); tail(view.job.err, j.stderr_bytes);
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
let findAt = { pre: null, index: -1, q: "" };
function findNext() {
  const q = $("jv-find").value;
  if (!q) { $("jv-found").textContent = ""; return; }
  const pres = [$("jv-stdout"), $("jv-stderr")];
  if (q !== findAt.q) findAt = { pre: null, index: -1, q };
  let hits = 0;
  for (const p of pres) { const t = p.textContent; for (let i = t.indexOf(q); i >= 0; i = t.indexOf(q, i + q.length)) hits++; }
  if (!hits) { $("jv-found").textContent = "not in the loaded output"; return; }
  // The next hit after the current one, stdout first, wrapping around.
  let start = findAt.pre ? pres.indexOf(findAt.pre) : 0, from = findAt.index + 1;
  for (let k = 0; k < 3; k++) {
    const p = pres[(start + k) % 2];
    p.normalize();
    const i = p.textContent.indexOf(q, k === 0 ? from : 0);
    if (i >= 0 && p.firstChild) {
      findAt = { pre: p, index: i, q };
      const r = document.createRange();
      r.setStart(p.firstChild, i); r.setEnd(p.firstChild, i + q.length);
      const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
      const box = r.getBoundingClientRect(), pbox = p.getBoundingClientRect();
      p.scrollTop += box.top - pbox.top - p.clientHeight / 2;
      p.scrollIntoView({ block: "nearest" });
      $("jv-follow").checked = false;
      $("jv-found").textContent = hits + " found (Enter: next)";
      return;
    }
  }
}
$("jv-find").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); findNext(); } });

// --- routing ---
function route() {
  const h = location.hash;
  const mj = h.match(/^#\/job\/(.+)$/), mp = h.match(/^#\/pty\/(.+)$/);
  $("overview").hidden = !!(mj || mp);
  $("jobview").hidden = !mj;
  $("ptyview").hidden = !mp;
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
