package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/proto"
)

// stallWrites is the file that stops a daemon's job record writes (see
// hiveMain): the daemon's writer waits from its next write on.
const stallWrites = "test-stall-job-writes"

// Row 23: a foreground command answered before its records were
// committed. A daemon that can no longer write a job record (its writer
// stalls) still answers terminal_exec calls whose jobs its holder keeps:
// the holder keeps each job's record and end until the daemon acks them.
// Killed with -9 then, before a record of those jobs is written, the
// daemon leaves them to the next one, which records each as answered:
// done, its exit code, its output's byte count.
func TestRow23AnsweredBeforeCommitted(t *testing.T) {
	if !holder.KeepsJobs() {
		t.Skip("row 23 skipped: the holder keeps no job a daemon starts here (HIVE_HOLDER_KEEP=off, or a kernel without pidfds for it): every answer waits for its record")
	}
	dir := newStateDir(t)
	d := startDaemon(t, dir)
	s := d.MCP()
	s.CallTimeout = 20 * time.Second
	// A first call starts the holder.
	var env struct {
		ExitCode *int   `json:"exit_code"`
		Pid      int    `json:"pid"`
		Stdout   string `json:"stdout"`
		Auto     bool   `json:"auto_backgrounded"`
	}
	s.MustCall("terminal_exec", map[string]any{"cmd": "true"}, &env)
	if err := os.WriteFile(filepath.Join(dir, stallWrites), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n := count(5, 50)
	type told struct {
		cmd  string
		exit int
		out  int64
	}
	var answered []told
	for i := range n {
		cmd := fmt.Sprintf("echo row23-%d-%d; exit %d", os.Getpid(), i, i%3)
		_, isErr, err := s.TryCall("terminal_exec", map[string]any{"cmd": cmd}, &env)
		if err != nil || isErr || env.ExitCode == nil || env.Auto {
			t.Fatalf("call %d of %d while no record is written: %v (tool error %v, %+v): a kept job's answer must not wait for its record", i+1, n, err, isErr, env)
		}
		answered = append(answered, told{cmd, *env.ExitCode, int64(len(env.Stdout))})
	}
	d.Kill()
	if err := os.Remove(filepath.Join(dir, stallWrites)); err != nil {
		t.Fatal(err)
	}

	d = startDaemon(t, dir)
	var recorded int
	byCmd := map[string]int{}
	check := func() error {
		resp, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true})
		if err != nil {
			return err
		}
		byCmd = map[string]int{}
		recorded = 0
		for _, a := range answered {
			for _, j := range resp.Jobs {
				if j.Cmd != a.cmd {
					continue
				}
				byCmd[a.cmd]++
				if j.State == "done" && j.ExitCode != nil && *j.ExitCode == a.exit && j.StdoutBytes == a.out {
					recorded++
				} else if j.State != "running" {
					return fmt.Errorf("%q was answered exit %d, %d bytes out; the next daemon has it %s exit %v, %d bytes (%s)",
						a.cmd, a.exit, a.out, j.State, deref(j.ExitCode), j.StdoutBytes, j.Error)
				}
			}
		}
		if recorded != len(answered) {
			return fmt.Errorf("%d of %d answered jobs recorded as answered", recorded, len(answered))
		}
		return nil
	}
	// The ends are recorded as the next daemon adopts the jobs.
	if err := hivetest.Wait(10*time.Second, check); err != nil {
		t.Fatal(err)
	}
	for c, k := range byCmd {
		if k != 1 {
			t.Errorf("%q: %d records, want 1", c, k)
		}
	}
	figure(t, 23, "a daemon whose job record writes stall: %d of %d terminal_exec calls answered (exit codes 0-2); after its kill -9 the next daemon has %d of %d recorded as answered (done, exit code, bytes), from the records the holder kept", len(answered), n, recorded, len(answered))
}
