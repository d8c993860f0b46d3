package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/sockapi"
)

// runDaemon runs an in-process daemon on a new state dir until the test
// ends.
func runDaemon(t *testing.T, cfg Config) paths.Layout {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-d-")
	if err != nil {
		t.Fatal(err)
	}
	cfg.StateDir = dir
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		os.RemoveAll(dir)
	})
	return paths.Layout{Dir: dir}
}

// rawRequest writes b on a new socket connection and returns the answer
// line ("" if the daemon closed without one).
func rawRequest(t *testing.T, l paths.Layout, b []byte, closeWrite bool) string {
	t.Helper()
	c, err := net.Dial("unix", l.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		c.Write(b)
		if closeWrite {
			c.(*net.UnixConn).CloseWrite()
		}
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// Every first line on the socket gets an answer: an oversized one, a
// client that sends nothing (within the request timeout), one that is
// not JSON, one without its newline before the client half-closed.
func TestSocketAnswersEveryRequest(t *testing.T) {
	l := runDaemon(t, Config{RequestTimeout: 300 * time.Millisecond})
	// The oversized line goes to a daemon of the default timeout: 8 MiB
	// under -race on a loaded machine can take longer than 300 ms to
	// write, and then the timeout answered first.
	roomy := runDaemon(t, Config{})
	tests := []struct {
		name       string
		in         []byte
		closeWrite bool
		want       string
		roomy      bool
	}{
		{"oversized", []byte(`{"cmd":"todo","summary":"` + strings.Repeat("x", sockapi.MaxRequestLine) + "\"}\n"), false, fmt.Sprintf("request line longer than %d bytes", sockapi.MaxRequestLine), true},
		{"idle", nil, false, "no complete line within 300ms", false},
		{"half a line then idle", []byte(`{"cmd":"vers`), false, "no complete line within 300ms", false},
		{"not JSON", []byte("hello\n"), false, "request: not JSON", false},
		{"unknown", []byte(`{"cmd":"nope"}` + "\n"), false, `unknown command`, false},
		{"last line without newline", []byte(`{"cmd":"version"}`), true, `"ok":true`, false},
		{"NUL in argv", []byte(`{"cmd":"run","argv":["ls","/etc/pass\u0000wd"]}` + "\n"), false, "argv[1]: contains a NUL byte", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := l
			if tt.roomy {
				to = roomy
			}
			line := rawRequest(t, to, tt.in, tt.closeWrite)
			var resp proto.Response
			if err := json.Unmarshal([]byte(line), &resp); err != nil {
				t.Fatalf("answer %q: %v", line, err)
			}
			if !strings.Contains(line, tt.want) {
				t.Errorf("answer %s, want %q", line, tt.want)
			}
		})
	}
	// The daemon is still there.
	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdVersion}); err != nil {
		t.Fatal(err)
	}
}
