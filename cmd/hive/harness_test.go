package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as the hive binary: with HIVE_E2E_MAIN set it
// runs main, so the bridge, the daemon it starts and the CLI are all real
// processes of this very code.
func TestMain(m *testing.M) {
	if os.Getenv("HIVE_E2E_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	// Under -race every process of this binary would sleep a second at
	// exit (GORACE atexit_sleep_ms: time for other threads to report);
	// the tests start hundreds. A race is still reported when it happens,
	// and its process still exits 66.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	code := m.Run()
	// Every goroutine the tests started has ended (the bridge's, the
	// daemons' and the CLI's run in processes of their own: this checks
	// the harness and the MCP client).
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// hive runs a hive subcommand as a real process and returns its stdout.
func hive(t *testing.T, state string, args ...string) (string, error) {
	t.Helper()
	cmd := hiveCmd(state, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func hiveCmd(state string, args ...string) *exec.Cmd {
	self, err := os.Executable() // absolute: commands may run in other directories
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "HIVE_E2E_MAIN=1", "HIVE_STATE_DIR="+state)
	return cmd
}

// stateDir makes a state dir whose daemon is stopped when the test ends.
func stateDir(t *testing.T) string {
	t.Helper()
	// Unix socket paths are short: keep it out of the long test temp path.
	dir, err := os.MkdirTemp("", "hive-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopDaemon(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// daemonPid reads the pid the running daemon wrote to its lock file.
func daemonPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "daemon.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func stopDaemon(t *testing.T, dir string) {
	// The daemon stops its jobs and its holder: a holder still there a
	// moment after a daemon's SIGTERM is a leak. A holder left by a
	// daemon that was killed stops its jobs on SIGTERM.
	if d, h := daemonPid(dir), holderPid(dir); d != 0 && processAlive(d) && h != 0 {
		syscall.Kill(d, syscall.SIGTERM)
		for deadline := time.Now().Add(25 * time.Second); processAlive(h) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if processAlive(h) {
			t.Errorf("the holder %d outlived its daemon's SIGTERM", h)
		}
	}
	for _, pid := range []int{daemonPid(dir), holderPid(dir)} {
		if pid == 0 || !processAlive(pid) {
			continue
		}
		syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(20 * time.Second)
		for processAlive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d of the state dir did not stop on SIGTERM", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// holderPid reads the pid the holder of the jobs wrote to its lock file.
func holderPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "holder.sock.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The file outlives its holder: only a live holder of this dir.
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !strings.Contains(string(cmdline), "holder\x00--state-dir\x00"+dir) {
		return 0
	}
	return pid
}

// events collects what the server pushes to a client.
type events struct {
	mu       sync.Mutex
	updated  []string
	logs     []string
	progress []string
	changed  chan struct{}
}

func (e *events) add(f func()) {
	e.mu.Lock()
	f()
	e.mu.Unlock()
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the collected events.
func (e *events) waitFor(t *testing.T, what string, cond func(updated, logs []string) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		e.mu.Lock()
		ok := cond(e.updated, e.logs)
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.changed:
		case <-deadline:
			e.mu.Lock()
			defer e.mu.Unlock()
			t.Fatalf("timed out waiting for %s; updated=%v logs=%v", what, e.updated, e.logs)
		}
	}
}

type session struct {
	t  *testing.T
	cs *mcp.ClientSession
	ev *events
}

// connect opens an MCP session through a real `hive mcp` bridge process
// whose working directory is cwd.
func connect(t *testing.T, state, cwd string, args ...string) *session {
	t.Helper()
	ev := &events{changed: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			ev.add(func() { ev.updated = append(ev.updated, r.Params.URI) })
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			ev.add(func() { ev.progress = append(ev.progress, r.Params.Message) })
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			b, _ := json.Marshal(r.Params.Data)
			ev.add(func() { ev.logs = append(ev.logs, string(b)) })
		},
	})
	cmd := hiveCmd(state, append([]string{"mcp"}, args...)...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect bridge: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &session{t: t, cs: cs, ev: ev}
}

// call calls a tool and decodes its structured content into out. It
// returns the text and whether the result is an error.
func (s *session) call(name string, args map[string]any, out any) (string, bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: protocol error: %v", name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatalf("%s: decode structured content %s: %v", name, b, err)
		}
	}
	return text, res.IsError
}

// mustCall is call that fails the test on a tool error.
func (s *session) mustCall(name string, args map[string]any, out any) string {
	s.t.Helper()
	text, isErr := s.call(name, args, out)
	if isErr {
		s.t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}

// startDaemon starts `hive daemon ARGS` for the state dir and returns once
// it answers on its socket, so no bridge starts a second one with other
// flags. The state dir's cleanup stops it.
func startDaemon(t *testing.T, state string, args ...string) {
	t.Helper()
	startDaemonCmd(t, state, hiveCmd(state, append([]string{"daemon"}, args...)...))
}

// startDaemonCmd is startDaemon with the command made by the caller.
func startDaemonCmd(t *testing.T, state string, d *exec.Cmd) {
	t.Helper()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	go d.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for daemonPid(state) != d.Process.Pid || !socketAnswers(state) {
		if time.Now().After(deadline) {
			t.Fatal("daemon did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func socketAnswers(state string) bool {
	c, err := net.Dial("unix", filepath.Join(state, "hive.sock"))
	if err != nil {
		return false
	}
	c.Close()
	return true
}
