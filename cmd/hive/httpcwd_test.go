package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// pwdOver runs `pwd` in a new HTTP session opened at url with the headers.
func pwdOver(t *testing.T, url string, hdr map[string]string) string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-cwd", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headerTransport(hdr)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "pwd"}})
	if err != nil || res.IsError {
		t.Fatalf("run pwd: %v %+v", err, res)
	}
	return strings.TrimSpace(res.StructuredContent.(map[string]any)["stdout_tail"].(string))
}

// An HTTP session runs its commands where ?cwd= or Hive-Cwd says, else
// in the daemon's directory; a bad directory is 400 naming the rule.
func TestHTTPSessionCwd(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	tok := httpToken(t, state)
	base := "http://" + addr + "/mcp"
	dir := t.TempDir()
	other := t.TempDir()
	daemonDir, _ := os.Getwd()
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	withHdr := map[string]string{"Authorization": "Bearer " + tok, "Hive-Cwd": other}

	if got := pwdOver(t, base, bearer); got != daemonDir {
		t.Errorf("no cwd: pwd %q, want the daemon's %q", got, daemonDir)
	}
	if got := pwdOver(t, base+"?cwd="+dir, bearer); got != dir {
		t.Errorf("?cwd=: pwd %q, want %q", got, dir)
	}
	if got := pwdOver(t, base+"?groups=execution", withHdr); got != other {
		t.Errorf("Hive-Cwd: pwd %q, want %q", got, other)
	}

	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	for _, tt := range []struct{ q, hdr, want string }{
		{"rel/dir", "", "must be an absolute path"},
		{filepath.Join(dir, "missing"), "", "must be an existing directory"},
		{file, "", "must be a directory"},
		{dir, other, "give one, or the same directory"},
		{"", "src", "must be an absolute path"},
	} {
		hdr := auth(tok)
		if tt.hdr != "" {
			hdr["Hive-Cwd"] = tt.hdr
		}
		u := base
		if tt.q != "" {
			u += "?cwd=" + tt.q
		}
		a := do(t, "POST", u, hdr, initBody)
		if a.status != http.StatusBadRequest || !strings.Contains(a.body, tt.want) {
			t.Errorf("cwd %q header %q: %d %q, want 400 with %q", tt.q, tt.hdr, a.status, a.body, tt.want)
		}
	}
	a := do(t, "POST", base+"?groups=bogus", auth(tok), initBody)
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, `unknown group "bogus"`) {
		t.Errorf("?groups=bogus: %d %q, want 400 naming the group", a.status, a.body)
	}
}
