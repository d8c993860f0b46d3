package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// freePort is a loopback address whose port was free a moment ago (for
// a daemon that must refuse to start: another process may take the port
// before anything listens on it; startHTTPDaemon takes port 0 instead).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTPDaemon starts `hive daemon --http ADDR EXTRA...`, waits until
// its HTTP endpoint answers and returns the address it listens on: with
// ADDR's port 0 (127.0.0.1:0), the port the kernel gave it, as the
// daemon's version answer tells it (a port picked free and then given
// to the daemon could be taken by another process in between). Its log
// goes to <state>/daemon.log.
func startHTTPDaemon(t *testing.T, state, addr string, extra ...string) string {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(state, "daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	d := hivetest.Command(t, state, append([]string{"daemon", "--http", addr}, extra...)...)
	d.Stdout, d.Stderr = logf, logf
	hivetest.StartDaemonCmd(t, state, d)
	var bound string
	hivetest.Eventually(t, 10*time.Second, "the http endpoint to come up", func() error {
		resp, err := client.Call(paths.Layout{Dir: state}, proto.Request{Cmd: proto.CmdVersion})
		if err != nil {
			return err
		}
		if resp.HTTPAddr == "" {
			return errors.New("the daemon tells no http address")
		}
		c, err := net.Dial("tcp", resp.HTTPAddr)
		if err != nil {
			return err
		}
		c.Close()
		bound = resp.HTTPAddr
		return nil
	})
	return bound
}

// daemonLog is what the state dir's daemon wrote to its log so far.
func daemonLog(state string) string {
	b, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
	return string(b)
}

// waitLog waits until the daemon's log matches re, and returns the log.
func waitLog(t *testing.T, state string, re *regexp.Regexp) string {
	t.Helper()
	var l string
	hivetest.Eventually(t, 10*time.Second, "the daemon's log to match "+re.String(), func() error {
		if l = daemonLog(state); !re.MatchString(l) {
			return fmt.Errorf("daemon log never matched %v:\n%s", re, l)
		}
		return nil
	})
	return l
}

// httpToken reads the token the daemon generated for state.
func httpToken(t *testing.T, state string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP opens an MCP session over streamable HTTP with the token.
func connectHTTP(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// answer is one HTTP answer as a client sees it.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends an initialize (or body) to url with the headers (Host sets
// the request's Host).
func do(t *testing.T, method, url string, hdr map[string]string, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func post(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	return do(t, "POST", url, hdr, initBody).status
}

func auth(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// daemonMustFail runs `hive daemon ARGS`, which must exit with an error,
// and returns its output and exit code. A daemon that starts instead is
// killed (by pid) after 20 s and fails the test.
func daemonMustFail(t *testing.T, state string, args ...string) (string, int) {
	t.Helper()
	cmd := hivetest.Command(t, state, append([]string{"daemon"}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("daemon %v: exited with %v, want an error; output:\n%s", args, err, out.String())
		}
		return out.String(), ee.ExitCode()
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("daemon %v started; want a refusal", args)
		return "", 0
	}
}

func TestHTTPTransport(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	url := "http://" + addr + "/mcp"
	tok := httpToken(t, state)
	cs := connectHTTP(t, url, tok)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "echo over-http"}})
	if err != nil || res.IsError {
		t.Fatalf("run over http: %v %+v", err, res)
	}
	if sc := res.StructuredContent.(map[string]any); sc["stdout_tail"] != "over-http\n" {
		t.Errorf("structured %v", sc)
	}
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"loopback origin", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"rebinding host", map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
		{"rebinding host, no token", map[string]string{"Host": "evil.example:80", "Authorization": ""}, http.StatusForbidden},
	}
	for _, tt := range tests {
		hdr := auth(tok)
		for k, v := range tt.hdr {
			hdr[k] = v
		}
		if got := post(t, url, hdr); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Without --http-token-file the daemon generates <state>/http-token
// (0600), logs where it is, reports it in `hive version`, and keeps it
// across restarts.
func TestHTTPDefaultToken(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	path := filepath.Join(state, "http-token")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) { // Windows has no such modes
		t.Fatalf("token file: %v %v, want a regular file with mode 0600", fi, err)
	}
	tok := httpToken(t, state)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("token %q: want 64 hex digits", tok)
	}
	waitLog(t, state, regexp.MustCompile(`level=INFO msg="http bearer token required" token_file=`+regexp.QuoteMeta(path)))

	out, err := hivetest.Run(t, state, "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json %q: %v", out, err)
	}
	if v["daemon_http_addr"] != addr || v["daemon_http_auth"] != "token" || v["daemon_http_token_file"] != path {
		t.Errorf("version --json: %v", v)
	}
	out, _ = hivetest.Run(t, state, "version")
	if want := fmt.Sprintf("http http://%s/mcp (bearer token in %s)", addr, path); !strings.Contains(out, want) {
		t.Errorf("version: %q, want a line %q", out, want)
	}
	if got := post(t, "http://"+addr+"/mcp", auth(tok)); got != http.StatusOK {
		t.Errorf("generated token: %d", got)
	}

	// A restart reuses the file.
	hivetest.StopState(t, state)
	startHTTPDaemon(t, state, addr)
	if again := httpToken(t, state); again != tok {
		t.Errorf("token after restart %q, want the same %q", again, tok)
	}
	if got := post(t, "http://"+addr+"/mcp", auth(tok)); got != http.StatusOK {
		t.Errorf("token after restart: %d", got)
	}
}

// Only "Authorization: Bearer TOKEN" passes, the scheme in any case.
func TestHTTPBearerHeader(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	url := "http://" + addr + "/mcp"
	tok := httpToken(t, state)
	tests := []struct {
		name, header string // header "" sends none
		want         int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("0", len(tok)), http.StatusUnauthorized},
		{"raw token", tok, http.StatusUnauthorized},
		{"other scheme", "Basic " + tok, http.StatusUnauthorized},
		{"two words", "Bearer " + tok + " extra", http.StatusUnauthorized},
		{"scheme only", "Bearer", http.StatusUnauthorized},
		{"prefix of the token", "Bearer " + tok[:10], http.StatusUnauthorized},
		{"Bearer", "Bearer " + tok, http.StatusOK},
		{"bearer", "bearer " + tok, http.StatusOK},
		{"BEARER", "BEARER " + tok, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.header != "" {
				hdr["Authorization"] = tt.header
			}
			a := do(t, "POST", url, hdr, initBody)
			if a.status != tt.want {
				t.Fatalf("status %d, want %d: %s", a.status, tt.want, a.body)
			}
			if tt.want == http.StatusUnauthorized && a.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("WWW-Authenticate %q, want Bearer", a.header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestHTTPBearerTokenFile(t *testing.T) {
	state := hivetest.StateDir(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--http-token-file", tok)
	url := "http://" + addr + "/mcp"
	if got := post(t, url, nil); got != http.StatusUnauthorized {
		t.Errorf("no token: %d", got)
	}
	if got := post(t, url, auth("wrong")); got != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", got)
	}
	if got := post(t, url, auth("s3cret")); got != http.StatusOK {
		t.Errorf("right token: %d", got)
	}
	if _, err := os.Stat(filepath.Join(state, "http-token")); !os.IsNotExist(err) {
		t.Errorf("a token was generated although --http-token-file was given: %v", err)
	}
	out, _ := hivetest.Run(t, state, "version", "--json")
	if !strings.Contains(out, `"daemon_http_token_file":"`+tok+`"`) {
		t.Errorf("version --json %q does not name %s", out, tok)
	}
}

// The token file is re-read when it changes: a new token works at once
// and the old one no longer does; while the file is unusable every
// request is refused, never let through.
func TestHTTPTokenRotation(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	pid := hivetest.DaemonPid(state)
	url := "http://" + addr + "/mcp"
	path := filepath.Join(state, "http-token")
	old := httpToken(t, state)
	if got := post(t, url, auth(old)); got != http.StatusOK {
		t.Fatalf("old token before rotation: %d", got)
	}

	// Rotation by rename, as a secret manager does it.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("rotated-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got := post(t, url, auth(old)); got != http.StatusUnauthorized {
		t.Errorf("old token after rotation: %d, want 401", got)
	}
	if got := post(t, url, auth("rotated-token-1")); got != http.StatusOK {
		t.Errorf("new token after rotation: %d, want 200", got)
	}
	// Rotation in place.
	if err := os.WriteFile(path, []byte("rotated-token-22\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := post(t, url, auth("rotated-token-1")); got != http.StatusUnauthorized {
		t.Errorf("previous token after rewrite: %d, want 401", got)
	}
	if got := post(t, url, auth("rotated-token-22")); got != http.StatusOK {
		t.Errorf("token after rewrite: %d, want 200", got)
	}

	// Unusable files refuse everything, with or without the token.
	steps := []struct {
		name string
		do   func() error
	}{
		{"group-readable", func() error { return os.Chmod(path, 0o640) }},
		{"empty", func() error {
			if err := os.Chmod(path, 0o600); err != nil {
				return err
			}
			return os.WriteFile(path, nil, 0o600)
		}},
		{"removed", func() error { return os.Remove(path) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		for _, hdr := range []map[string]string{nil, auth("rotated-token-22"), auth("")} {
			if got := post(t, url, hdr); got == http.StatusOK || got < 400 {
				t.Errorf("%s token file, header %v: status %d, want a refusal", s.name, hdr, got)
			}
		}
	}
	waitLog(t, state, regexp.MustCompile(`level=ERROR msg="http token file unusable.*mode 0640 lets group or others read or write it; run chmod 600`))
	if err := os.WriteFile(path, []byte("fixed-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := post(t, url, auth("fixed-token")); got != http.StatusOK {
		t.Errorf("token after the fix: %d, want 200", got)
	}
	if hivetest.DaemonPid(state) != pid {
		t.Errorf("the daemon restarted")
	}
}

// A token file that is not private, not a regular file, or empty keeps
// the daemon from starting, with an error naming the file and the fix.
func TestHTTPTokenFileRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, state string) (path string, args []string)
		want  []string // in the error, with PATH for the file
	}{
		{"group-readable --http-token-file", func(t *testing.T, state string) (string, []string) {
			p := filepath.Join(t.TempDir(), "tok")
			os.WriteFile(p, []byte("tok\n"), 0o600)
			os.Chmod(p, 0o640)
			return p, []string{"--http-token-file", p}
		}, []string{`--http-token-file "PATH"`, "mode 0640", `chmod 600 "PATH"`}},
		{"world-writable generated file", func(t *testing.T, state string) (string, []string) {
			p := filepath.Join(state, "http-token")
			os.WriteFile(p, []byte("tok\n"), 0o600)
			os.Chmod(p, 0o602)
			return p, nil
		}, []string{`"PATH"`, "mode 0602", `chmod 600 "PATH"`}},
		{"directory", func(t *testing.T, state string) (string, []string) {
			p := t.TempDir()
			return p, []string{"--http-token-file", p}
		}, []string{`"PATH"`, "not a regular file"}},
		{"empty", func(t *testing.T, state string) (string, []string) {
			p := filepath.Join(t.TempDir(), "tok")
			os.WriteFile(p, nil, 0o600)
			return p, []string{"--http-token-file", p}
		}, []string{`"PATH"`, "empty"}},
		{"symlink as generated file", func(t *testing.T, state string) (string, []string) {
			target := filepath.Join(t.TempDir(), "tok")
			os.WriteFile(target, []byte("tok\n"), 0o600)
			p := filepath.Join(state, "http-token")
			hivetest.Symlink(t, target, p)
			return p, nil
		}, []string{`"PATH"`, "not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := hivetest.StateDir(t)
			path, args := tt.setup(t, state)
			out, code := daemonMustFail(t, state, append([]string{"--http", freePort(t)}, args...)...)
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "PATH", path); !strings.Contains(out, w) {
					t.Errorf("exit %d, output %q: want %q", code, out, w)
				}
			}
		})
	}
}

func TestHTTPRefusesNonLoopbackWithoutToken(t *testing.T) {
	state := hivetest.StateDir(t)
	out, _ := daemonMustFail(t, state, "--http", "0.0.0.0:0")
	if !strings.Contains(out, "loopback") || !strings.Contains(out, "--http-token-file") {
		t.Errorf("non-loopback without token: %q", out)
	}
}

func TestHTTPNoAuth(t *testing.T) {
	t.Run("non-loopback refused", func(t *testing.T) {
		out, _ := daemonMustFail(t, hivetest.StateDir(t), "--http", "0.0.0.0:0", "--http-no-auth")
		if !strings.Contains(out, "--http-no-auth") || !strings.Contains(out, "loopback") {
			t.Errorf("output %q: want the flag and the loopback rule", out)
		}
	})
	t.Run("with a token file is a usage error", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "tok")
		os.WriteFile(p, []byte("tok\n"), 0o600)
		out, code := daemonMustFail(t, hivetest.StateDir(t), "--http", freePort(t), "--http-no-auth", "--http-token-file", p)
		if code != 2 || !strings.Contains(out, "--http-no-auth and --http-token-file") {
			t.Errorf("exit %d, output %q: want a usage error (2) naming both flags", code, out)
		}
	})
	t.Run("loopback serves without a token", func(t *testing.T) {
		state := hivetest.StateDir(t)
		addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--http-no-auth")
		if got := post(t, "http://"+addr+"/mcp", nil); got != http.StatusOK {
			t.Errorf("no auth: %d", got)
		}
		if got := post(t, "http://"+addr+"/mcp", map[string]string{"Host": "evil.example"}); got != http.StatusForbidden {
			t.Errorf("no auth, foreign Host: %d, want 403", got)
		}
		if _, err := os.Stat(filepath.Join(state, "http-token")); !os.IsNotExist(err) {
			t.Errorf("a token was generated with --http-no-auth: %v", err)
		}
		out, _ := hivetest.Run(t, state, "version", "--json")
		if !strings.Contains(out, `"daemon_http_auth":"none"`) || strings.Contains(out, "token_file") {
			t.Errorf("version --json %q: want auth none and no token file", out)
		}
		waitLog(t, state, regexp.MustCompile(`level=WARN msg="http without authentication \(--http-no-auth\)`))
	})
}

func TestHTTPUnknownGroup(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	a := do(t, "POST", "http://"+addr+"/mcp?groups=execution,bogus", auth(httpToken(t, state)), initBody)
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, `"bogus"`) {
		t.Errorf("status %d body %q: want 400 naming the group", a.status, a.body)
	}
}

// A body that does not arrive within --http-read-timeout gets 408.
func TestHTTPSlowBody(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--http-read-timeout", "500ms")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"js", addr, httpToken(t, state))
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "--http-read-timeout") {
		t.Errorf("status %d %q: want 408 naming --http-read-timeout", resp.StatusCode, b)
	}
}

// A refused request that announces a body it never sends (no token, a
// foreign Host) is answered at once and its connection closed: it cannot
// hold one of the few connections the daemon serves, not even a minute.
func TestHTTPRefusedRequestHoldsNoConnection(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--http-max-conns", "2", "--http-read-timeout", "30s")
	for _, hdr := range []string{"Host: " + addr, "Host: evil.example"} {
		var conns []net.Conn
		for range 2 { // every connection the daemon serves
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\n%s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", hdr)
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s: no answer to a refused request with an unsent body: %v", hdr, err)
			}
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden || !resp.Close {
				t.Errorf("%s: status %d, close %v: want 401 or 403 and the connection closed", hdr, resp.StatusCode, resp.Close)
			}
			c.Close()
		}
		// The daemon serves others at once.
		if code := post(t, "http://"+addr+"/mcp", map[string]string{"Authorization": "Bearer " + httpToken(t, state)}); code != http.StatusOK {
			t.Errorf("after the refused requests: %d", code)
		}
	}
}

// Past --http-max-sessions a new session gets 503; ending one makes room.
func TestHTTPSessionLimit(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--http-max-sessions", "2", "--http-no-auth")
	url := "http://" + addr + "/mcp"
	var ids []string
	for i := range 2 {
		a := do(t, "POST", url, nil, initBody)
		if a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("session %d: %d %q", i, a.status, a.body)
		}
		ids = append(ids, a.header.Get("Mcp-Session-Id"))
	}
	a := do(t, "POST", url, nil, initBody)
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "--http-max-sessions") {
		t.Errorf("third session: %d %q, want 503 naming --http-max-sessions", a.status, a.body)
	}
	if a := do(t, "DELETE", url, map[string]string{"Mcp-Session-Id": ids[0]}, ""); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %q", a.status, a.body)
	}
	hivetest.Eventually(t, 10*time.Second, "a session after a DELETE", func() error {
		a := do(t, "POST", url, nil, initBody)
		switch a.status {
		case http.StatusOK:
			return nil
		case http.StatusServiceUnavailable:
			return fmt.Errorf("session after a DELETE: %d %q", a.status, a.body)
		}
		return hivetest.Abort(fmt.Errorf("session after a DELETE: %d %q", a.status, a.body))
	})
}

// Each HTTP session has its own id in the log: "http-" and 8 characters
// of its session id, never the whole id.
func TestHTTPSessionLogIDs(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	url := "http://" + addr + "/mcp"
	tok := httpToken(t, state)
	var ids []string
	for i := range 2 {
		cs := connectHTTP(t, url, tok)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": fmt.Sprintf("echo s%d", i)}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("run: %v %+v", err, res)
		}
		ids = append(ids, cs.ID())
		cs.Close()
	}
	if ids[0] == ids[1] || len(ids[0]) <= 8 {
		t.Fatalf("session ids %q", ids)
	}
	for i, id := range ids {
		short := regexp.QuoteMeta("http-" + id[:8])
		log := waitLog(t, state, regexp.MustCompile(`msg="mcp session closed" session=`+short))
		for _, re := range []string{
			`msg="mcp session open" session=` + short + ` transport=http`,
			`msg="tool call" session=` + short + ` tool=run args=` + regexp.QuoteMeta(fmt.Sprintf(`"{\"cmd\":\"echo s%d\"}"`, i)),
			`msg="tool done" session=` + short + ` tool=run`,
		} {
			if !regexp.MustCompile(re).MatchString(log) {
				t.Errorf("log has no line matching %s:\n%s", re, log)
			}
		}
		if strings.Contains(log, id) {
			t.Errorf("the log holds the whole session id %s", id)
		}
	}
}

// SIGTERM with an HTTP session open (its SSE stream too) and a tool call
// under way: the daemon closes the session and exits.
func TestHTTPStopWithOpenSession(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	cs := connectHTTP(t, "http://"+addr+"/mcp", httpToken(t, state))
	called := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"cmd": "sleep 3600", "wait_seconds": 30}})
		called <- err
	}()
	waitLog(t, state, regexp.MustCompile(`msg="tool call" session=http-\S+ tool=run`))
	pid := hivetest.DaemonPid(state)
	hivetest.Signal(pid, syscall.SIGTERM)
	hivetest.Eventually(t, 20*time.Second, "the daemon to exit on SIGTERM with an HTTP session open", hivetest.Gone(pid))
	<-called // answered or cut; either way the call ended
	if l := daemonLog(state); !strings.Contains(l, `msg="mcp session closed" session=http-`) {
		t.Errorf("no session closed line in the log:\n%s", l)
	}
}

// GET /api/state tells the agent's state, behind the same checks as /mcp.
func TestHTTPAPIState(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0", "--name", "builder")
	url := "http://" + addr + "/api/state"
	if a := do(t, "GET", url, nil, ""); a.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", a.status)
	}
	auth := map[string]string{"Authorization": "Bearer " + httpToken(t, state)}
	if a := do(t, "GET", url, map[string]string{"Authorization": auth["Authorization"], "Origin": "http://evil.example"}, ""); a.status != http.StatusForbidden {
		t.Errorf("foreign Origin: %d", a.status)
	}
	if a := do(t, "POST", url, auth, "{}"); a.status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", a.status)
	}
	s := hivetest.Connect(t, state, t.TempDir())
	s.MustCall("run", map[string]any{"cmd": "true"}, nil)
	s.MustCall("set_status", map[string]any{"text": "on it"}, nil)
	s.MustCall("remind", map[string]any{"message": "later", "delay_seconds": 3600}, nil)
	a := do(t, "GET", url, auth, "")
	var st struct {
		Name      string         `json:"name"`
		TurnState string         `json:"turn_state"`
		Status    string         `json:"status"`
		Jobs      map[string]int `json:"jobs"`
		LooseEnds struct {
			Reminders int `json:"reminders"`
		} `json:"loose_ends"`
		CompactPending bool `json:"compact_pending"`
	}
	if err := json.Unmarshal([]byte(a.body), &st); err != nil || a.status != http.StatusOK {
		t.Fatalf("GET /api/state: %d %q %v", a.status, a.body, err)
	}
	if st.Name != "builder" || st.TurnState != "idle" || st.Status != "on it" || st.Jobs["done"] != 1 || st.LooseEnds.Reminders != 1 {
		t.Errorf("state %+v", st)
	}
}

// Another local user gets nothing over loopback HTTP, even holding the
// token (or a dashboard cookie or login code): the daemon closes a
// loopback connection whose socket another uid owns. The same request as
// the daemon's user passes.
func TestHTTPRefusesOtherUID(t *testing.T) {
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
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	tok := httpToken(t, state)
	script := `import sys, urllib.request
req = urllib.request.Request("http://` + addr + `/api/state", headers={"Authorization": "Bearer ` + tok + `"})
try:
    print(urllib.request.urlopen(req, timeout=10).status)
except Exception as e:
    print("refused:", type(e).__name__)
`
	as := func(uid uint32) string {
		c := exec.Command(py, "-c", script)
		c.Dir = "/"
		c.Env = []string{"PATH=/usr/bin:/bin"}
		if uid != 0 {
			runAs(t, c, uid)
		}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("client as uid %d: %v %s", uid, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := as(0); got != "200" {
		t.Fatalf("the daemon's own user: %q, want 200", got)
	}
	if got := as(65534); !strings.HasPrefix(got, "refused:") {
		t.Fatalf("uid 65534 with the token: %q, want the connection refused", got)
	}
	waitLog(t, state, regexp.MustCompile(`refused an http connection from another user" remote=127\.0\.0\.1:\d+ uid=65534`))
}
