package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// The hive binary is built on first use (hivetest.Main's build mode):
// plain `go test ./...` (no -bench) never builds or starts anything.
func TestMain(m *testing.M) {
	hivetest.Main(m, nil)
}

// daemon is a `hive daemon` started by a benchmark in its own state dir.
type daemon struct {
	*hivetest.Daemon
	// holderPID is the holder of the jobs (hivetest.HolderPid once the
	// daemon answers), 0 when the daemon runs its jobs itself
	// (--hold-jobs=false, or not Linux).
	holderPID int
	stopOnce  sync.Once
}

// daemonArgsEnv names the environment variable whose fields (split at
// spaces) startDaemon adds to every `hive daemon` command line, e.g.
// HIVE_BENCH_DAEMON_ARGS=--hold-jobs=false to measure the daemon running its
// jobs itself.
const daemonArgsEnv = "HIVE_BENCH_DAEMON_ARGS"

// startDaemon starts `hive daemon` in a fresh state dir, with the
// arguments of HIVE_BENCH_DAEMON_ARGS, and waits until it answers.
// Cleanup stops it (stop) and removes the state dir. A prefix runs the
// daemon through a command that execs it (as `nohup` would), so the pid
// stays the daemon's.
func startDaemon(b *testing.B, prefix ...string) *daemon {
	b.Helper()
	return startDaemonArgs(b, prefix, strings.Fields(os.Getenv(daemonArgsEnv)))
}

// startDaemonArgs is startDaemon with the daemon's own arguments given
// (HIVE_BENCH_DAEMON_ARGS is not read).
func startDaemonArgs(b *testing.B, prefix, args []string) *daemon {
	b.Helper()
	dir := hivetest.StateDir(b)
	cmd := hivetest.Command(b, dir, append([]string{"daemon"}, args...)...)
	if len(prefix) > 0 {
		env := cmd.Env
		cmd = exec.Command(prefix[0], append(slices.Clone(prefix[1:]), cmd.Args...)...)
		cmd.Env = env
	}
	d := &daemon{Daemon: hivetest.StartDaemonCmd(b, dir, cmd)}
	d.holderPID = hivetest.HolderPid(dir)
	b.Cleanup(func() { d.stop(b) })
	return d
}

// stop stops the daemon (SIGTERM, hivetest.Daemon.Stop) and fails b if
// it did not exit 0, with the end of its log. Only its first call checks.
func (d *daemon) stop(b *testing.B) {
	d.stopOnce.Do(func() {
		if err := d.Stop(); err != nil {
			log := d.Log()
			if len(log) > 8192 {
				log = log[len(log)-8192:]
			}
			b.Errorf("hive daemon exit after SIGTERM: %v; its log ends:\n%s", err, log)
		}
	})
}

// procStatusKiB reads a "Vm*" line of /proc/PID/status in KiB.
func procStatusKiB(pid int, field string) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s line", pid, field)
}

// procCPU is the user+system CPU time a process has used.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+2:])
	// f[0] is field 3; utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck, nil
}

// connectMCP opens one MCP session through a real `hive mcp` bridge
// process, its stderr in the state dir's bench-bridge.log. Cleanup closes
// the session, which ends the bridge.
func connectMCP(b *testing.B, d *daemon, args ...string) *mcp.ClientSession {
	b.Helper()
	logf, err := os.OpenFile(filepath.Join(d.Dir, "bench-bridge.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logf.Close() })
	cmd := hivetest.Command(b, d.Dir, append([]string{"mcp"}, args...)...)
	cmd.Stderr = logf
	sess := hivetest.ConnectCmd(b, cmd).ClientSession
	b.Cleanup(func() { // before the harness's own close, which would hide an error
		if err := sess.Close(); err != nil {
			b.Errorf("close MCP session: %v", err)
		}
	})
	return sess
}

// taskStatus is the part of the run/status structured result (tools.TaskStatus)
// the benchmarks check.
type taskStatus struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	ExitCode    *int   `json:"exit_code"`
	Error       string `json:"error"`
	DurationMs  int64  `json:"duration_ms"`
	StdoutPath  string `json:"stdout_path"`
	StderrPath  string `json:"stderr_path"`
	StdoutBytes int64  `json:"stdout_bytes"`
	Dropped     int64  `json:"stdout_dropped"`
}

func (s taskStatus) terminal() bool {
	switch s.Status {
	case "done", "timed_out", "killed", "interrupted", "failed":
		return true
	}
	return false
}

// decodeStatus turns a tool result into a taskStatus.
func decodeStatus(res *mcp.CallToolResult) (taskStatus, error) {
	var st taskStatus
	if res.IsError {
		msg := ""
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg += t.Text
			}
		}
		return st, fmt.Errorf("tool error: %s", msg)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("structured content %s: %w", raw, err)
	}
	return st, nil
}

// wantDone checks a job ended with status done and exit code 0.
func wantDone(st taskStatus) error {
	if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 0 {
		code := "nil"
		if st.ExitCode != nil {
			code = strconv.Itoa(*st.ExitCode)
		}
		return fmt.Errorf("task %s: status %q exit_code %s error %q, want done, 0", st.ID, st.Status, code, st.Error)
	}
	return nil
}

// rawSession is an MCP client with no SDK: it writes JSON-RPC lines to a
// `hive mcp` bridge and reads the answers. It measures hive's round trip
// without any client library's own decoding and scheduling.
type rawSession struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	r   *bufio.Reader
	id  int
	// sent is the length of the last answer's line as the bridge wrote it
	// (the JSON-RPC message, without the newline).
	sent      int
	closeOnce sync.Once
}

func connectRaw(b *testing.B, d *daemon, args ...string) *rawSession {
	b.Helper()
	return connectRawCmd(b, hivetest.Command(b, d.Dir, append([]string{"mcp"}, args...)...))
}

// connectRawCmd starts cmd, an MCP server on its stdin and stdout, and
// initializes a session with it. Cleanup closes its stdin and waits for
// it to exit.
func connectRawCmd(b *testing.B, cmd *exec.Cmd) *rawSession {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", cmd.Path, err)
	}
	s := &rawSession{cmd: cmd, in: in, r: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() { s.close(b) })
	if _, err := s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hive-bench-raw","version":"0"}}`); err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Fprint(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return s
}

// close closes the session's stdin and waits for its process to exit;
// only the first call does.
func (s *rawSession) close(b *testing.B) {
	s.closeOnce.Do(func() {
		s.in.Close()
		if err := s.cmd.Wait(); err != nil {
			b.Errorf("%s (raw client) exit: %v", s.cmd.Path, err)
		}
	})
}

// call sends one request and returns its result, skipping notifications.
func (s *rawSession) call(method, params string) (json.RawMessage, error) {
	s.id++
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params); err != nil {
		return nil, err
	}
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: read answer: %w", method, err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("%s: answer %q: %w", method, line, err)
		}
		if msg.ID == nil || *msg.ID != s.id {
			continue // a notification
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		s.sent = len(line) - 1
		return msg.Result, nil
	}
}
