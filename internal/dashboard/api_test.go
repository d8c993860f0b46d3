package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/dashboard"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

// Without the token or a session cookie every page and endpoint answers
// 401; a login code works once and gives an HttpOnly SameSite=Strict
// cookie, and a redirect to / with no secret in it; a write with the
// cookie needs the same Origin and the page's CSRF token.
func TestAuth(t *testing.T) {
	e := start(t, shortDir(t))
	noAuth := map[string]string{"Authorization": ""}
	for _, p := range []string{"/", "/static/app.js", "/api/state", "/api/jobs", "/api/jobs/x", "/api/jobs/x/output",
		"/api/loose-ends", "/api/events", "/api/ptys", "/api/activity", "/nope"} {
		if r := e.call("GET", p, noAuth, ""); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d %s", p, r.status, r.body)
		}
	}
	for _, p := range []string{"/api/compact", "/api/messages", "/api/todos/clear", "/api/jobs/x/stop"} {
		if r := e.call("POST", p, noAuth, "{}"); r.status != http.StatusUnauthorized {
			t.Errorf("POST %s without credentials: %d %s", p, r.status, r.body)
		}
	}
	if r := e.call("GET", "/api/jobs", map[string]string{"Authorization": "Bearer wrong"}, ""); r.status != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", r.status)
	}
	login := e.loginURL()
	u, _ := url.Parse(login)
	r := e.call("GET", u.RequestURI(), noAuth, "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Fatalf("login: %d %v", r.status, r.header)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == dashboard.CookieName(e.port()) {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("session cookie %+v", cookie)
	}
	if strings.Contains(cookie.Value, e.token) || strings.Contains(cookie.Value, u.Query().Get("code")) {
		t.Error("the cookie carries the token or the code")
	}
	if r := e.call("GET", u.RequestURI(), noAuth, ""); r.status != http.StatusUnauthorized {
		t.Errorf("a login code used twice: %d", r.status)
	}
	withCookie := map[string]string{"Authorization": "", "Cookie": cookie.Name + "=" + cookie.Value}
	page := e.call("GET", "/", withCookie, "")
	if page.status != http.StatusOK || !strings.Contains(page.body, `<meta name="csrf"`) {
		t.Fatalf("page with the cookie: %d", page.status)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	tok := page.body[strings.Index(page.body, `name="csrf" content="`)+len(`name="csrf" content="`):]
	tok = tok[:strings.Index(tok, `"`)]
	if r := e.call("GET", "/api/state", withCookie, ""); r.status != http.StatusOK {
		t.Errorf("GET with the cookie: %d", r.status)
	}
	if r := e.call("GET", "/api/state", map[string]string{"Authorization": "", "Cookie": cookie.Name + "=x" + cookie.Value}, ""); r.status != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", r.status)
	}
	body := `{"body":"from the page"}`
	for i, tc := range []struct {
		hdr  map[string]string
		want int
	}{
		{map[string]string{}, http.StatusForbidden},                                 // no Origin
		{map[string]string{"Origin": e.base}, http.StatusForbidden},                 // no CSRF token
		{map[string]string{"Origin": e.base, dashboard.CSRFHeader: "x" + tok}, 403}, // a wrong one
		{map[string]string{"Origin": "http://evil.example", dashboard.CSRFHeader: tok}, http.StatusForbidden},
		{map[string]string{"Origin": "http://127.0.0.1:1", dashboard.CSRFHeader: tok}, http.StatusForbidden}, // another loopback origin
		{map[string]string{"Origin": e.base, dashboard.CSRFHeader: tok}, http.StatusOK},
	} {
		h := map[string]string{"Authorization": "", "Cookie": cookie.Name + "=" + cookie.Value, "Content-Type": "application/json"}
		for k, v := range tc.hdr {
			h[k] = v
		}
		if r := e.call("POST", "/api/messages", h, body); r.status != tc.want {
			t.Errorf("%d: POST with the cookie and %v: %d %s, want %d", i, tc.hdr, r.status, r.body, tc.want)
		}
	}
	// A script with the token needs no CSRF token.
	if r := e.call("POST", "/api/messages", nil, body); r.status != http.StatusOK {
		t.Errorf("POST with the token: %d %s", r.status, r.body)
	}
	var le service.LooseEnds
	e.get("/api/loose-ends", &le)
	if len(le.Messages) != 2 || le.Messages[0].From != "operator" || le.Messages[0].Preview != "from the page" {
		t.Errorf("messages %+v", le.Messages)
	}
	// An engine's error answers the status of its class (errdefs).
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/api/messages", `{"body":""}`, http.StatusBadRequest}, // invalid: body must not be empty
		{"GET", "/api/jobs/nosuchjob", "", http.StatusNotFound},         // not found
		{"POST", "/api/messages/424242/drop", "", http.StatusNotFound},  // not found (the inbox's)
		{"POST", "/api/compact", "", http.StatusConflict},               // conflict: refused at no context use
	} {
		if r := e.call(tc.method, tc.path, nil, tc.body); r.status != tc.want {
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, r.status, r.body, tc.want)
		}
	}
}

// Bad input gets a 400 naming the field; paging walks every job once.
func TestJobsAPI(t *testing.T) {
	e := start(t, shortDir(t))
	for i := range 7 {
		if _, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Argv: []string{"sh", "-c", fmt.Sprintf("echo job%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ q, field string }{
		{"state=nope", "state"}, {"limit=0", "limit"}, {"limit=x", "limit"}, {"limit=501", "limit"},
		{"before=12", "before"}, {"q=" + strings.Repeat("x", 201), "q"}, {"status=failed", "status"},
	} {
		r := e.call("GET", "/api/jobs?"+tc.q, nil, "")
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, tc.field) {
			t.Errorf("?%.20s: %d %s", tc.q, r.status, r.body)
		}
	}
	var seen []string
	q := "/api/jobs?limit=3"
	for range 5 {
		var page struct {
			Jobs       []view.Job `json:"jobs"`
			NextBefore string     `json:"next_before"`
		}
		e.get(q, &page)
		for _, j := range page.Jobs {
			seen = append(seen, j.ID)
		}
		if page.NextBefore == "" {
			break
		}
		q = "/api/jobs?limit=3&before=" + url.QueryEscape(page.NextBefore)
	}
	if len(seen) != 7 {
		t.Errorf("pages: %v", seen)
	}
	var found struct {
		Jobs []view.Job `json:"jobs"`
	}
	e.get("/api/jobs?q=job4", &found)
	if len(found.Jobs) != 1 || !strings.Contains(found.Jobs[0].Cmd, "job4") {
		t.Errorf("q=job4: %+v", found.Jobs)
	}
}

// session logs in with a login code, as a browser does, and returns the
// session cookie and the page's CSRF token.
func (e *env) session() (*http.Cookie, string) {
	e.t.Helper()
	u, _ := url.Parse(e.loginURL())
	r := e.call("GET", u.RequestURI(), map[string]string{"Authorization": ""}, "")
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if strings.HasPrefix(c.Name, dashboard.SessionCookie) {
			cookie = c
		}
	}
	if cookie == nil {
		e.t.Fatalf("login: %d %v", r.status, r.header)
	}
	page := e.call("GET", "/", map[string]string{"Authorization": "", "Cookie": cookie.Name + "=" + cookie.Value}, "")
	i := strings.Index(page.body, `name="csrf" content="`)
	if i < 0 {
		e.t.Fatalf("page: %d %s", page.status, page.body)
	}
	tok := page.body[i+len(`name="csrf" content="`):]
	return cookie, tok[:strings.Index(tok, `"`)]
}

// port is the port the daemon's HTTP front end listens on.
func (e *env) port() string { return e.base[strings.LastIndex(e.base, ":")+1:] }

// Two daemons' dashboards in one browser: each has its own cookie (by
// port), so logging into one keeps the other's session. A logout (POST,
// same-origin, CSRF token) ends its session on the server, for good: the
// old cookie is refused, after a restart too; the other session lives.
func TestLogout(t *testing.T) {
	stateA := shortDir(t)
	a, b := start(t, stateA), start(t, shortDir(t))
	ca, tokA := a.session()
	cb, _ := b.session()
	if ca.Name != dashboard.CookieName(a.port()) || cb.Name != dashboard.CookieName(b.port()) || ca.Name == cb.Name {
		t.Fatalf("cookie names %q and %q (ports %s, %s)", ca.Name, cb.Name, a.port(), b.port())
	}
	// The browser sends both cookies to both (cookies ignore the port).
	both := map[string]string{"Authorization": "", "Cookie": ca.Name + "=" + ca.Value + "; " + cb.Name + "=" + cb.Value}
	for _, e := range []*env{a, b} {
		if r := e.call("GET", "/api/state", both, ""); r.status != http.StatusOK {
			t.Errorf("port %s with both cookies: %d %s", e.port(), r.status, r.body)
		}
	}
	post := func(e *env, hdr map[string]string) reply {
		h := map[string]string{"Authorization": "", "Cookie": ca.Name + "=" + ca.Value}
		for k, v := range hdr {
			h[k] = v
		}
		return e.call("POST", "/api/logout", h, "")
	}
	if r := post(a, map[string]string{"Origin": a.base}); r.status != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d %s", r.status, r.body)
	}
	if r := a.call("POST", "/api/logout", nil, ""); r.status != http.StatusBadRequest {
		t.Errorf("logout with the bearer token: %d %s", r.status, r.body)
	}
	r := post(a, map[string]string{"Origin": a.base, dashboard.CSRFHeader: tokA})
	if r.status != http.StatusOK || !strings.Contains(r.header.Get("Set-Cookie"), ca.Name+"=;") {
		t.Fatalf("logout: %d %s %v", r.status, r.body, r.header)
	}
	if r := a.call("GET", "/api/state", both, ""); r.status != http.StatusUnauthorized {
		t.Errorf("the cookie after its logout: %d", r.status)
	}
	if r := b.call("GET", "/api/state", both, ""); r.status != http.StatusOK {
		t.Errorf("the other daemon's session after a logout here: %d", r.status)
	}
	addr := strings.TrimPrefix(a.base, "http://")
	a.stop()
	a = startAt(t, stateA, addr)
	if r := a.call("GET", "/api/state", both, ""); r.status != http.StatusUnauthorized {
		t.Errorf("the cookie logged out, after a restart: %d", r.status)
	}
	if c, _ := a.session(); a.call("GET", "/api/state", map[string]string{"Authorization": "", "Cookie": c.Name + "=" + c.Value}, "").status != http.StatusOK {
		t.Error("a new login after a logout and a restart refused")
	}
}

// Typing into a PTY session needs a take-over in force, the sender's own:
// input without one is refused (409); /api/ptys shows who holds it; a
// second holder is refused unless it forces; a release or a logout ends it.
func TestTakeover(t *testing.T) {
	e := start(t, shortDir(t))
	var sh struct {
		SessionID string `json:"session_id"`
	}
	tool(t, e.mcp(), "terminal_pty_open", map[string]any{"cols": 80, "rows": 24}, &sh)
	ca, tokA := e.session()
	cb, tokB := e.session()
	as := func(c *http.Cookie, tok string) map[string]string {
		return map[string]string{"Authorization": "", "Cookie": c.Name + "=" + c.Value, "Origin": e.base, dashboard.CSRFHeader: tok}
	}
	a, b := as(ca, tokA), as(cb, tokB)
	base := "/api/ptys/" + sh.SessionID
	input := `{"data":"echo hi\r"}`
	step := func(what string, hdr map[string]string, path, body string, want int) reply {
		t.Helper()
		r := e.call("POST", base+path, hdr, body)
		if r.status != want {
			t.Errorf("%s: %d %s, want %d", what, r.status, r.body, want)
		}
		return r
	}
	held := func(c *http.Cookie) dashboard.PTY {
		t.Helper()
		var v struct{ Ptys []dashboard.PTY }
		r := e.call("GET", "/api/ptys", map[string]string{"Authorization": "", "Cookie": c.Name + "=" + c.Value}, "")
		r.json(t, &v)
		if len(v.Ptys) != 1 {
			t.Fatalf("ptys %+v", v.Ptys)
		}
		return v.Ptys[0]
	}
	step("input without a take-over", a, "/input", input, http.StatusConflict)
	step("input with the token, no take-over", nil, "/input", input, http.StatusConflict)
	step("A takes over", a, "/takeover", "", http.StatusOK)
	if p := held(ca); p.HeldBy == "" || !p.HeldByYou || !p.HeldUntil.After(time.Now()) {
		t.Errorf("A's view of its take-over: %+v", p)
	}
	if p := held(cb); p.HeldBy == "" || p.HeldByYou || strings.Contains(p.HeldBy, ca.Value[:10]) {
		t.Errorf("B's view of A's take-over: %+v", p)
	}
	step("A types", a, "/input", input, http.StatusOK)
	step("B types", b, "/input", input, http.StatusConflict)
	step("the token types", nil, "/input", input, http.StatusConflict)
	step("B takes over", b, "/takeover", "", http.StatusConflict)
	step("B forces", b, "/takeover", `{"force":true}`, http.StatusOK)
	step("A types after B forced", a, "/input", input, http.StatusConflict)
	if r := step("A releases what it no longer has", a, "/release", "", http.StatusOK); !strings.Contains(r.body, `"released":false`) {
		t.Errorf("A's release: %s", r.body)
	}
	if r := step("B releases", b, "/release", "", http.StatusOK); !strings.Contains(r.body, `"released":true`) {
		t.Errorf("B's release: %s", r.body)
	}
	step("B types after its release", b, "/input", input, http.StatusConflict)
	if p := held(ca); p.HeldBy != "" {
		t.Errorf("held after the release: %+v", p)
	}
	step("B takes over again", b, "/takeover", "", http.StatusOK)
	if r := e.call("POST", "/api/logout", b, ""); r.status != http.StatusOK {
		t.Fatalf("B logs out: %d %s", r.status, r.body)
	}
	if p := held(ca); p.HeldBy != "" {
		t.Errorf("held after its holder logged out: %+v", p)
	}
}

// A take-over ends TakeoverLife after it or after its latest input.
func TestTakeoverExpires(t *testing.T) {
	e := startWith(t, shortDir(t), "127.0.0.1:0", func(c *daemon.Config) { c.DashboardTakeoverLife = 2 * time.Second }) // long enough to be seen under load, short enough to expire here
	var sh struct {
		SessionID string `json:"session_id"`
	}
	tool(t, e.mcp(), "terminal_pty_open", map[string]any{"cols": 80, "rows": 24}, &sh)
	base := "/api/ptys/" + sh.SessionID
	s := e.events("") // before the take-over: a new stream gets only what is published after it connects
	s.next(t, func(x sseEvent) bool { return x.typ == "hello" })
	if r := e.call("POST", base+"/takeover", nil, ""); r.status != http.StatusOK {
		t.Fatalf("take over: %d %s", r.status, r.body)
	}
	s.next(t, func(x sseEvent) bool { return x.typ == "pty" && strings.Contains(x.data, `"held_by"`) })
	s.next(t, func(x sseEvent) bool { return x.typ == "pty" && !strings.Contains(x.data, `"held_by"`) })
	if r := e.call("POST", base+"/input", nil, `{"data":"x"}`); r.status != http.StatusConflict {
		t.Errorf("input after the take-over expired: %d %s", r.status, r.body)
	}
}

// On a LAN address (not loopback, with a token file): a write from the
// page's own origin (Origin = http://Host) passes, another origin is
// refused; the login URL names a place a browser can go, not 0.0.0.0;
// the cookie is Secure when a TLS proxy on this machine says https.
func TestNonLoopback(t *testing.T) {
	state := shortDir(t)
	tokenFile := filepath.Join(state, "http-token")
	if err := os.WriteFile(tokenFile, []byte("a-lan-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startWith(t, state, "0.0.0.0:0", func(c *daemon.Config) { c.TokenFile = tokenFile })
	port := e.port()
	login := e.loginURL()
	if want := "http://127.0.0.1:" + port + "/login?code="; !strings.HasPrefix(login, want) {
		t.Errorf("login URL %q, want %s...", login, want)
	}
	e.base = "http://127.0.0.1:" + port
	lan := "hive.lan:" + port
	body := `{"body":"from the LAN"}`
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"http://" + lan, http.StatusOK},
		{"https://" + lan, http.StatusOK},
		{"http://evil.example:" + port, http.StatusForbidden},
	} {
		if r := e.call("POST", "/api/messages", map[string]string{"Host": lan, "Origin": tc.origin}, body); r.status != tc.want {
			t.Errorf("POST with the token, Host %s, Origin %s: %d %s, want %d", lan, tc.origin, r.status, r.body, tc.want)
		}
	}
	u, _ := url.Parse(login)
	r := e.call("GET", u.RequestURI(), map[string]string{"Authorization": "", "Host": lan, "X-Forwarded-Proto": "https"}, "")
	cookies := (&http.Response{Header: r.header}).Cookies()
	if r.status != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].Secure {
		t.Errorf("login through a TLS proxy on loopback: %d, cookies %+v", r.status, cookies)
	}
	c, _ := e.session()
	if c.Secure {
		t.Error("a cookie set over plain HTTP is Secure (the browser would never send it back)")
	}
}

// A job's record in /api carries its limits and usage: an ended job's
// in all, a running one's so far (with its memory now, where hive can
// read it: a cgroup, or its leader's /proc on Linux).
func TestJobUsageAPI(t *testing.T) {
	e := start(t, shortDir(t))
	ended, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Argv: []string{"true"}, Limits: &limits.Limits{Nofile: 64}})
	if err != nil {
		t.Fatal(err)
	}
	running, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdRun, Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Call(e.layout, proto.Request{Cmd: proto.CmdKill, ID: running.Job.ID, Force: true})
	var j view.Job
	hivetest.Eventually(t, 10*time.Second, "the job's end with its usage", func() error {
		e.get("/api/jobs/"+ended.Job.ID, &j)
		if j.State != "done" || j.Usage == nil {
			return fmt.Errorf("%s, usage %+v", j.State, j.Usage)
		}
		return nil
	})
	if j.Limits == nil || j.Limits.Nofile != 64 || j.LimitsEnforcedBy["nofile"] != "rlimit" {
		t.Errorf("limits %+v by %v; want nofile 64 by rlimit", j.Limits, j.LimitsEnforcedBy)
	}
	var r view.Job
	e.get("/api/jobs/"+running.Job.ID, &r)
	if runtime.GOOS == "linux" && (r.State != "running" || r.Usage == nil || r.Usage.MemoryBytes <= 0) {
		t.Errorf("running job: %s, usage %+v; want its memory now", r.State, r.Usage)
	}
}
