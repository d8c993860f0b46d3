package hivetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Daemon is one `hive daemon` process a test started (StartDaemon).
type Daemon struct {
	// Dir is its state dir.
	Dir string
	// Pid is its pid.
	Pid int

	tb       testing.TB
	cmd      *exec.Cmd
	log      string        // the file its output goes to; "" if the caller's
	exited   chan struct{} // closed once cmd.Wait has returned
	err      error         // what cmd.Wait returned, set before exited is closed
	stopOnce sync.Once
}

// How long StartDaemon waits for a daemon to answer, and Stop for it to
// end on SIGTERM.
const (
	startTimeout      = 20 * time.Second
	daemonStopTimeout = 30 * time.Second
)

// StartDaemon starts `hive daemon ARGS` on state dir state and returns
// once it answers on its socket, so that no bridge or CLI starts another
// one with other flags. See StartDaemonCmd.
func StartDaemon(tb testing.TB, state string, args ...string) *Daemon {
	tb.Helper()
	return StartDaemonCmd(tb, state, Command(tb, state, append([]string{"daemon"}, args...)...))
}

// StartDaemonCmd starts cmd, which must run `hive daemon` on state dir
// state (directly, or through programs that exec it, so that its pid is
// the daemon's: Command's with more Env, `bash -c 'trap "" HUP; exec
// "$0" daemon' HIVE`), and returns once the daemon answers a version
// request on its socket with that pid. If the caller left cmd.Stdout and
// cmd.Stderr nil, both go to a log file of the harness (Log). The daemon's
// exit before it answers, or 20 s without an answer, fails the test
// (tb.Fatalf) with its log. When the test ends, Stop stops it, and the
// holder of its jobs must end with it (see Stop).
func StartDaemonCmd(tb testing.TB, state string, cmd *exec.Cmd) *Daemon {
	tb.Helper()
	d := &Daemon{Dir: state, tb: tb, cmd: cmd, exited: make(chan struct{})}
	if cmd.Stdout == nil && cmd.Stderr == nil {
		// Outside the state dir: some tests check what is in it.
		f, err := os.CreateTemp("", "hive-daemon-*.log")
		if err != nil {
			tb.Fatalf("hive daemon's log: %v", err)
		}
		defer f.Close() // the daemon has its own copy
		d.log = f.Name()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		if d.log != "" {
			os.Remove(d.log)
		}
		tb.Fatalf("start hive daemon on %s: %v", state, err)
	}
	d.Pid = cmd.Process.Pid
	go func() { d.err = cmd.Wait(); close(d.exited) }()
	tb.Cleanup(func() {
		// A daemon stopped at the test's end stops the holder of its jobs
		// with it: one still there 25 s later is a leak.
		holder := 0
		select {
		case <-d.exited:
		default:
			holder = HolderPid(state)
		}
		d.Stop()
		if holder != 0 {
			if err := Wait(holderStopTimeout, Gone(holder)); err != nil {
				tb.Errorf("the holder %d outlived its daemon %d's SIGTERM: %v", holder, d.Pid, err)
			}
		}
		if d.log != "" {
			os.Remove(d.log)
		}
	})
	err := Wait(startTimeout, func() error {
		select {
		case <-d.exited:
			return Abort(fmt.Errorf("it exited (%v)", d.err))
		default:
		}
		pid, err := versionPid(state)
		if err != nil {
			return err
		}
		if pid != d.Pid {
			return fmt.Errorf("its socket answers for daemon %d", pid)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("hive daemon %d on %s did not come up: %v; its log:\n%s", d.Pid, state, err, d.Log())
	}
	return d
}

// versionPid asks the daemon on state's socket for its pid (the socket
// protocol's version request, docs/socket-protocol.md).
func versionPid(state string) (int, error) {
	c, err := net.DialTimeout("unix", filepath.Join(state, "hive.sock"), 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(`{"cmd":"version"}` + "\n")); err != nil {
		return 0, fmt.Errorf("send the version request: %w", err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("read the answer to version: %w", err)
	}
	var resp struct {
		OK    bool   `json:"ok"`
		Pid   int    `json:"pid"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return 0, fmt.Errorf("the answer to version %q: %w", line, err)
	}
	if !resp.OK {
		return 0, fmt.Errorf("version refused: %s", resp.Error)
	}
	return resp.Pid, nil
}

// Stop ends the daemon and waits for it: SIGTERM, then SIGKILL after 30 s,
// which fails the test (tb.Errorf). It returns what waiting for the daemon
// returned (nil: it exited 0). It may be called more than once, also after
// Kill. Stop does not wait for the holder of the daemon's jobs, which
// ends by itself once it has handed over what it holds (or stays with
// what it could not, e.g. ends a daemon on a full disk could not record,
// for the next daemon). If the daemon still runs when the test ends, the
// test's cleanup stops it, and then checks that its holder ends within
// 25 s (tb.Errorf).
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() {
		select {
		case <-d.exited:
			return
		default:
		}
		d.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(daemonStopTimeout)
		defer t.Stop()
		select {
		case <-d.exited:
		case <-t.C:
			d.tb.Errorf("hive daemon %d did not stop on SIGTERM within %v", d.Pid, daemonStopTimeout)
			d.cmd.Process.Kill()
			<-d.exited
		}
	})
	<-d.exited
	return d.err
}

// Kill kills the daemon with SIGKILL and waits for it. The holder of its
// jobs, if it has one, goes on (the state dir's cleanup ends it).
func (d *Daemon) Kill() {
	d.cmd.Process.Kill()
	<-d.exited
}

// Log is what the daemon wrote to its stdout and stderr so far; "" if the
// caller of StartDaemonCmd sent them elsewhere.
func (d *Daemon) Log() string {
	if d.log == "" {
		return ""
	}
	b, _ := os.ReadFile(d.log)
	return string(b)
}
