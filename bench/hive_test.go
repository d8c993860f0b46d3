package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hive binary is built once per test process, on first use: plain
// `go test ./...` (no -bench) never builds or starts anything.
var (
	buildOnce sync.Once
	binDir    string
	hiveBin   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// hiveBinary returns the path of a freshly built hive binary.
func hiveBinary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "hive-bench-bin-")
		if err != nil {
			buildErr = fmt.Errorf("create bin dir: %w", err)
			return
		}
		hiveBin = filepath.Join(binDir, "hive")
		cmd := exec.Command("go", "build", "-o", hiveBin, "./cmd/hive")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/hive: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return hiveBin
}

// moduleRoot is the directory holding go.mod: the parent of bench/.
func moduleRoot() (string, error) {
	dir, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("module root %q: %w", dir, err)
	}
	return dir, nil
}

// daemon is a `hive daemon` started by a benchmark in its own state dir.
type daemon struct {
	bin string
	dir string // state dir
	cmd *exec.Cmd
	pid int
	// holderPID is the holder of the jobs (`hive holder`, reported by
	// `hive version --json` as holder.pid), 0 when the daemon runs its
	// jobs itself (--hold-jobs=false, or not Linux).
	holderPID int
}

// daemonArgsEnv names the environment variable whose fields (split at
// spaces) startDaemon adds to every `hive daemon` command line, e.g.
// HIVE_BENCH_DAEMON_ARGS=--hold-jobs=false to measure the daemon running its
// jobs itself.
const daemonArgsEnv = "HIVE_BENCH_DAEMON_ARGS"

// startDaemon starts `hive daemon` in a fresh temp state dir, with the
// arguments of HIVE_BENCH_DAEMON_ARGS, and waits until `hive version` sees
// it. Cleanup stops it (SIGTERM, wait for exit) and removes the state dir.
// A prefix runs the daemon through a command that execs it (as `nohup`
// would), so the pid stays the daemon's.
func startDaemon(b *testing.B, prefix ...string) *daemon {
	b.Helper()
	return startDaemonArgs(b, prefix, strings.Fields(os.Getenv(daemonArgsEnv)))
}

// startDaemonArgs is startDaemon with the daemon's own arguments given
// (HIVE_BENCH_DAEMON_ARGS is not read).
func startDaemonArgs(b *testing.B, prefix, args []string) *daemon {
	b.Helper()
	bin := hiveBinary(b)
	// A short path: the socket path must fit in sun_path (108 bytes).
	dir, err := os.MkdirTemp("", "hive-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	logf, err := os.Create(filepath.Join(dir, "bench-daemon.log"))
	if err != nil {
		b.Fatal(err)
	}
	argv := append(append(slices.Clone(prefix), bin, "daemon", "--state-dir", dir), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.Fatalf("start hive daemon: %v", err)
	}
	logf.Close() // the child has its own copy
	d := &daemon{bin: bin, dir: dir, cmd: cmd}
	b.Cleanup(func() { d.stop(b) })

	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := d.version()
		if err == nil && v.DaemonPID == cmd.Process.Pid {
			d.pid = v.DaemonPID
			if v.Holder != nil {
				d.holderPID = v.Holder.Pid
			}
			return d
		}
		if err == nil {
			b.Fatalf("hive version reports daemon pid %d, want %d (another daemon on %s?)", v.DaemonPID, cmd.Process.Pid, dir)
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "bench-daemon.log"))
			b.Fatalf("daemon not answering after 10s: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// versionInfo is the part of `hive version --json` the benchmarks read.
type versionInfo struct {
	DaemonPID int `json:"daemon_pid"`
	Holder    *struct {
		Pid int `json:"pid"`
	} `json:"holder"`
}

// version runs `hive version --json`; no daemon answering is an error.
func (d *daemon) version() (versionInfo, error) {
	var v versionInfo
	out, err := exec.Command(d.bin, "version", "--json", "--state-dir", d.dir).Output()
	if err != nil {
		return v, fmt.Errorf("hive version: %w", err)
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return v, fmt.Errorf("hive version --json %q: %w", out, err)
	}
	if v.DaemonPID == 0 {
		return v, errors.New("no daemon answers yet")
	}
	return v, nil
}

// stop sends SIGTERM and waits for the daemon to exit (SIGKILL after 20 s).
func (d *daemon) stop(b *testing.B) {
	if d.cmd.Process == nil || d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(d.dir, "bench-daemon.log"))
			if len(log) > 8192 {
				log = log[len(log)-8192:]
			}
			b.Errorf("hive daemon exit after SIGTERM: %v; its log ends:\n%s", err, log)
		}
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		<-done
		b.Errorf("hive daemon did not exit 20 s after SIGTERM; killed")
	}
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
// process. Cleanup closes the session, which ends the bridge.
func connectMCP(b *testing.B, d *daemon, args ...string) *mcp.ClientSession {
	b.Helper()
	logf, err := os.OpenFile(filepath.Join(d.dir, "bench-bridge.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logf.Close() })
	cmd := exec.Command(d.bin, append([]string{"mcp", "--state-dir", d.dir}, args...)...)
	cmd.Stderr = logf
	c := mcp.NewClient(&mcp.Implementation{Name: "hive-bench", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("connect to hive mcp: %v", err)
	}
	b.Cleanup(func() {
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
	sent int
}

func connectRaw(b *testing.B, d *daemon, args ...string) *rawSession {
	b.Helper()
	cmd := exec.Command(d.bin, append([]string{"mcp", "--state-dir", d.dir}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start hive mcp: %v", err)
	}
	s := &rawSession{cmd: cmd, in: in, r: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("hive mcp (raw client) exit: %v", err)
		}
	})
	if _, err := s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hive-bench-raw","version":"0"}}`); err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Fprint(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return s
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
