package reliability

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/view"
)

// Row 19: the daemon and the holder both die. Jobs (sleeps, one with a
// grandchild, one that ignores SIGTERM) and a PTY session (a shell with a nohup'd and a foreground
// sleep) run in the holder; the daemon and the holder are killed with -9
// at once. With no daemon left to notice, every process of theirs must
// be gone within 2 s (the holder's guard ends them), the guard itself
// too, and the next daemon must show every job interrupted by the
// holder's death, naming it.
func TestRow19BothDie(t *testing.T) {
	if !proc.Supported {
		t.Skip("row 19 skipped: the holder's guard reads the process table, which this platform does not have")
	}
	nSleeps := count(3, 20)
	dir := newStateDir(t)
	d := startDaemon(t, dir)
	s := d.MCP()
	var jobs []string
	for i := range nSleeps + 2 {
		cmd := "sleep 3600"
		switch i {
		case 0:
			cmd = "sh -c 'sleep 3600 & wait'" // a grandchild
		case 1:
			cmd = "trap '' TERM; while :; do sleep 1; done" // SIGTERM ignored: it takes SIGKILL
		}
		var st struct {
			ID string `json:"id"`
		}
		s.MustCall("run", map[string]any{"cmd": cmd, "wait_seconds": 0}, &st)
		jobs = append(jobs, st.ID)
	}
	sess := openShell(t, s)
	// Every job's processes run: the sleeps, the sh and its sleep, the
	// loop (its sleep comes and goes), the session's shell and two sleeps.
	want := nSleeps + 2 + 1 + 3
	hivetest.Eventually(t, 10*time.Second, "every process of the jobs and the session", func() error {
		if n := len(marked(dir)); n < want {
			return fmt.Errorf("%d of %d marked processes run", n, want)
		}
		return nil
	})
	before := len(marked(dir))
	dp, hp := hivetest.DaemonPid(dir), hivetest.HolderPid(dir)
	if dp == 0 || hp == 0 {
		t.Fatalf("daemon pid %d, holder pid %d: both must run", dp, hp)
	}
	guard := guardOf(dir)
	if guard == 0 {
		t.Error("the holder runs no guard")
	}
	s.Close()
	t0 := time.Now()
	hivetest.Kill(hp)
	d.Kill()
	err := hivetest.Wait(20*time.Second, func() error {
		if left := sess.left(); len(left) > 0 {
			return fmt.Errorf("processes of the session left: %v", left)
		}
		return noneMarked(dir)()
	})
	gone := time.Since(t0)
	if err != nil {
		t.Fatalf("%v after the daemon and the holder were killed (-9): %v", gone.Round(time.Millisecond), err)
	}
	if gone > 2*time.Second {
		t.Errorf("the jobs' processes outlived the daemon and the holder by %v (at most 2s)", gone.Round(time.Millisecond))
	}
	if err := hivetest.Wait(5*time.Second, hivetest.Gone(guard)); guard != 0 && err != nil {
		t.Errorf("the guard %d outlived its work: %v", guard, err)
	}

	// The next daemon records them interrupted by the holder's death.
	d = startDaemon(t, dir)
	resp, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]view.Job{}
	for _, j := range resp.Jobs {
		byID[j.ID] = j
	}
	named, reason := 0, ""
	for _, id := range jobs {
		j := byID[id]
		if j.State != "interrupted" || !strings.Contains(j.Error, "holder") || !strings.Contains(j.Error, "pid "+strconv.Itoa(hp)) {
			t.Errorf("job %s after both died: state %q, error %q: want interrupted, naming the holder (pid %d)", id, j.State, j.Error, hp)
			continue
		}
		named++
		reason = j.Error
	}
	if _, err := os.Stat(dir + "/holder.lost"); err == nil {
		t.Errorf("the note of the holder's death is left after the next daemon's start")
	}
	figure(t, 19, "the daemon and the holder killed with -9 at once, %d jobs (%d sleeps, a grandchild, one ignoring SIGTERM) and a PTY session (a shell, a nohup'd and a foreground sleep): %d marked processes gone after %v (at most 2s), the guard gone; the next daemon shows %d/%d jobs interrupted naming the holder (%q)",
		len(jobs), nSleeps, before, gone.Round(time.Millisecond), named, len(jobs), reason)
}

// guardOf is the pid of the guard of state dir dir's holder (`hive
// holder-guard --state-dir DIR`), 0 if none runs.
func guardOf(dir string) int {
	for _, st := range proc.Live(nil) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(st.Pid) + "/cmdline")
		if strings.Contains(string(b), "\x00holder-guard\x00--state-dir\x00"+dir+"\x00") {
			return st.Pid
		}
	}
	return 0
}
