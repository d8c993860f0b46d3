package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// env is a daemon run in the test's process (its jobs and PTY sessions
// are real processes), serving HTTP on a free loopback port.
type env struct {
	t      *testing.T
	state  string
	layout paths.Layout
	base   string // http://127.0.0.1:PORT
	token  string
	logf   *os.File
	stop   func()
}

// shortDir is a temp dir with a short path (a unix socket path is short).
func shortDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// start runs a daemon on state until the test ends (or e.stop).
func start(t *testing.T, state string) *env { return startAt(t, state, "127.0.0.1:0") }

// startAt is start with the HTTP address.
func startAt(t *testing.T, state, addr string) *env { return startWith(t, state, addr, nil) }

// startWith is startAt with a change to the daemon's configuration.
func startWith(t *testing.T, state, addr string, change func(*daemon.Config)) *env {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(state, "test-daemon.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	cfg := daemon.Config{StateDir: state, HTTPAddr: addr, Version: "test", Name: "builder",
		Logger: slog.New(slog.NewTextHandler(logf, nil)), Grace: 2 * time.Second, Ready: func() { close(ready) }}
	if change != nil {
		change(&cfg)
	}
	go func() { done <- daemon.Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon: %v", err)
	}
	e := &env{t: t, state: state, layout: paths.Layout{Dir: state}, logf: logf}
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
			logf.Close()
		})
	}
	t.Cleanup(e.stop)
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdVersion})
	if err != nil || resp.HTTPAddr == "" {
		t.Fatalf("version: %+v %v", resp, err)
	}
	e.base = "http://" + resp.HTTPAddr
	b, err := os.ReadFile(filepath.Join(state, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	e.token = strings.TrimSpace(string(b))
	return e
}

func (e *env) log() string {
	b, _ := os.ReadFile(filepath.Join(e.state, "test-daemon.log"))
	return string(b)
}

// loginURL is a one-time login URL, as `hive dashboard --print-url` prints.
func (e *env) loginURL() string {
	e.t.Helper()
	resp, err := client.Call(e.layout, proto.Request{Cmd: proto.CmdDashboard})
	if err != nil || resp.URL == "" {
		e.t.Fatalf("dashboard_url: %+v %v", resp, err)
	}
	return resp.URL
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   string
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("answer %d %q: %v", r.status, r.body, err)
	}
}

// call sends a request with the headers ("Host" sets the Host; the
// bearer token unless hdr has "Authorization", which "" removes).
func (e *env) call(method, path string, hdr map[string]string, body string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.base+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
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
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func (e *env) get(path string, v any) {
	e.t.Helper()
	r := e.call("GET", path, nil, "")
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	r.json(e.t, v)
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcp opens an MCP session over the daemon's HTTP front end.
func (e *env) mcp() *mcp.ClientSession {
	e.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "dashboard-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{e.token}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// tool calls a tool, which must succeed, and decodes its structured answer.
func tool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %v", name, res.Content)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
	}
}

// sse is an open event stream.
type sse struct {
	body io.Closer
	ch   chan sseEvent
}

type sseEvent struct{ id, typ, data string }

func (e *env) events(lastID string) *sse {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("events: %d %v", resp.StatusCode, resp.Header)
	}
	s := &sse{body: resp.Body, ch: make(chan sseEvent, 1024)}
	go func() {
		defer close(s.ch)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.typ != "" {
					s.ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			case strings.HasPrefix(line, ":"):
				s.ch <- sseEvent{typ: "comment"}
			}
		}
	}()
	e.t.Cleanup(s.close)
	return s
}

func (s *sse) close() {
	s.body.Close()
	for range s.ch {
	}
}

// next waits for the next event that match accepts.
func (s *sse) next(t *testing.T, match func(sseEvent) bool) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.ch:
			if !ok {
				t.Fatal("event stream ended")
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no matching event within 10 s")
		}
	}
}
