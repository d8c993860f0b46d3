package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/dashboard"
	"github.com/hivetools/hive/internal/proto"
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
		if c.Name == dashboard.SessionCookie {
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
	var le dashboard.LooseEnds
	e.get("/api/loose-ends", &le)
	if len(le.Messages) != 2 || le.Messages[0].From != "operator" || le.Messages[0].Body != "from the page" {
		t.Errorf("messages %+v", le.Messages)
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
		{"before=12", "before"}, {"q=" + strings.Repeat("x", 201), "q"},
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
			Jobs       []dashboard.Job `json:"jobs"`
			NextBefore string          `json:"next_before"`
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
		Jobs []dashboard.Job `json:"jobs"`
	}
	e.get("/api/jobs?q=job4", &found)
	if len(found.Jobs) != 1 || !strings.Contains(found.Jobs[0].Cmd, "job4") {
		t.Errorf("q=job4: %+v", found.Jobs)
	}
}
