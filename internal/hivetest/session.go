package hivetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session is an MCP client session with a hive daemon. It embeds the SDK's
// session (CallTool, ListTools, Subscribe, Close, Wait, ...) and records
// what the server pushes to it (WaitFor, Progress).
type Session struct {
	*mcp.ClientSession

	// CallTimeout bounds each Call, TryCall and MustCall. If it is zero,
	// a call may take 60 s.
	CallTimeout time.Duration

	tb testing.TB

	mu       sync.Mutex
	updated  []string      // URIs of resources/updated
	logs     []string      // the data of notifications/message, as JSON
	progress []string      // the messages of notifications/progress
	changed  chan struct{} // has a value after any of the three grew
}

// connectTimeout bounds the start of a session (the bridge's start, the
// daemon's if the bridge starts one, MCP's initialization).
const connectTimeout = 20 * time.Second

// Connect opens a session through a real `hive mcp ARGS` bridge process on
// state dir state, whose working directory is cwd (the session's commands
// run there). The bridge's stderr is the test's. See ConnectCmd.
func Connect(tb testing.TB, state, cwd string, args ...string) *Session {
	tb.Helper()
	cmd := Command(tb, state, append([]string{"mcp"}, args...)...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	return ConnectCmd(tb, cmd)
}

// ConnectCmd opens a session through cmd, not started, which must run
// `hive mcp` (Command's, changed as the caller needs). A failure to
// connect fails the test. When the test ends, the session is closed (and
// with it the bridge).
func ConnectCmd(tb testing.TB, cmd *exec.Cmd) *Session {
	tb.Helper()
	return ConnectTransport(tb, &mcp.CommandTransport{Command: cmd})
}

// ConnectTransport opens a session over t, e.g. an mcp.IOTransport on a
// connection to the daemon's socket. A failure to connect fails the test.
// When the test ends, the session is closed.
func ConnectTransport(tb testing.TB, t mcp.Transport) *Session {
	tb.Helper()
	s := &Session{tb: tb, changed: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "hivetest", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			s.add(&s.updated, r.Params.URI)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.add(&s.progress, r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(r.Params.Data)
			s.add(&s.logs, string(b))
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, t, nil)
	if err != nil {
		tb.Fatalf("connect an MCP session: %v", err)
	}
	s.ClientSession = cs
	tb.Cleanup(func() { cs.Close() })
	return s
}

func (s *Session) add(to *[]string, v string) {
	s.mu.Lock()
	*to = append(*to, v)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// pushTimeout bounds WaitFor.
const pushTimeout = 10 * time.Second

// WaitFor waits until cond holds over what the server has pushed so far:
// the URIs of its resources/updated notifications and the data (as JSON)
// of its log messages, oldest first. cond is called again after each new
// notification; 10 s without it holding fails the test (tb.Fatalf, so
// from the test's goroutine only), naming what. cond must not keep the
// slices.
func (s *Session) WaitFor(what string, cond func(updated, logs []string) bool) {
	s.tb.Helper()
	t := time.NewTimer(pushTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		ok := cond(s.updated, s.logs)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-t.C:
			s.mu.Lock()
			defer s.mu.Unlock()
			s.tb.Fatalf("timed out after %v waiting for %s; updated=%v logs=%v", pushTimeout, what, s.updated, s.logs)
		}
	}
}

// Progress is the messages of the progress notifications the server has
// sent so far, oldest first.
func (s *Session) Progress() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.progress...)
}

// TryCall calls tool name with args. It returns the result's text, and
// whether the result is an error (isError). Unless it is, its structured
// content is decoded into out (if out is not nil). A protocol error, or
// content that does not decode, is err. TryCall does not touch the test:
// it is safe in any goroutine.
func (s *Session) TryCall(name string, args map[string]any, out any) (text string, isErr bool, err error) {
	timeout := s.CallTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, fmt.Errorf("%s: protocol error: %w", name, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			return text, res.IsError, fmt.Errorf("%s: decode structured content %s: %w", name, b, err)
		}
	}
	return text, res.IsError, nil
}

// Call is TryCall that fails the test (tb.Fatalf, so from the test's
// goroutine only) on a protocol error or content that does not decode.
// A tool error is not one: isErr says it.
func (s *Session) Call(name string, args map[string]any, out any) (text string, isErr bool) {
	s.tb.Helper()
	text, isErr, err := s.TryCall(name, args, out)
	if err != nil {
		s.tb.Fatal(err)
	}
	return text, isErr
}

// MustCall is Call that fails the test on a tool error too, and returns
// the result's text.
func (s *Session) MustCall(name string, args map[string]any, out any) string {
	s.tb.Helper()
	text, isErr := s.Call(name, args, out)
	if isErr {
		s.tb.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}
