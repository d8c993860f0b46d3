package reliability

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/store"
)

var full = flag.Bool("full", false, "run every row at its full count (docs/reliability.md)")

// The test binary doubles as hive (hivetest.Main): every daemon and
// bridge here is a real process of this tree.
func TestMain(m *testing.M) {
	hivetest.Main(m, hiveMain)
}

// hiveMain is cmd/hive's main, which a test cannot import: the CLI, its
// error turned into an exit code.
func hiveMain() {
	if dir := os.Getenv("HIVE_STATE_DIR"); dir != "" {
		// Row 23: a daemon whose state dir has this file writes no job
		// record from then on (its writer waits until it is killed); with
		// "pending" in it, none but the first records of detached jobs
		// (state pending), which come before anything starts.
		stall := filepath.Join(dir, stallWrites)
		store.BeforeJobWrite = func(jobs []store.Job) {
			b, err := os.ReadFile(stall)
			if err != nil {
				return
			}
			if string(b) != stallButPending {
				select {}
			}
			for _, j := range jobs {
				if j.State != "pending" {
					select {}
				}
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	err = cli.Run(context.Background(), cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Exe: exe}, os.Args[1:])
	os.Exit(cli.ExitCode(err, os.Stderr))
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

// newStateDir makes a state dir (hivetest.StateDir) that, once the
// test's end has stopped its daemon and holder and removed it, has every
// process still carrying its job mark killed by pid.
func newStateDir(t *testing.T) string {
	t.Helper()
	var dir string
	t.Cleanup(func() { // after StateDir's own: cleanups run last first
		for _, pid := range marked(dir) {
			// Pinned, then checked again: the pid is still the marked one.
			if p, ok := proc.Pin(pid, func(proc.Stat) bool { return proc.HasEnv(pid, "HIVE_JOB_OWNER="+dir) }); ok {
				p.Signal(syscall.SIGKILL)
				p.Close()
			}
		}
	})
	dir = hivetest.StateDir(t)
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

// noneMarked is a condition for hivetest.Wait: no live process carries
// the job mark of state dir dir.
func noneMarked(dir string) func() error {
	return func() error {
		if left := marked(dir); len(left) > 0 {
			return fmt.Errorf("processes of jobs left: %v", left)
		}
		return nil
	}
}

// daemon is one `hive daemon` process started by a test, with what the
// rows read of it through the socket protocol.
type daemon struct {
	*hivetest.Daemon
	t *testing.T
}

// startDaemon starts `hive daemon ARGS` on dir and returns once it
// answers on its socket (hivetest.StartDaemon: its output in Log, stopped
// when the test ends).
func startDaemon(t *testing.T, dir string, args ...string) *daemon {
	t.Helper()
	return &daemon{Daemon: hivetest.StartDaemon(t, dir, args...), t: t}
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
	var st proto.Stats
	hivetest.Eventually(d.t, 30*time.Second, "the daemon to settle", func() error {
		if st = d.Stats(); st.JobsRunning != 0 || st.Children != 0 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	return st
}

// CheckBaseline is row 12: after a row, goroutines and open fds are back
// to the baseline taken before it, and no child is left unreaped. The
// daemon winds down asynchronously (sessions close, timers fire), so it
// waits up to 30 s for that.
func (d *daemon) CheckBaseline(base proto.Stats) {
	d.t.Helper()
	var st proto.Stats
	if err := hivetest.Wait(30*time.Second, func() error {
		if st = d.Stats(); st.Goroutines > base.Goroutines || st.FDs > base.FDs || st.Children != 0 || st.JobsRunning != 0 {
			return fmt.Errorf("%d goroutines (baseline %d), %d fds (baseline %d), %d children (%d zombies), %d jobs running",
				st.Goroutines, base.Goroutines, st.FDs, base.FDs, st.Children, st.Zombies, st.JobsRunning)
		}
		return nil
	}); err != nil {
		d.t.Errorf("row 12: not back to baseline: %v", err)
		return
	}
	d.t.Logf("row 12: back to baseline: %d goroutines (was %d), %d fds (was %d), 0 children", st.Goroutines, base.Goroutines, st.FDs, base.FDs)
}

// MCP opens an MCP session over the daemon's socket (no bridge process).
// A call may take 120 s.
func (d *daemon) MCP() *hivetest.Session {
	d.t.Helper()
	cwd, _ := os.Getwd()
	c, _, err := client.Open(paths.Layout{Dir: d.Dir}, proto.Request{Cmd: proto.CmdMCP, Cwd: cwd})
	if err != nil {
		d.t.Fatalf("open mcp session: %v", err)
	}
	s := hivetest.ConnectTransport(d.t, &mcp.IOTransport{Reader: c, Writer: c})
	s.CallTimeout = 120 * time.Second
	return s
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
