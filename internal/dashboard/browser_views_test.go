package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

// runJob starts a job from the CLI's socket and, with wait, waits for
// its end.
func runJob(t *testing.T, e *env, name, cmd string, wait bool) string {
	t.Helper()
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Name: name, Argv: []string{cmd}})
	if err != nil || resp.Job == nil {
		t.Fatalf("run %s: %+v %v", name, resp, err)
	}
	if wait {
		if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdWait, ID: resp.Job.ID}); err != nil {
			t.Fatalf("wait %s: %v", name, err)
		}
	}
	return resp.Job.ID
}

// media sets the viewport and the colour scheme.
func (tb *tab) media(w, h int64, scheme string) {
	tb.t.Helper()
	tb.do("viewport "+scheme, chromedp.EmulateViewport(w, h),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}))
}

// rows is the names (else ids) of the jobs table's rows, in order.
const rows = `[...document.querySelectorAll("#jobs tbody tr[data-id]")].map((r) => r.dataset.name || r.dataset.id).join(" ")`

// A job that exited non-zero looks failed: a red badge with its exit and
// meaning; one choice of the filter finds every job that did not
// succeed (a non-zero exit, a stop), live too, and none that did
// (grep's exit 1 finds no match: a success).
func TestBrowserFailedJobs(t *testing.T) {
	e := start(t, shortDir(t))
	runJob(t, e, "bad", "echo building; exit 3", true)
	runJob(t, e, "nomatch", "grep -q needle /dev/null", true)
	runJob(t, e, "good", "true", true)
	runJob(t, e, "stopped", "sleep 60", false)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdKill, ID: "stopped"}); err != nil {
		t.Fatal(err)
	}
	client.Call(e.layout, proto.Request{Cmd: proto.CmdWait, ID: "stopped"})
	tb := newTab(t)
	tb.login(e)
	tb.wait("the rows", rows+` === "stopped good nomatch bad"`, 5*time.Second)
	badge := func(name string) string {
		return tb.text(`((b) => b.className + " " + b.textContent)(document.querySelector("#jobs tr[data-name=` + name + `] .badge"))`)
	}
	for name, want := range map[string]string{"bad": "badge b-bad error", "nomatch": "badge b-ok done", "good": "badge b-ok done", "stopped": "badge b-bad killed"} {
		if got := badge(name); got != want {
			t.Errorf("the badge of %s: %q, want %q", name, got, want)
		}
	}
	if r := tb.text(rowText("bad")); !strings.Contains(r, "exit 3 · error") {
		t.Errorf("the failed job's row %q: no exit and meaning", r)
	}
	tb.choose("#f-state", "status:error")
	tb.wait("every job that did not succeed", rows+` === "stopped bad"`, 5*time.Second)
	// Live: a job that fails joins the list, one that succeeds does not.
	runJob(t, e, "late-ok", "true", true)
	runJob(t, e, "late-bad", "exit 1", true)
	tb.wait("the new failure listed, not the success", rows+` === "late-bad stopped bad"`, 5*time.Second)
	tb.choose("#f-state", "status:ok")
	tb.wait("the ones that succeeded", rows+` === "late-ok good nomatch"`, 5*time.Second)
	tb.choose("#f-state", "failed")
	tb.wait("none could not start", `document.querySelector("#jobs tbody").innerText.includes("no jobs match")`, 5*time.Second)
	tb.noDialogs()
}

// The job list is the page's full height, one line a job however
// narrow the screen, with row actions and relative and absolute times;
// Run again keeps the name.
func TestBrowserJobRows(t *testing.T) {
	e := start(t, shortDir(t))
	for i := range 12 {
		runJob(t, e, fmt.Sprintf("job-%02d", i), "echo "+strings.Repeat("a-long-argument ", 20)+"; exit "+strconv.Itoa(i%2), true)
	}
	runJob(t, e, "sleeper", "sleep 60", false)
	tb := newTab(t)
	tb.media(1400, 1000, "light")
	tb.login(e)
	tb.wait("13 rows", `document.querySelectorAll("#jobs tbody tr[data-id]").length === 13`, 5*time.Second)
	// No scroll box around the table: every ancestor lets it be seen whole.
	if s := tb.text(`(() => { const out = []; for (let n = document.getElementById("jobs").parentElement; n; n = n.parentElement) { const o = getComputedStyle(n).overflowY; if (o !== "visible") out.push(n.tagName + "#" + n.id + " " + o); } return out.join(", "); })()`); s != "" {
		t.Errorf("the jobs table is in a scroll box: %s", s)
	}
	oneLine := `[...document.querySelectorAll("#jobs tbody tr[data-id]")].every((r) => r.getBoundingClientRect().height < 34)`
	tb.wait("one line a row", oneLine, 5*time.Second)
	if w := tb.text(`document.querySelector("#jobs tr[data-name=job-03] .when").innerText`); !strings.Contains(w, "ago") || !strings.ContainsAny(w, ":") {
		t.Errorf("the time of a row %q: want relative and absolute", w)
	}
	tb.click(`#jobs tr[data-name=sleeper] button.stop`)
	tb.wait("stopped", rowText("sleeper")+`.includes("killed")`, 10*time.Second)
	old := tb.text(`document.querySelector("#jobs tr[data-name=sleeper]").dataset.id`)
	tb.click(`#jobs tr[data-name=sleeper] button.rerun`)
	tb.wait("run again, under its name", `document.getElementById("jobs-msg").textContent.startsWith("started sleeper (") && document.querySelector("#jobs tr[data-name=sleeper]").dataset.id !== `+js(old), 5*time.Second)
	tb.wait("the new sleeper runs", rowText("sleeper")+`.includes("running")`, 5*time.Second)
	// A running named job cannot be run again under its name: the page says why.
	if r := e.call("POST", "/api/jobs/sleeper/rerun", nil, ""); r.status != http.StatusConflict || !strings.Contains(r.body, "still running") {
		t.Errorf("rerun of a running named job: %d %s", r.status, r.body)
	}
	tb.click(`#jobs tr[data-name=job-05] a.logs`)
	tb.wait("the job's page", `location.hash === "#/job/" + `+js(tb.text(`document.querySelector("#jobs tr[data-name=job-05]").dataset.id`)), 5*time.Second)
	tb.do("back", chromedp.Navigate(e.base+"/#/"))
	tb.media(390, 844, "dark")
	tb.wait("one line a row on a phone", oneLine, 5*time.Second)
	tb.wait("no sideways scrolling", `document.documentElement.scrollWidth <= window.innerWidth`, 5*time.Second)
	client.Call(e.layout, proto.Request{Cmd: proto.CmdKill, ID: "sleeper", Force: true})
	tb.noDialogs()
}

// The output page: one log of both streams in arrival order, stderr
// marked, numbered lines, colours rendered as classes; markup and
// escapes in the output are text, never HTML, links or script; search,
// timestamps, follow while at the bottom, and the raw bytes.
func TestBrowserLogView(t *testing.T) {
	e := start(t, shortDir(t))
	gate := filepath.Join(e.state, "gate")
	script := `printf '\033[31mred\033[0m plain \033[1;38;5;208mbold-orange\033[0m \033[38;2;1;2;3mrgb\033[0m\n'
echo '<script>alert(1)</script><img src=x onerror=alert(2)>'
printf '\033]8;;javascript:alert(3)\033\\click me\033]8;;\033\\ \033]0;title\007after-osc \033[2Kerased?\n'
printf 'progress 10%%\rprogress 100%%\n'
sleep 0.2; echo oops >&2; sleep 0.2
i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done
echo the-needle
while [ ! -e ` + gate + ` ]; do sleep 0.05; done
i=0; while [ $i -lt 50 ]; do echo "late $i"; i=$((i+1)); done`
	runJob(t, e, "colours", script, false)
	tb := newTab(t)
	tb.media(1400, 1000, "light")
	tb.login(e)
	tb.do("open the job", chromedp.Navigate(e.base+"/#/job/colours"))
	tb.wait("the log", logText+`.includes("the-needle")`, 10*time.Second)
	lines := strings.Split(tb.text(logText), "\n")
	want := []string{"red plain bold-orange rgb", "<script>alert(1)</script><img src=x onerror=alert(2)>", "click me after-osc erased?", "progress 100%", "E oops", "line 0"}
	if len(lines) < len(want) || strings.Join(lines[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("the log's first lines:\n%q\nwant\n%q", lines[:min(len(lines), len(want))], want)
	}
	spans := tb.text(`[...document.querySelectorAll("#jv-log .ln:first-child .tx span")].map((s) => s.textContent + "=" + s.className + (s.style.color ? "/" + s.style.color : "")).join(" | ")`)
	if spans != "red=f1 |  plain = | bold-orange=a-b/rgb(255, 135, 0) |  = | rgb=/rgb(1, 2, 3)" {
		t.Errorf("the coloured spans: %s", spans)
	}
	if n := tb.text(`String(document.querySelectorAll("#jv-log a, #jv-log img, #jv-log script").length) + "/" + String(document.scripts.length)`); n != "0/1" {
		t.Errorf("links, images, scripts made from the output: %s (want 0/1: only app.js)", n)
	}
	if no := tb.text(`document.querySelector("#jv-log .ln:nth-child(6) .no").textContent`); no != "6" {
		t.Errorf("the sixth line's number: %q", no)
	}
	// Find: the hit is selected and its line marked.
	tb.do("find", chromedp.SendKeys(chromedp.CSS("#jv-find"), "line 19\r"))
	tb.wait("found", `document.getElementById("jv-found").textContent.startsWith("1 of 11 found") && getSelection().toString() === "line 19" && document.querySelector("#jv-log .ln.hit .tx").textContent === "line 19"`, 5*time.Second)
	if tb.text(`document.getElementById("jv-follow").checked ? "on" : "off"`) != "off" {
		t.Error("follow stays on while a hit above the bottom is shown")
	}
	tb.do("the next", chromedp.SendKeys(chromedp.CSS("#jv-find"), "\r"))
	tb.wait("the next found", `document.getElementById("jv-found").textContent.startsWith("2 of 11") && document.querySelector("#jv-log .ln.hit .tx").textContent === "line 190"`, 5*time.Second)
	tb.click("#jv-prev")
	tb.wait("the one before found", `document.getElementById("jv-found").textContent.startsWith("1 of 11")`, 5*time.Second)
	tb.click("#jv-ts")
	tb.wait("timestamps", `getComputedStyle(document.querySelector("#jv-log .ts")).display !== "none" && /\d:\d\d/.test(document.querySelector("#jv-log .ts").textContent)`, 5*time.Second)
	tb.screenshot("job-log")
	// Follow: at the bottom, new lines come into view as they arrive.
	tb.click("#jv-end")
	tb.wait("following", `document.getElementById("jv-follow").checked`, 5*time.Second)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	atBottom := `((b) => b.scrollHeight - b.scrollTop - b.clientHeight < 4)(document.getElementById("jv-log"))`
	tb.wait("the late lines, in view", logText+`.endsWith("late 49") && `+atBottom, 10*time.Second)
	if no := tb.text(`document.querySelector("#jv-log .ln:last-child .no").textContent`); no != "256" {
		t.Errorf("the last line's number: %q, want 256", no)
	}
	if href := tb.text(`document.getElementById("jv-raw").getAttribute("href")`); !strings.HasSuffix(href, "/raw") {
		t.Errorf("the raw link: %q", href)
	}
	tb.wait("the raw stderr, as text", `fetch(document.getElementById("jv-raw-err").href).then(async (r) => r.headers.get("content-type") === "text/plain; charset=utf-8" && await r.text() === "oops\n")`, 5*time.Second)
	tb.noDialogs()
}

// Sessions read as their client and a short id; the timeline is
// labelled.
func TestBrowserSessionsAndTimeline(t *testing.T) {
	e := start(t, shortDir(t))
	tb := newTab(t)
	tb.login(e)
	cs := e.mcp()
	tool(t, cs, "run", map[string]any{"name": "tl-job", "cmd": "true", "wait_seconds": 10}, nil)
	tb.wait("the call's session", `[...document.querySelectorAll("#activity tbody tr td:nth-child(2)")].some((c) => /^dashboard-test · http-[0-9a-zA-Z]{1,8}$/.test(c.textContent))`, 5*time.Second)
	tb.wait("the timeline's bar, labelled", `[...document.querySelectorAll("#tl-lanes .lbl")].some((s) => s.textContent === "tl-job") && !!document.querySelector("#tl-lanes .bar.ended")`, 5*time.Second)
	// The axis spans the shortest of 5, 15 or 60 minutes that shows the jobs.
	if a := tb.text(`document.querySelector("#timeline .axis").innerText.replace(/\s+/g, " ")`); a != "5 min ago 4 3 2 1 now" {
		t.Errorf("the timeline's axis: %q", a)
	}
	tb.noDialogs()
}

// Screenshots of the page in a real browser, at 1400×1000 and at a
// phone's size, light and dark. HIVE_DOCS_SCREENSHOTS=1 writes them to
// docs/ (docs/dashboard-*.png); else to the artifacts dir.
func TestBrowserScreenshots(t *testing.T) {
	e := start(t, shortDir(t))
	runJob(t, e, "build", "printf '\\033[1mbuilding\\033[0m hive\\n'; echo 'warning: unused variable' >&2; printf '\\033[32mok\\033[0m  internal/job\\n\\033[31mFAIL\\033[0m internal/dashboard\\n'; exit 1", true)
	runJob(t, e, "grep-todo", "grep -rq TODO-NEVER /dev/null", true)
	runJob(t, e, "fmt", "true", true)
	runJob(t, e, "deploy", "sleep 60", false)
	runJob(t, e, "tests", "i=0; while [ $i -lt 40 ]; do printf '\\033[32m--- PASS\\033[0m: TestCase%02d (0.0%ds)\\n' $i $((i%10)); i=$((i+1)); done; echo 'panic: boom' >&2; exit 2", true)
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdTodo, Subsystem: "ci", Key: "review-42", Summary: "PR 42 waits for review"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdWake, From: "ci", Body: "main is green again"}); err != nil {
		t.Fatal(err)
	}
	cs := e.mcp()
	tool(t, cs, "set_status", map[string]any{"text": "fixing the dashboard tests"}, nil)
	dir := os.Getenv("HIVE_ARTIFACTS")
	if os.Getenv("HIVE_DOCS_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "..", "docs")
	}
	if dir == "" {
		dir = t.TempDir()
	}
	tb := newTab(t)
	tb.login(e)
	shot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
		defer cancel()
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if len(b) > 300<<10 {
			t.Errorf("screenshot %s: %d bytes, want < 300 KiB", name, len(b))
		}
		p := filepath.Join(dir, "dashboard-"+name+".png")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(b))
	}
	for _, scheme := range []string{"light", "dark"} {
		tb.media(1400, 1000, scheme)
		tb.do("overview", chromedp.Navigate(e.base+"/#/"))
		tb.wait("the rows", `document.querySelectorAll("#jobs tbody tr[data-id]").length === 5 && document.getElementById("status").textContent.startsWith("fixing")`, 10*time.Second)
		shot("overview-" + scheme)
		tb.do("the job", chromedp.Navigate(e.base+"/#/job/tests"))
		tb.wait("its log", logText+`.includes("panic: boom")`, 10*time.Second)
		shot("job-" + scheme)
		tb.media(390, 844, scheme)
		tb.do("overview", chromedp.Navigate(e.base+"/#/"))
		tb.wait("the rows", `document.querySelectorAll("#jobs tbody tr[data-id]").length === 5`, 10*time.Second)
		shot("phone-" + scheme)
		tb.do("the job", chromedp.Navigate(e.base+"/#/job/build"))
		tb.wait("its log", logText+`.includes("FAIL internal/dashboard")`, 10*time.Second)
		shot("phone-job-" + scheme)
	}
	client.Call(e.layout, proto.Request{Cmd: proto.CmdKill, ID: "deploy", Force: true})
	tb.noDialogs()
}
