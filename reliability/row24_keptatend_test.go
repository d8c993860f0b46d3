//go:build linux

package reliability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

// Row 24: the daemon dies while a job's end is not yet kept anywhere. A
// job whose leader exits at once, before its fork returns, is kept with
// its end (holder protocol 6): until then the holder has only the cgroup
// it lent the job. Here the leader leaves a process that ignores SIGTERM,
// so the job's end waits out the leftover grace, and the daemon is
// killed (-9) within it. Nothing of the job may be left running: a
// holder that holds nothing ends, and its cgroups with it (round 1); one
// that runs a terminal session stays, and ends what is in the cgroups it
// lent the daemon that died (rounds 2 and 3). The next daemon runs jobs
// as before. Where jobs get no cgroups of their own it is skipped.
//
// (The daemon runs with HIVE_KEEP_AT_END=always: every job is kept so.)
func TestRow24KilledBeforeTheEndIsKept(t *testing.T) {
	// Which leaders end before their fork returns is the scheduler's to
	// say: the daemon keeps every job so (its leader ended or not).
	t.Setenv("HIVE_KEEP_AT_END", "always")
	dir := newStateDir(t)
	for round := range 3 {
		d := startDaemon(t, dir)
		if round == 0 {
			v, err := d.Call(proto.Request{Cmd: proto.CmdVersion})
			if err != nil {
				t.Fatal(err)
			}
			if v.EscapeTracking != proc.TrackCgroup && v.EscapeTracking != proc.TrackCgroupMarks {
				t.Skipf("jobs get no cgroups of their own here (escape tracking %q)", v.EscapeTracking)
			}
		}
		s := d.MCP()
		if round > 0 {
			// A terminal session the holder runs keeps it up once the
			// daemon is gone (else, holding nothing, it ends, and its
			// cgroups with it): it is the cgroup lent to the daemon
			// that ends the job's process then.
			var o ptyOpened
			s.MustCall("terminal_pty_open", nil, &o)
			if !o.Running {
				t.Fatalf("terminal_pty_open: %+v", o)
			}
		}
		before := map[int]bool{}
		for _, pid := range marked(dir) {
			before[pid] = true
		}
		pidFile := filepath.Join(t.TempDir(), "left")
		called := make(chan struct{})
		// The sleep ignores SIGTERM from its start (inherited): the
		// leader exits at once.
		go func() {
			defer close(called)
			// Fails once the daemon is killed: no answer is wanted.
			s.TryCall("terminal_exec", map[string]any{"cmd": "trap '' TERM; sleep 3600 & echo $! > " + pidFile}, nil)
		}()
		left := 0
		hivetest.Eventually(t, 10*time.Second, "the job's leader gone, the process it left running", func() error {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return err
			}
			if left, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				return err
			}
			var news []int
			for _, pid := range marked(dir) {
				if !before[pid] {
					news = append(news, pid)
				}
			}
			if len(news) != 1 || news[0] != left {
				return fmt.Errorf("new marked processes %v, want only %d", news, left)
			}
			return nil
		})
		d.Kill()
		hivetest.Eventually(t, 10*time.Second, fmt.Sprintf("round %d: the job's process %d ended after the daemon's kill -9", round+1, left), func() error {
			if st, ok := proc.Read(left); ok && st.Alive() && proc.HasEnv(left, "HIVE_JOB_OWNER="+dir) {
				return errors.New("it runs")
			}
			return nil
		})
		if round > 0 && hivetest.HolderPid(dir) == 0 {
			t.Errorf("round %d: the holder ended with the daemon, though it runs a terminal session", round+1)
		}
		<-called
	}
	d := startDaemon(t, dir)
	s := d.MCP()
	var env struct {
		Stdout   string `json:"stdout"`
		ExitCode *int   `json:"exit_code"`
	}
	s.MustCall("terminal_exec", map[string]any{"cmd": "echo after"}, &env)
	if strings.TrimSpace(env.Stdout) != "after" || env.ExitCode == nil || *env.ExitCode != 0 {
		t.Errorf("the next daemon's terminal_exec: %+v", env)
	}
}
