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

// stallButPending, in stallWrites, lets the first records of detached
// jobs (state pending) through.
const stallButPending = "pending"

// row23Daemon starts row 23's daemon on a new state dir, with an MCP
// session whose calls wait 20 s at most; it skips the test where the
// holder keeps no job a daemon starts.
func row23Daemon(t *testing.T) (string, *daemon, *hivetest.Session) {
	t.Helper()
	if !holder.KeepsJobs() {
		t.Skip("row 23 skipped: the holder keeps no job a daemon starts here (HIVE_HOLDER_KEEP=off, or a kernel without pidfds for it): every answer waits for its record")
	}
	dir := newStateDir(t)
	d := startDaemon(t, dir)
	s := d.MCP()
	s.CallTimeout = 20 * time.Second
	return dir, d, s
}

// Row 23: a foreground command answered before its records were
// committed. A daemon that can no longer write a job record (its writer
// stalls) still answers terminal_exec calls whose jobs its holder keeps:
// the holder keeps each job's record and end until the daemon acks them.
// Killed with -9 then, before a record of those jobs is written, the
// daemon leaves them to the next one, which records each as answered:
// done, its exit code, its output's byte count.
func TestRow23AnsweredBeforeCommitted(t *testing.T) {
	dir, d, s := row23Daemon(t)
	n := count(5, 50)
	answered := execStalled(t, dir, s, n, "row23", 3)
	d.Kill()
	unstall(t, dir)
	// The ends are recorded as the next daemon adopts the jobs.
	recorded := awaitRecorded(t, startDaemon(t, dir), answered, 10*time.Second)
	figure(t, 23, "a daemon whose job record writes stall: %d of %d terminal_exec calls answered (exit codes 0-2); after its kill -9 the next daemon has %d of %d recorded as answered (done, exit code, bytes), from its journal and the records the holder kept", len(answered), n, recorded, len(answered))
}

// execTold is what a call answered of a job: its command (or its id, if
// set: the job is found by it), exit code (to come, for a start) and
// output's byte count.
type execTold struct {
	cmd  string
	id   string
	exit int
	out  int64
}

// execStalled has the daemon of dir stall its job record writes (a first
// call starts the holder before), then makes n terminal_exec calls on s,
// exit codes 0 to codes-1, each answered while nothing is written.
func execStalled(t *testing.T, dir string, s *hivetest.Session, n int, tag string, codes int) []execTold {
	t.Helper()
	var env struct {
		ExitCode *int   `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Auto     bool   `json:"auto_backgrounded"`
	}
	s.MustCall("terminal_exec", map[string]any{"cmd": "true"}, &env)
	if err := os.WriteFile(filepath.Join(dir, stallWrites), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var answered []execTold
	for i := range n {
		cmd := fmt.Sprintf("echo %s-%d-%d; exit %d", tag, os.Getpid(), i, i%codes)
		_, isErr, err := s.TryCall("terminal_exec", map[string]any{"cmd": cmd}, &env)
		if err != nil || isErr || env.ExitCode == nil || env.Auto {
			t.Fatalf("call %d of %d while no record is written: %v (tool error %v, %+v): a kept job's answer must not wait for its record", i+1, n, err, isErr, env)
		}
		answered = append(answered, execTold{cmd: cmd, exit: *env.ExitCode, out: int64(len(env.Stdout))})
	}
	return answered
}

// unstall lets the daemons of dir write their job records again.
func unstall(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, stallWrites)); err != nil {
		t.Fatal(err)
	}
}

// awaitRecorded waits up to wait until d has every job of answered
// recorded as answered (recordedAsAnswered), and returns how many.
func awaitRecorded(t *testing.T, d *daemon, answered []execTold, wait time.Duration) int {
	t.Helper()
	var recorded int
	if err := hivetest.Wait(wait, func() (err error) {
		recorded, err = recordedAsAnswered(d, answered)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return recorded
}

// recordedAsAnswered counts the jobs of answered the daemon has recorded
// as answered (done, the exit code, the byte count), by command or id:
// an error for one recorded otherwise (running is not yet: counted out),
// or more than once, or for any not recorded yet.
func recordedAsAnswered(d *daemon, answered []execTold) (int, error) {
	resp, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true})
	if err != nil {
		return 0, err
	}
	recorded := 0
	for _, a := range answered {
		k := 0
		for _, j := range resp.Jobs {
			if a.id != "" && j.ID != a.id || a.id == "" && j.Cmd != a.cmd {
				continue
			}
			k++
			switch {
			case j.State == "done" && j.ExitCode != nil && *j.ExitCode == a.exit && j.StdoutBytes == a.out:
				recorded++
			case j.State != "running":
				return recorded, fmt.Errorf("job %s %q was answered (exit %d, %d bytes out); the daemon has it %s exit %v, %d bytes (%s)",
					j.ID, j.Cmd, a.exit, a.out, j.State, deref(j.ExitCode), j.StdoutBytes, j.Error)
			}
		}
		if k > 1 {
			return recorded, fmt.Errorf("%q %s: %d records, want 1", a.cmd, a.id, k)
		}
	}
	if recorded != len(answered) {
		return recorded, fmt.Errorf("%d of %d answered jobs recorded as answered", recorded, len(answered))
	}
	return recorded, nil
}

// Row 23, background jobs: a daemon that can write the first record of a
// detached job (pending, before anything starts) but no record after it
// still answers `run` calls with their jobs running: the holder has each
// job, started by the daemon and kept by the holder, or (every other
// one: a job with limits) started by the holder. Killed with -9 then, it
// leaves them to the next daemon, which records each from its pending
// record and what the holder tells of it, and its end (done, exit code,
// output bytes), one record a job.
func TestRow23RunAnsweredBeforeCommitted(t *testing.T) {
	dir, d, s := row23Daemon(t)
	var st task
	s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 10}, &st) // starts the holder
	if err := os.WriteFile(filepath.Join(dir, stallWrites), []byte(stallButPending), 0o600); err != nil {
		t.Fatal(err)
	}
	n := count(6, 40)
	var answered []execTold
	for i := range n {
		out := fmt.Sprintf("row23r-%d-%d", os.Getpid(), i)
		cmd := fmt.Sprintf("sleep 0.3; echo %s; exit %d", out, i%3)
		args := map[string]any{"cmd": cmd, "wait_seconds": 0}
		if i%2 == 1 {
			args["limits"] = map[string]any{"nofile": 4096} // the holder starts it
		}
		_, isErr, err := s.TryCall("run", args, &st)
		if err != nil || isErr || st.ID == "" || st.Status != "running" {
			t.Fatalf("run %d of %d while no record but pending ones is written: %v (tool error %v, %+v): a start the holder has must not wait for its running record", i+1, n, err, isErr, st)
		}
		answered = append(answered, execTold{cmd: cmd, id: st.ID, exit: i % 3, out: int64(len(out) + 1)})
	}
	d.Kill()
	unstall(t, dir)
	recorded := awaitRecorded(t, startDaemon(t, dir), answered, 15*time.Second)
	figure(t, 23, "a daemon that writes no job record but pending ones: %d of %d run calls answered running; after its kill -9 the next daemon has %d of %d recorded (kept and holder-started alike) and done as they ended (exit code, bytes)", len(answered), n, recorded, len(answered))
}
