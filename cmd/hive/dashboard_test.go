package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// hive dashboard --print-url prints a one-time login URL of the running
// daemon's HTTP front end (it works once); without HTTP it says how to
// get one.
func TestDashboardURL(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	out, err := hivetest.Run(t, state, "dashboard", "--print-url")
	if err == nil || !strings.Contains(out, "serves no HTTP") || !strings.Contains(out, "--http 127.0.0.1:PORT") {
		t.Errorf("without --http: %v %q", err, out)
	}
	hivetest.StopState(t, state)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	out, err = hivetest.Run(t, state, "dashboard", "--print-url")
	url := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(url, "http://"+addr+"/login?code=") {
		t.Fatalf("dashboard --print-url: %v %q", err, out)
	}
	if strings.Contains(url, httpToken(t, state)) {
		t.Error("the URL carries the bearer token")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("login %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	// --base-url: the link on another scheme and host (a TLS proxy, a
	// LAN name); plain HTTP off this machine is warned of.
	out, err = hivetest.Run(t, state, "dashboard", "--print-url", "--base-url", "https://hive.example:8443")
	if err != nil || !strings.HasPrefix(out, "https://hive.example:8443/login?code=") || strings.Contains(out, "warning") {
		t.Errorf("--base-url https: %v %q", err, out)
	}
	cmd := hivetest.Command(t, state, "dashboard", "--print-url", "--base-url", "http://hive.lan:8080")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.HasPrefix(stdout.String(), "http://hive.lan:8080/login?code=") || !strings.Contains(stderr.String(), "in clear") {
		t.Errorf("--base-url http on the LAN: %v %q %q", err, stdout.String(), stderr.String())
	}
	for _, bad := range []string{"hive.lan", "ftp://x", "https://x/path"} {
		if out, err := hivetest.Run(t, state, "dashboard", "--print-url", "--base-url", bad); err == nil || !strings.Contains(out, "--base-url") {
			t.Errorf("--base-url %q: %v %q", bad, err, out)
		}
	}
	if out, err := hivetest.Run(t, state, "dashboard", "extra"); err == nil || !strings.Contains(out, "takes no arguments") {
		t.Errorf("an argument: %v %q", err, out)
	}
}
