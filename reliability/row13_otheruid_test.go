//go:build unix

package reliability

import (
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/hivetools/hive/internal/proto"
)

// Row 13: another local user who holds every secret (the bearer token, a
// one-time dashboard login code) gets nothing over loopback HTTP: each
// connection whose socket another uid owns is closed before it is read.
// The login code it tried is still good for the daemon's own user.
func TestRow13OtherUIDOverLoopback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("socket owners are read from /proc/net/tcp (Linux)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as uid 65534")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("needs " + py + " (readable by uid 65534)")
	}
	h := startHTTP(t)
	resp, err := h.Call(proto.Request{Cmd: proto.CmdDashboard})
	if err != nil || !strings.Contains(resp.URL, "/login?code=") {
		t.Fatalf("dashboard_url: %+v %v", resp, err)
	}
	login := resp.URL
	rounds := count(3, 50)
	// Each round: /mcp (initialize), /api/state and /login with the code,
	// as uid 65534, each on a connection of its own.
	script := `import sys, urllib.request
served = 0
for url, method, body in [(sys.argv[1], "POST", sys.argv[3].encode()), (sys.argv[2], "GET", None), (sys.argv[4], "GET", None)]:
    req = urllib.request.Request(url, data=body, method=method, headers={"Authorization": "Bearer " + sys.argv[5], "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    try:
        urllib.request.urlopen(req, timeout=10)
        served += 1
    except urllib.error.HTTPError:
        served += 1  # an answer, even a refusal, means it was read
    except Exception:
        pass
print(served)
`
	apiState := strings.TrimSuffix(h.url, "/mcp") + "/api/state"
	served := 0
	for range rounds {
		c := exec.Command(py, "-c", script, h.url, apiState, row09Init, login, h.token)
		c.Dir, c.Env = "/", []string{"PATH=/usr/bin:/bin"}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("client as uid 65534: %v %s", err, out)
		}
		if strings.TrimSpace(string(out)) != "0" {
			served++
		}
	}
	if served > 0 {
		t.Errorf("%d of %d rounds got an answer as uid 65534", served, rounds)
	}
	// The code was never read, so it still logs in the daemon's own user.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := noRedirect.Get(login)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	cookie := false
	for _, c := range r.Cookies() {
		cookie = cookie || strings.HasPrefix(c.Name, "hive_session")
	}
	if !cookie {
		t.Errorf("the daemon's user with the untouched code: %s, no session cookie", r.Status)
	}
	figure(t, 13, "another uid with the token and a login code over loopback ×%d rounds (3 requests each): %d answered; the code still logged in the daemon's own user: %v",
		rounds, served, cookie)
}
