package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/store"
)

// chromium is Debian's browser, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// One browser serves every test of the package, each in its own tab
// (and, for a login, its own browser context).
var browser struct {
	once   sync.Once
	ctx    context.Context // a tab-less context holding the browser
	cancel func()
	dir    string
	err    error
}

func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
		os.RemoveAll(browser.dir)
	}
}

// needBrowser returns the browser's context, or skips the test (fails it
// under CI) when there is no chromium.
func needBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v (CI installs it: apt-get install chromium)", chromium, err)
		}
		t.Skipf("no %s here (apt-get install chromium): the browser tests need it", chromium)
	}
	browser.once.Do(func() {
		browser.dir, browser.err = os.MkdirTemp("", "hive-chromium")
		if browser.err != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.UserDataDir(browser.dir), chromedp.WindowSize(1280, 800),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		// The first Run starts the browser (its first tab stays blank).
		if browser.err = chromedp.Do(bctx, chromedp.Navigate("about:blank")); browser.err != nil {
			bcancel()
			acancel()
			return
		}
		browser.ctx, browser.cancel = bctx, func() { bcancel(); acancel() }
	})
	if browser.err != nil {
		t.Fatalf("start %s: %v", chromium, browser.err)
	}
	return browser.ctx
}

// tab is a browser tab of its own browser context (cookies of its own).
type tab struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	dialogs []string
	errors  []string // uncaught exceptions and errors the browser logged (CSP violations, failed requests)
}

func newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(needBrowser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	// A dialog (alert) is recorded: the page must never open one (an
	// open one blocks the page, so the test fails at its next wait).
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, ev.Message)
			tb.mu.Unlock()
		case *runtime.EventExceptionThrown:
			tb.mu.Lock()
			tb.errors = append(tb.errors, ev.ExceptionDetails.Text+" "+fmt.Sprint(ev.ExceptionDetails.Exception))
			tb.mu.Unlock()
		case *log.EventEntryAdded:
			// A 4xx the page shows (a refused compaction) is no error of
			// the page; a CSP violation, a missing file or a 5xx is.
			if text := ev.Entry.Text; ev.Entry.Level == log.EntryLevelError &&
				(strings.Contains(text, "Refused to") || strings.Contains(text, "status of 5") || strings.Contains(text, "status of 404")) {
				tb.mu.Lock()
				tb.errors = append(tb.errors, ev.Entry.Text)
				tb.mu.Unlock()
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	// Each page records its CSP violations and uncaught errors (a script
	// the browser adds, which the page's CSP does not govern).
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
window.__hiveErrors = [];
document.addEventListener("securitypolicyviolation", (e) => window.__hiveErrors.push("CSP " + e.violatedDirective + " " + e.blockedURI));
window.addEventListener("error", (e) => window.__hiveErrors.push("error " + e.message));
window.addEventListener("unhandledrejection", (e) => window.__hiveErrors.push("rejection " + e.reason));`}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.errors) > 0 {
			t.Errorf("the page had errors: %q", tb.errors)
		}
	})
	return tb
}

// do runs actions within 20 s.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// wait waits (within timeout) until the JavaScript expression is true.
func (tb *tab) wait(what, expr string, timeout time.Duration) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		tb.t.Fatalf("%s: not within %v (%v); page: %s", what, timeout, err, tb.text("document.body.innerText"))
	}
}

// poll waits (within timeout) until the JavaScript expression is true,
// and says why not.
func (tb *tab) poll(expr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(tb.ctx, timeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
	return err
}

// text evaluates a JavaScript expression to a string.
func (tb *tab) text(expr string) string {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// click clicks the element css selects once it is visible. A live page
// may draw the element again between the query and the click: the click
// is tried again then (the node was gone before any click was sent).
func (tb *tab) click(css string) {
	tb.t.Helper()
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible))
		cancel()
		if err == nil {
			return
		}
		if try == 5 || !strings.Contains(err.Error(), "Could not find node") {
			tb.t.Fatalf("click %s: %v", css, err)
		}
	}
}

// login opens the page through a one-time login URL, and waits until its
// event stream is live.
func (tb *tab) login(e *env) {
	tb.t.Helper()
	tb.do("login", chromedp.Navigate(e.loginURL()))
	tb.wait("the event stream live", `document.getElementById("conn").textContent === "live"`, 10*time.Second)
	if loc := tb.text("location.href"); loc != e.base+"/" {
		tb.t.Errorf("after login the address is %q, want %q (no code in it)", loc, e.base+"/")
	}
}

// screenshot writes the viewport (1280×800) to the artifacts dir:
// $HIVE_ARTIFACTS, else the test's temp dir.
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	dir := os.Getenv("HIVE_ARTIFACTS")
	if dir == "" {
		dir = tb.t.TempDir()
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s (%d bytes)", p, len(b))
}

// noDialogs checks that the page opened no dialog, and that it had no
// CSP violation or uncaught error.
func (tb *tab) noDialogs() {
	tb.t.Helper()
	if errs := tb.text(`(window.__hiveErrors || []).join("\n")`); errs != "" {
		tb.t.Errorf("the page had errors:\n%s", errs)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.dialogs) > 0 {
		tb.t.Errorf("the page opened dialogs: %q", tb.dialogs)
	}
}

func js(s string) string { b, _ := json.Marshal(s); return string(b) }

// choose selects the option of value v in the select css picks, as a
// user does (a change event follows).
func (tb *tab) choose(css, v string) {
	tb.t.Helper()
	if r := tb.text(`((e) => { e.value = ` + js(v) + `; e.dispatchEvent(new Event("change")); return e.value })(document.querySelector(` + js(css) + `))`); r != v {
		tb.t.Fatalf("choose %s in %s: %s", v, css, r)
	}
}

// logText is the text of the job page's merged log, a line a line, each
// line of stderr begun with "E ".
const logText = `[...document.querySelectorAll("#jv-log .ln")].map((l) => (l.classList.contains("e") ? "E " : "") + l.querySelector(".tx").textContent).join("\n")`

// rowText is the text of a job's row in the jobs table, by its name
// (the newest job of the name) or, for a job without one, its id.
func rowText(ref string) string {
	return `((document.querySelector("#jobs tr[data-name=" + ` + js(js(ref)) + ` + "], #jobs tr[data-id=" + ` + js(js(ref)) + ` + "]") || {}).innerText || "")`
}

// 1. A job started through MCP appears on the open page within 1 s, its
// output streams on its page, and its end shows the exit and semantic
// status. 8. Screenshots of the overview and the job page.
func TestBrowserJobLive(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	cs := e.mcp()
	// The job waits for a file before it ends, so the page sees it run.
	gate := filepath.Join(e.state, "gate")
	tool(t, cs, "run", map[string]any{"name": "live1", "wait_seconds": 0,
		"cmd": fmt.Sprintf(`echo first line; echo to stderr >&2; while [ ! -e %s ]; do sleep 0.05; done; echo last line; exit 3`, gate)}, nil)
	tb.wait("the job's row within 1 s", rowText("live1")+`.includes("running")`, time.Second)
	tb.click(`#jobs tr[data-name="live1"] a`)
	tb.wait("output on the job page", logText+`.includes("first line")`, 5*time.Second)
	tb.wait("stderr on the job page, marked", logText+`.includes("E to stderr")`, 5*time.Second)
	tb.screenshot("job-running")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tb.wait("the streamed end", logText+`.endsWith("\nlast line") && `+logText+`.split("\n").length === 3`, 5*time.Second)
	tb.wait("the exit and semantic status", `document.getElementById("jv-facts").innerText.includes("exit 3 · error")`, 5*time.Second)
	tb.do("find in the output", chromedp.SendKeys(chromedp.CSS("#jv-find"), "last\r"))
	tb.wait("found", `document.getElementById("jv-found").textContent.startsWith("1 of 1 found") && getSelection().toString() === "last"`, 5*time.Second)
	// The separate panes stay as an option.
	tb.choose("#jv-mode", "separate")
	tb.wait("the panes", `document.getElementById("jv-stdout").textContent === "first line\nlast line\n" && document.getElementById("jv-stderr").textContent === "to stderr\n"`, 5*time.Second)
	tb.choose("#jv-mode", "merged")
	tb.do("back", chromedp.Navigate(e.base+"/#/"))
	tb.wait("the ended row", rowText("live1")+`.includes("exit 3")`, 5*time.Second)
	tool(t, cs, "set_status", map[string]any{"text": "running the test suite"}, nil)
	tool(t, cs, "remind", map[string]any{"message": "check the CI run", "delay_seconds": 600}, nil)
	tool(t, cs, "run", map[string]any{"name": "grep-none", "cmd": "grep -q needle /dev/null", "wait_seconds": 10}, nil)
	tb.wait("the status", `document.getElementById("status").textContent.startsWith("running the test suite")`, 5*time.Second)
	tb.wait("the reminder", `document.getElementById("reminders").innerText.includes("check the CI run")`, 5*time.Second)
	tb.wait("grep's exit 1 is ok", rowText("grep-none")+`.includes("exit 1 · ok: No matches found")`, 5*time.Second)
	tb.screenshot("overview")
	tb.noDialogs()
}

// 2. Stop on a running tree leaves no process; Run again starts a new job.
func TestBrowserStopAndRunAgain(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "tree",
		Argv: []string{"bash", "-c", "sleep 300 & sleep 300 & echo started; wait"}})
	if err != nil || resp.Job == nil {
		t.Fatalf("run: %+v %v", resp, err)
	}
	tb.do("open the job", chromedp.Navigate(e.base+"/#/job/tree"))
	tb.wait("started", logText+`.includes("started")`, 5*time.Second)
	var j struct {
		Pid int `json:"pid"`
	}
	e.get("/api/jobs/tree", &j)
	if j.Pid == 0 || processGone(j.Pid) {
		t.Fatalf("the job's group %d is not running", j.Pid)
	}
	tb.click("#jv-stop")
	tb.wait("killed", `document.getElementById("jv-facts").innerText.includes("killed")`, 10*time.Second)
	// The shell's background children ignore SIGINT (bash does that to
	// background jobs): they are the leftovers the engine terminates once
	// the leader has gone.
	hivetest.Eventually(t, 10*time.Second, "the job's group to end after Stop", func() error {
		if !processGone(j.Pid) {
			return fmt.Errorf("processes of the group %d are left", j.Pid)
		}
		return nil
	})
	tb.click("#jv-rerun")
	tb.wait("a new job", `location.hash.startsWith("#/job/") && location.hash !== "#/job/tree"`, 5*time.Second)
	id := strings.TrimPrefix(tb.text("location.hash"), "#/job/")
	tb.wait("the new job runs the same command", logText+`.includes("started")`, 5*time.Second)
	var again struct {
		Cmd, State, Source, Name string
	}
	e.get("/api/jobs/"+id, &again)
	if again.State != "running" || again.Source != "dashboard" || !strings.Contains(again.Cmd, "sleep 300") || again.Name != "tree" {
		t.Errorf("run again: %+v", again)
	}
	tb.click("#jv-force")
	tb.wait("the new job killed", `document.getElementById("jv-facts").innerText.includes("killed")`, 10*time.Second)
	tb.noDialogs()
}

// 3. A message sent from the page reaches hive inbox next; a todo cleared
// on the page is gone from get_loose_ends.
func TestBrowserInboxAndTodos(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: "deploy-42", Summary: "deploy 42 waits for review"}); err != nil {
		t.Fatal(err)
	}
	tb.wait("the todo", `document.getElementById("todos").innerText.includes("deploy 42 waits for review")`, 5*time.Second)
	tb.do("write a message", chromedp.SendKeys(chromedp.CSS("#send-body"), "please rebase on main"))
	tb.click(`#send button[type="submit"]`)
	tb.wait("sent", `document.getElementById("send-msg").textContent.startsWith("sent")`, 5*time.Second)
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdInboxNext})
	if err != nil || resp.Message == nil || resp.Message.From != "operator" || resp.Message.Body != "please rebase on main" {
		t.Fatalf("inbox next: %+v %v", resp.Message, err)
	}
	cs := e.mcp()
	tool(t, cs, "remind", map[string]any{"message": "look at the flaky test", "delay_seconds": 3600}, nil)
	long := strings.Repeat("a long report line\n", 10000) + "THE-END"
	for _, m := range []proto.Request{{Cmd: proto.CmdWake, From: "ci", Body: long}, {Cmd: proto.CmdWake, From: "ci", Body: "drop me"}} {
		if _, err := client.Call(e.layout, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b"} {
		if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: "many-" + k, Summary: "one of many: " + k}); err != nil {
			t.Fatal(err)
		}
	}
	tb.wait("everything listed", `document.getElementById("reminders").innerText.includes("look at the flaky test") && document.getElementById("messages").innerText.includes("drop me") && document.getElementById("todos").innerText.includes("one of many: b")`, 5*time.Second)
	tb.screenshot("loose-ends")

	tb.click(`#todos li[data-id] button.clear`) // the first: deploy-42
	tb.wait("the todo gone from the page", `!document.getElementById("todos").innerText.includes("deploy 42")`, 5*time.Second)
	var le map[string]any
	tool(t, cs, "get_loose_ends", map[string]any{}, &le)
	if b, _ := json.Marshal(le); strings.Contains(string(b), "deploy-42") || !strings.Contains(string(b), "many-a") {
		t.Errorf("get_loose_ends after clearing deploy-42: %s", b)
	}
	// Clear several at once.
	tb.click(`#todos li:nth-child(1) input[type=checkbox]`)
	tb.click(`#todos li:nth-child(2) input[type=checkbox]`)
	tb.click("#clear-sel")
	tb.wait("both gone", `!document.getElementById("todos").innerText.includes("one of many")`, 5*time.Second)
	if resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTodoLs}); err != nil || len(resp.Todos) != 0 {
		t.Errorf("todos after clearing several: %+v %v", resp.Todos, err)
	}
	// Cancel the reminder; read the long message whole, then drop the other.
	tb.click(`#reminders li[data-id] button.cancel`)
	tb.wait("the reminder gone", `!document.getElementById("reminders").innerText.includes("flaky")`, 5*time.Second)
	tb.click(`#messages li[data-id]:nth-child(1) button.read`)
	tb.wait("the whole message", `document.querySelector("#messages li[data-id]:nth-child(1) .body").textContent.endsWith("THE-END")`, 5*time.Second)
	tb.click(`#messages li[data-id]:nth-child(2) button.drop`)
	tb.wait("the message dropped", `!document.getElementById("messages").innerText.includes("drop me")`, 5*time.Second)
	resp, err = client.Call(e.layout, proto.Request{Cmd: proto.CmdInboxLs})
	// Left: the operator's message (in flight since inbox next) and the
	// long one (read on the page, still the agent's).
	if err != nil || len(resp.Messages) != 2 || resp.Messages[1].Size != int64(len(long)) {
		t.Errorf("the inbox after a read (kept) and a drop: %+v %v", resp.Messages, err)
	}
	var rs struct {
		Reminders []any `json:"reminders"`
	}
	e.get("/api/loose-ends", &rs)
	if len(rs.Reminders) != 0 {
		t.Errorf("reminders after cancel: %v", rs.Reminders)
	}
	tb.noDialogs()
}

// 4. Compact is refused below the threshold, with the reason shown, and
// sets the flag above it.
func TestBrowserCompact(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	usage := 0.5
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTurn, State: "thinking", ContextUsage: &usage}); err != nil {
		t.Fatal(err)
	}
	tb.wait("the usage", `document.getElementById("usage").textContent === "50%"`, 5*time.Second)
	tb.click("#compact")
	tb.wait("the refusal", `document.getElementById("compact-msg").textContent.includes("compaction refused: the last turn used 50%")`, 5*time.Second)
	tb.wait("not pending", `document.getElementById("compact-pending").textContent === "not pending"`, time.Second)
	usage = 0.8
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTurn, State: "thinking", ContextUsage: &usage}); err != nil {
		t.Fatal(err)
	}
	tb.wait("the new usage", `document.getElementById("usage").textContent === "80%"`, 5*time.Second)
	tb.click("#compact")
	tb.wait("pending", `document.getElementById("compact-pending").textContent === "pending"`, 5*time.Second)
	var st struct {
		CompactPending bool `json:"compact_pending"`
	}
	e.get("/api/state", &st)
	if !st.CompactPending {
		t.Error("compact_pending not set")
	}
	tb.noDialogs()
}

// 5. A PTY session's screen shows vim as it looks; take-over typing
// reaches the shell (and is logged).
func TestBrowserShell(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	cs := e.mcp()
	var vim struct {
		SessionID string `json:"session_id"`
	}
	tool(t, cs, "terminal_pty_open", map[string]any{"cmd": "vim -u NONE -N", "cols": 80, "rows": 24}, &vim)
	tb.do("open the vim shell", chromedp.Navigate(e.base+"/#/pty/"+vim.SessionID))
	tb.wait("vim's screen", `document.getElementById("pv-screen").textContent.includes("VIM - Vi IMproved")`, 10*time.Second)
	if s := tb.text(`document.getElementById("pv-screen").textContent`); strings.Count(s, "\n~") < 10 {
		t.Errorf("vim's empty lines (~) missing:\n%s", s)
	}
	tb.screenshot("shell-vim")
	var sh struct {
		SessionID string `json:"session_id"`
	}
	tool(t, cs, "terminal_pty_open", map[string]any{"cols": 80, "rows": 24}, &sh)
	tb.do("open the bash shell", chromedp.Navigate(e.base+"/#/pty/"+sh.SessionID))
	tb.wait("the shell's screen", `document.getElementById("pv-title").textContent.includes(`+js(sh.SessionID)+`)`, 5*time.Second)
	// Before the take-over, keys go nowhere.
	tb.do("type before", chromedp.SendKeys(chromedp.CSS("#pv-screen"), "echo early\r"))
	tb.click("#pv-take")
	tb.wait("taken over", `document.getElementById("pv-screen").classList.contains("live")`, 5*time.Second)
	tb.do("type", chromedp.SendKeys(chromedp.CSS("#pv-screen"), "echo typed-$((6*7))\r"))
	tb.wait("the command ran", `document.getElementById("pv-screen").textContent.includes("\ntyped-42")`, 10*time.Second)
	if strings.Contains(tb.text(`document.getElementById("pv-screen").textContent`), "early") {
		t.Error("keys typed before the take-over reached the shell")
	}
	if l := e.log(); !strings.Contains(l, "took over a pty session") || !strings.Contains(l, "operator input to a pty session") {
		t.Error("the take-over and its input are not logged")
	}
	// "Click elsewhere to stop": a click elsewhere releases the take-over
	// on the daemon too.
	ev := e.events("")
	tb.click("#pv-title")
	tb.wait("released", `document.getElementById("pv-msg").textContent.startsWith("released") && !document.getElementById("pv-screen").classList.contains("live")`, 5*time.Second)
	ev.next(t, func(x sseEvent) bool {
		return x.typ == "pty" && strings.Contains(x.data, `"id":"`+sh.SessionID+`"`) && !strings.Contains(x.data, `"held_by"`)
	})
	if r := e.call("POST", "/api/ptys/"+sh.SessionID+"/input", nil, `{"data":"x"}`); r.status != http.StatusConflict {
		t.Errorf("input after the release: %d %s", r.status, r.body)
	}
	tb.noDialogs()
}

// A hidden tab closes its event stream (a browser allows 6 connections
// a host: six tabs would freeze every one), and resumes when shown: what
// happened meanwhile appears. The page is served through a proxy that
// counts the event streams open.
func TestBrowserHiddenTab(t *testing.T) {
	e := start(t, shortDir(t))
	up, _ := url.Parse(e.base)
	rp := httputil.NewSingleHostReverseProxy(up)
	var open atomic.Int32
	counts := make(chan int32, 64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/events" {
			counts <- open.Add(1)
			defer func() { counts <- open.Add(-1) }()
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	waitOpen := func(what string, n int32) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case c := <-counts:
				if c == n {
					return
				}
			case <-timeout:
				t.Fatalf("%s: %d event streams open, want %d", what, open.Load(), n)
			}
		}
	}
	tb := newTab(t)
	login, _ := url.Parse(e.loginURL())
	tb.do("login", chromedp.Navigate("http://"+ln.Addr().String()+login.RequestURI()))
	tb.wait("the event stream live", `document.getElementById("conn").textContent === "live"`, 10*time.Second)
	waitOpen("visible", 1)
	visible := func(v bool) string {
		return fmt.Sprintf(`Object.defineProperty(document, "hidden", {configurable: true, get: () => %v}); document.dispatchEvent(new Event("visibilitychange")); "ok"`, !v)
	}
	if r := tb.text(visible(false)); r != "ok" {
		t.Fatalf("hide the tab: %s", r)
	}
	waitOpen("hidden", 0)
	if c := tb.text(`document.getElementById("conn").textContent`); c != "paused" {
		t.Errorf("a hidden tab's connection: %q", c)
	}
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "while-hidden", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if r := tb.text(visible(true)); r != "ok" {
		t.Fatalf("show the tab: %s", r)
	}
	waitOpen("shown again", 1)
	tb.wait("the job run while hidden", rowText("while-hidden")+`.includes("done")`, 10*time.Second)
	tb.noDialogs()
}

// 6. A job whose command and output hold <script> and <img onerror>
// shows them as text: no dialog, no element made.
func TestBrowserRendersText(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	cs := e.mcp()
	tool(t, cs, "run", map[string]any{"name": "xss", "cmd": "echo '" + evil + "'; echo '" + evil + "' >&2", "wait_seconds": 10}, nil)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: evil}); err != nil {
		t.Fatal(err)
	}
	tb.wait("the row", rowText("xss")+`.includes(`+js(evil)+`)`, 5*time.Second)
	tb.wait("the message", `document.getElementById("messages").innerText.includes(`+js(evil)+`)`, 5*time.Second)
	tb.do("open the job", chromedp.Navigate(e.base+"/#/job/xss"))
	// Arrival order is the order hive read the two pipes in: a line on
	// each at once may come either way.
	tb.wait("the output", `[`+js(evil+"\nE "+evil)+`, `+js("E "+evil+"\n"+evil)+`].includes(`+logText+`)`, 5*time.Second)
	tb.wait("the command", `document.getElementById("jv-cmd").textContent.includes(`+js(evil)+`)`, 5*time.Second)
	if n := tb.text(`String(document.querySelectorAll("img").length) + "/" + String(document.scripts.length)`); n != "0/1" {
		t.Errorf("img/script elements: %s (want 0/1: only app.js)", n)
	}
	tb.noDialogs()
}

// 7. Without the cookie or the token every page and API answers 401; a
// cross-origin POST (another loopback port: same site, so the SameSite
// cookie goes with it) is refused.
func TestBrowserRefuses(t *testing.T) {
	e := start(t, shortDir(t))
	anon := newTab(t)
	for _, p := range []string{"/", "/api/state", "/api/jobs", "/static/app.js"} {
		ctx, cancel := context.WithTimeout(anon.ctx, 10*time.Second)
		r, err := chromedp.RunResponse(ctx, chromedp.Navigate(e.base+p))
		cancel()
		if err != nil || r.Status != http.StatusUnauthorized {
			t.Errorf("%s without a cookie: %v %v", p, r, err)
		}
	}
	tb := newTab(t)
	tb.login(e)
	// Another origin, served on another loopback port, posts to the
	// dashboard with the browser's cookie.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body><script>
fetch(%s, {method: "POST", credentials: "include", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: '{"body":"forged"}'})
  .finally(() => { document.title = "posted"; });
</script></body>`, js(e.base+"/api/messages"))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	tb.do("the other origin", chromedp.Navigate("http://"+ln.Addr().String()+"/"))
	tb.wait("its POST sent", `document.title === "posted"`, 10*time.Second)
	var le struct {
		Undelivered int `json:"undelivered"`
	}
	e.get("/api/loose-ends", &le)
	if le.Undelivered != 0 {
		t.Errorf("a cross-origin POST reached the inbox (%d messages)", le.Undelivered)
	}
	if !strings.Contains(e.log(), "is not this dashboard's") {
		t.Error("the daemon did not refuse the cross-origin POST")
	}
}

// The page reconnects after a daemon restart, on its own, with the same
// cookie, and is live again.
func TestBrowserDaemonRestart(t *testing.T) {
	state := shortDir(t)
	e := start(t, state)
	addr := strings.TrimPrefix(e.base, "http://")
	tb := newTab(t)
	tb.login(e)
	e.stop()
	tb.wait("the page sees the daemon go", `document.getElementById("conn").textContent === "reconnecting"`, 10*time.Second)
	e = startAt(t, state, addr)
	tb.wait("live again", `document.getElementById("conn").textContent === "live"`, 10*time.Second)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "after", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	tb.wait("a job of the new daemon", rowText("after")+`.includes("done")`, 5*time.Second)
	if tb.text(`document.getElementById("banner").hidden ? "hidden" : "shown"`) != "hidden" {
		t.Error("the logged-out banner shows after the restart")
	}
	// Log out: the page says so, and the browser's session is over on
	// the daemon.
	tb.click("#logout")
	tb.wait("logged out", `document.getElementById("conn").textContent === "logged out" && !document.getElementById("banner").hidden`, 5*time.Second)
	tb.wait("the session refused", `fetch("/api/state").then((r) => r.status === 401)`, 5*time.Second)
	tb.noDialogs()
}

// The page fits a phone's width (no sideways scrolling of the page) and
// follows a dark system theme.
func TestBrowserPhoneAndDark(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: "long",
		Argv: []string{"bash", "-c", "echo " + strings.Repeat("a-long-argument ", 30)}}); err != nil {
		t.Fatal(err)
	}
	tb.wait("the row", rowText("long")+`.includes("done")`, 5*time.Second)
	tb.do("a phone, dark", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		}))
	tb.wait("no sideways scrolling", `document.documentElement.scrollWidth <= window.innerWidth`, 5*time.Second)
	if bg := tb.text(`getComputedStyle(document.body).backgroundColor`); bg != "rgb(20, 20, 22)" {
		t.Errorf("dark theme background %q", bg)
	}
	tb.screenshot("phone-dark")
	tb.noDialogs()
}

// With 10 000 ended jobs the page shows them a page at a time: the
// newest 50, the next 50 with Older, and a text filter finds one.
func TestBrowserManyJobs(t *testing.T) {
	state := shortDir(t)
	l := paths.Layout{Dir: state}
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	if err := l.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	code := 0
	var jobs []store.Job
	for i := range 10000 {
		cmd := fmt.Sprintf("echo %d", i)
		if i == 1234 {
			cmd = "echo the-needle"
		}
		at := now.Add(time.Duration(i-10000) * time.Second)
		jobs = append(jobs, store.Job{ID: fmt.Sprintf("j%05d", i), Cmd: cmd, State: "done", ExitCode: &code,
			Created: at, Started: at, Ended: at.Add(time.Millisecond)})
	}
	for len(jobs) > 0 {
		k := min(len(jobs), 1000)
		if _, err := st.PutJobs(context.Background(), jobs[:k], nil); err != nil {
			t.Fatal(err)
		}
		jobs = jobs[k:]
	}
	st.Close()
	e := start(t, state)
	tb := newTab(t)
	tb.login(e)
	rows := `document.querySelectorAll("#jobs tbody tr").length`
	first := `document.querySelector("#jobs tbody tr").dataset.id`
	tb.wait("the newest page", rows+` === 50 && `+first+` === "j09999"`, 5*time.Second)
	tb.click("#p-older")
	tb.wait("the next page", rows+` === 50 && `+first+` === "j09949"`, 5*time.Second)
	tb.click("#p-newest")
	tb.wait("the newest page again", first+` === "j09999"`, 5*time.Second)
	tb.do("find", chromedp.SendKeys(chromedp.CSS("#f-q"), "needle"))
	tb.wait("one job found", rows+` === 1 && `+first+` === "j01234"`, 5*time.Second)
	tb.noDialogs()
}
