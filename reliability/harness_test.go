package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

	"github.com/hivetools/hive/internal/cli"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

var full = flag.Bool("full", false, "run every row at its full count (docs/reliability.md)")

// The test binary doubles as hive: with HIVE_RELIABILITY_MAIN=1 it runs
// the CLI, so every daemon and bridge here is a real process of this tree.
func TestMain(m *testing.M) {
	if os.Getenv("HIVE_RELIABILITY_MAIN") == "1" {
		exe, _ := os.Executable()
		err := cli.Run(context.Background(), cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Exe: exe}, os.Args[1:])
		switch {
		case err == nil:
			os.Exit(0)
		case errors.Is(err, cli.ErrUsage):
			fmt.Fprintln(os.Stderr, "hive:", err)
			os.Exit(2)
		default:
			fmt.Fprintln(os.Stderr, "hive:", err)
			os.Exit(1)
		}
	}
	flag.Parse()
	os.Exit(m.Run())
}

// count is small in CI and full with -full.
func count(small, fullCount int) int {
	if *full {
		return fullCount
	}
	return small
}

var reportMu sync.Mutex

// figure prints a row's figure. With HIVE_RELIABILITY_REPORT set it is
// also appended to that file (reliability/run.sh collects them there).
func figure(t *testing.T, row int, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("row %d: ", row) + fmt.Sprintf(format, args...)
	t.Log(line)
	if p := os.Getenv("HIVE_RELIABILITY_REPORT"); p != "" {
		reportMu.Lock()
		defer reportMu.Unlock()
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}

// hiveCmd is a hive subcommand of this tree for the state dir.
func hiveCmd(dir string, args ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "HIVE_RELIABILITY_MAIN=1", "HIVE_STATE_DIR="+dir)
	return cmd
}

// newStateDir makes a state dir (short: it holds a unix socket) that is
// removed when the test ends, after every process still carrying its
// job mark is killed by pid.
func newStateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-rel-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range marked(dir) {
			// Pinned, then checked again: the pid is still the marked one.
			if p, ok := proc.Pin(pid, func(proc.Stat) bool { return proc.HasEnv(pid, "HIVE_JOB_OWNER="+dir) }); ok {
				p.Signal(syscall.SIGKILL)
				p.Close()
			}
		}
		os.RemoveAll(dir)
	})
	return dir
}

// marked lists the live processes that carry the job mark of state dir
// dir (HIVE_JOB_OWNER=dir): processes of hive's jobs and shells.
func marked(dir string) []int {
	self := os.Getpid()
	var out []int
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self }) {
		if proc.HasEnv(st.Pid, "HIVE_JOB_OWNER="+dir) {
			out = append(out, st.Pid)
		}
	}
	return out
}

// daemon is one `hive daemon` process started by a test.
type daemon struct {
	t      *testing.T
	Dir    string
	Pid    int
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process was waited for
	err    error         // its exit, once exited is closed
}

// startDaemon starts `hive daemon ARGS` on dir and returns once it
// answers on its socket. Its stderr goes to dir/daemon.log. The test's
// cleanup stops it (SIGTERM, then SIGKILL).
func startDaemon(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	d, err := tryStartDaemon(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func tryStartDaemon(t *testing.T, dir string, args ...string) (*daemon, error) {
	t.Helper()
	cmd := hiveCmd(dir, append([]string{"daemon"}, args...)...)
	logf, err := os.OpenFile(filepath.Join(os.TempDir(), "hive-rel-"+filepath.Base(dir)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{t: t, Dir: dir, Pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { d.err = cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { d.Stop() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := d.Call(proto.Request{Cmd: proto.CmdVersion})
		if err == nil && resp.PID == d.Pid {
			return d, nil
		}
		select {
		case <-d.exited:
			return nil, fmt.Errorf("daemon exited at start (%v); log:\n%s", d.err, d.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("daemon did not answer within 20 s; log:\n%s", d.Log())
		}
	}
}

// Log is what the daemon wrote to its stderr.
func (d *daemon) Log() string {
	b, _ := os.ReadFile(filepath.Join(os.TempDir(), "hive-rel-"+filepath.Base(d.Dir)+".log"))
	return string(b)
}

// Stop ends the daemon with SIGTERM (SIGKILL after 30 s) and waits; then
// the holder of the jobs, if one is left (a daemon killed with -9 leaves
// it running its jobs).
func (d *daemon) Stop() {
	defer d.stopHolder()
	select {
	case <-d.exited:
		return
	default:
	}
	syscall.Kill(d.Pid, syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.t.Errorf("daemon %d did not stop on SIGTERM within 30 s", d.Pid)
		syscall.Kill(d.Pid, syscall.SIGKILL)
		<-d.exited
	}
}

// stopHolder ends the state dir's holder of the jobs, if it runs (by
// the pid in its lock file, checked to be this dir's holder).
func (d *daemon) stopHolder() {
	b, err := os.ReadFile(filepath.Join(d.Dir, "holder.sock.lock"))
	if err != nil {
		return
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	isHolder := func() bool {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return pid > 0 && strings.Contains(string(cmdline), "holder\x00--state-dir\x00"+d.Dir)
	}
	if !isHolder() {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(30 * time.Second); isHolder(); {
		if time.Now().After(deadline) {
			d.t.Errorf("holder %d did not stop on SIGTERM within 30 s", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill9 kills the daemon with SIGKILL and waits for it.
func (d *daemon) Kill9() {
	syscall.Kill(d.Pid, syscall.SIGKILL)
	<-d.exited
}

// Call sends one socket request.
func (d *daemon) Call(req proto.Request) (proto.Response, error) {
	return client.Call(paths.Layout{Dir: d.Dir}, req)
}

// Stats reads the daemon's own figures.
func (d *daemon) Stats() proto.Stats {
	d.t.Helper()
	resp, err := d.Call(proto.Request{Cmd: proto.CmdStats})
	if err != nil || resp.Stats == nil {
		d.t.Fatalf("stats: %v", err)
	}
	return *resp.Stats
}

// Settled waits until the daemon runs no job and has no child, then
// returns its figures.
func (d *daemon) Settled() proto.Stats {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := d.Stats()
		if st.JobsRunning == 0 && st.Children == 0 {
			return st
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("daemon did not settle within 30 s: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CheckBaseline is row 12: after a row, goroutines and open fds are back
// to the baseline taken before it, and no child is left unreaped. The
// daemon winds down asynchronously (sessions close, timers fire), so it
// waits up to 30 s for that.
func (d *daemon) CheckBaseline(base proto.Stats) {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := d.Stats()
		if st.Goroutines <= base.Goroutines && st.FDs <= base.FDs && st.Children == 0 && st.JobsRunning == 0 {
			d.t.Logf("row 12: back to baseline: %d goroutines (was %d), %d fds (was %d), 0 children", st.Goroutines, base.Goroutines, st.FDs, base.FDs)
			return
		}
		if time.Now().After(deadline) {
			d.t.Errorf("row 12: not back to baseline after 30 s: %d goroutines (baseline %d), %d fds (baseline %d), %d children (%d zombies), %d jobs running",
				st.Goroutines, base.Goroutines, st.FDs, base.FDs, st.Children, st.Zombies, st.JobsRunning)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mcpSession is an MCP client session on the daemon's socket.
type mcpSession struct {
	t  *testing.T
	cs *mcp.ClientSession
}

// MCP opens an MCP session over the daemon's socket (no bridge process).
func (d *daemon) MCP() *mcpSession {
	d.t.Helper()
	cwd, _ := os.Getwd()
	c, _, err := client.Open(paths.Layout{Dir: d.Dir}, proto.Request{Cmd: proto.CmdMCP, Cwd: cwd})
	if err != nil {
		d.t.Fatalf("open mcp session: %v", err)
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: "reliability", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mc.Connect(ctx, &mcp.IOTransport{Reader: c, Writer: c}, nil)
	if err != nil {
		c.Close()
		d.t.Fatalf("mcp connect: %v", err)
	}
	d.t.Cleanup(func() { cs.Close() })
	return &mcpSession{t: d.t, cs: cs}
}

// Close ends the session.
func (s *mcpSession) Close() { s.cs.Close() }

// Call calls a tool, decodes its structured content into out (unless the
// result is an error) and returns its text. A protocol error is err.
func (s *mcpSession) Call(name string, args map[string]any, out any) (text string, isErr bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			return text, res.IsError, fmt.Errorf("%s: decode %s: %w", name, b, err)
		}
	}
	return text, res.IsError, nil
}

// MustCall is Call that fails the test on any error.
func (s *mcpSession) MustCall(name string, args map[string]any, out any) string {
	s.t.Helper()
	text, isErr, err := s.Call(name, args, out)
	if err != nil {
		s.t.Fatalf("%s(%v): %v", name, args, err)
	}
	if isErr {
		s.t.Fatalf("%s(%v): tool error: %s", name, args, text)
	}
	return text
}

// task is the structured answer of run and status.
type task struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	ExitCode   *int   `json:"exit_code"`
	Error      string `json:"error"`
	DurationMs int64  `json:"duration_ms"`
	StdoutTail string `json:"stdout_tail"`
	Leftover   int    `json:"leftover_processes"`
	StdoutB    int64  `json:"stdout_bytes"`
	StderrB    int64  `json:"stderr_bytes"`
	StdoutDrop int64  `json:"stdout_dropped"`
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, ok := proc.Read(pid)
	return ok && st.Alive()
}

// readPids parses whitespace-separated pids.
func readPids(s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
