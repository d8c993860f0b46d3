package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// fuzzDaemon is the one daemon of a fuzz process, started at the first
// input (sync.Once) and stopped when the fuzz target ends.
var fuzzDaemon struct {
	once   sync.Once
	l      paths.Layout
	err    error
	cancel context.CancelFunc
	done   chan error
}

// startFuzzDaemon starts the daemon: in a temp dir (short: it holds the
// socket), with /bin/true as the job shell, so a fuzzed run request
// never executes anything.
func startFuzzDaemon() {
	dir, err := os.MkdirTemp("", "hive-fz-")
	if err != nil {
		fuzzDaemon.err = err
		return
	}
	fuzzDaemon.l = paths.Layout{Dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Shell: []string{"/bin/true"},
			Grace: time.Second, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
		fuzzDaemon.cancel, fuzzDaemon.done = cancel, done
	case err := <-done:
		cancel()
		fuzzDaemon.err = err
	}
}

func stopFuzzDaemon(tb testing.TB) {
	if fuzzDaemon.cancel == nil {
		return
	}
	fuzzDaemon.cancel()
	select {
	case err := <-fuzzDaemon.done:
		if err != nil {
			tb.Errorf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		tb.Errorf("daemon did not stop within 20 s")
	}
	os.RemoveAll(fuzzDaemon.l.Dir)
}

// maxFuzzLine bounds the request line FuzzSocketRequest sends (the
// daemon's own limit, 8 MiB, is not what this target is about).
const maxFuzzLine = 64 << 10

// FuzzSocketRequest sends one fuzzed first line on a fresh socket
// connection, half-closes it and reads to the end: the daemon answers
// with one JSON line, a proto.Response that is ok or has an error, and
// nothing more, except after an ok mcp or logs answer, whose bytes may
// follow until the daemon closes the connection. Only the input up to
// its first newline is sent, so an mcp request never carries JSON-RPC.
// Afterwards a version request on a new connection answers within 2 s.
func FuzzSocketRequest(f *testing.F) {
	for _, s := range []string{
		`{"cmd":"version"}`, `{"cmd":"stats"}`, `{"cmd":"ps","all":true}`, `{"cmd":"run","argv":["echo","hi"]}`,
		`{"cmd":"run","argv":["x"],"cwd":"/nonexistent","timeout_secs":-1}`, `{"cmd":"run","argv":[],"name":"Bad Name"}`,
		`{"cmd":"kill","id":"nosuch"}`, `{"cmd":"logs","id":"nosuch","follow":true}`, `{"cmd":"status","id":""}`,
		`{"cmd":"todo","subsystem":"s","key":"k","summary":"x"}`, `{"cmd":"wake","from":"me","body":"hi"}`,
		`{"cmd":"clear_todo","subsystem":"s","key":"k"}`, `{"cmd":"todo_ls"}`, `{"cmd":"inbox_ls"}`,
		`{"cmd":"inbox_next"}`, `{"cmd":"inbox_next","wait":true,"timeout_secs":0.5}`, `{"cmd":"inbox_ack","id":1}`,
		`{"cmd":"inbox_ack","id":"x"}`, `{"cmd":"turn","state":"thinking","context_usage":0.5}`, `{"cmd":"graceful_stop"}`,
		`{"cmd":"mcp","groups":["nosuch"]}`, `{"cmd":"mcp","stdio":true}`, `{"cmd":"mcp"}`,
		`{"cmd":""}`, `null`, `[]`, `{"cmd":5}`, `{`, "", "\xff\xfe", `{"cmd":"version"}{"cmd":"stats"}`,
		`{"cmd":"logs","id":"x"}` + "\n" + `{"jsonrpc":"2.0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Cleanup(func() { stopFuzzDaemon(f) })
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzDaemon.once.Do(startFuzzDaemon)
		if fuzzDaemon.err != nil {
			t.Fatalf("start daemon: %v", fuzzDaemon.err)
		}
		l := fuzzDaemon.l
		line := in
		if len(line) >= maxFuzzLine {
			line = line[:maxFuzzLine-1]
		}
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		} else {
			line = append(line[:len(line):len(line)], '\n')
		}
		if r := (proto.Request{}); json.Unmarshal(line, &r) == nil && r.Cmd == proto.CmdStop {
			t.Skip("stop ends the daemon under test")
		}
		got, err := roundTrip(l, line, 20*time.Second)
		if err != nil {
			t.Fatalf("request %q: %v (got %q)", line, err, clipBytes(got))
		}
		first, rest, ok := bytes.Cut(got, []byte("\n"))
		if !ok {
			t.Fatalf("request %q: answer %q is not a line", line, clipBytes(got))
		}
		var resp proto.Response
		if err := json.Unmarshal(first, &resp); err != nil {
			t.Fatalf("request %q: answer %q: %v", line, clipBytes(first), err)
		}
		if !resp.OK && resp.Error == "" {
			t.Fatalf("request %q: answer %q: neither ok nor an error", line, first)
		}
		var req proto.Request
		streams := json.Unmarshal(line, &req) == nil && resp.OK && (req.Cmd == proto.CmdMCP || req.Cmd == proto.CmdLogs)
		if len(rest) > 0 && !streams {
			t.Fatalf("request %q: answer %q followed by %q", line, first, clipBytes(rest))
		}
		v, err := roundTrip(l, []byte(`{"cmd":"version"}`+"\n"), 2*time.Second)
		if err != nil {
			t.Fatalf("after request %q: version: %v", line, err)
		}
		if err := json.Unmarshal(bytes.TrimSpace(v), &resp); err != nil || !resp.OK {
			t.Fatalf("after request %q: version answer %q", line, v)
		}
	})
}

// roundTrip writes line on a new connection, half-closes it and reads
// until the daemon closes it, all within timeout.
func roundTrip(l paths.Layout, line []byte, timeout time.Duration) ([]byte, error) {
	c, err := net.DialTimeout("unix", l.Socket(), timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(line); err != nil {
		return nil, err
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return nil, err
	}
	got, err := io.ReadAll(bufio.NewReader(c))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return got, errors.New("no end of the answer within " + timeout.String())
	}
	return got, err
}

func clipBytes(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}
