//go:build unix

package bridge_test

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/bridge"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/paths"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runDaemon runs an in-process daemon on a new state dir; stop ends it
// and returns once it has (it is also called when the test ends).
func runDaemon(t *testing.T) (l paths.Layout, stop func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-b-") // a short socket path
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}
	t.Cleanup(func() {
		stop()
		os.RemoveAll(dir)
	})
	return paths.Layout{Dir: dir}, stop
}

// client is the MCP client's side of a bridge: the write end of its
// stdin and the read end of its stdout.
type client struct {
	in  *os.File
	out *bufio.Reader
}

// startBridge runs bridge.Run on new pipes (os.Pipe's, which take read
// deadlines) and returns the client's ends and Run's result to come.
func startBridge(t *testing.T, l paths.Layout, copyBytes bool) (*client, <-chan error) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- bridge.Run(bridge.Options{Layout: l, Exe: "/nonexistent/hive", Stdin: inR, Stdout: outW, Copy: copyBytes})
	}()
	// Only once the test has looked for Run's goroutines: a close would
	// end a read of stdin that Run left behind.
	t.Cleanup(func() {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
	})
	return &client{in: inW, out: bufio.NewReader(outR)}, done
}

// initialize sends an initialize request and returns the answer line.
func (c *client) initialize(t *testing.T) string {
	t.Helper()
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if _, err := c.in.WriteString(req); err != nil {
		t.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read the initialize answer: %v", err)
	}
	return line
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("bridge.Run did not return")
		return nil
	}
}

// A session through the bridge, forwarding bytes or handing its stdio to
// the daemon, ends without error when the client closes its stdin.
func TestBridgeSessionEndsWithStdin(t *testing.T) {
	for _, tt := range []struct {
		name      string
		copyBytes bool
	}{{"copy", true}, {"hand-off", false}} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := runDaemon(t)
			c, done := startBridge(t, l, tt.copyBytes)
			if got := c.initialize(t); !strings.Contains(got, `"id":1,"result":{`) || !strings.Contains(got, `"serverInfo":{"name":"hive"`) {
				t.Fatalf("initialize answer %s, want the server's result", got)
			}
			c.in.Close()
			if err := wait(t, done); err != nil {
				t.Errorf("Run after the client closed stdin: %v, want nil", err)
			}
		})
	}
}

// When the daemon stops under a session whose client is still there, Run
// says so, and its reader of stdin (blocked in a read) ends with it
// (goleak checks, before the test closes the pipes).
func TestBridgeSessionEndsWithTheDaemon(t *testing.T) {
	before := goleak.IgnoreCurrent()
	l, stop := runDaemon(t)
	c, done := startBridge(t, l, true)
	c.initialize(t)
	stop()
	err := wait(t, done)
	if err == nil || !strings.Contains(err.Error(), "the daemon stopped or died under the session") {
		t.Errorf("Run after the daemon stopped: %v, want the daemon stopped or died", err)
	}
	goleak.VerifyNone(t, before)
}
