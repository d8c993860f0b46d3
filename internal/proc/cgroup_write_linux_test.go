package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// What a job can write to the cgroups above it or beside it (its
// generation's, the base's, the spares made ahead): each script is run
// by a job whose cgroup is $d, while another job (the victim) runs; it
// prints the pids it moved into other cgroups, if any.
var sabotages = []struct {
	name, script string
	kills        bool // the victim is killed by it (by a write to a cgroup.kill)
}{
	{"its generation's cgroup.kill", `echo 1 > $d/../cgroup.kill`, true},
	{"the base's cgroup.kill", `echo 1 > $d/../../cgroup.kill`, true},
	{"its siblings' cgroup.kill", `for s in $d/../s*; do [ "${s##*/}" = "${d##*/}" ] || echo 1 > $s/cgroup.kill; done`, true},
	{"the spares' cgroup.freeze", `for s in $d/../s*; do grep -q 'populated 0' $s/cgroup.events && echo 1 > $s/cgroup.freeze; done`, false},
	{"a process moved into each spare", `for s in $d/../s*; do
		grep -q 'populated 0' $s/cgroup.events || continue
		setsid sleep 3600 >/dev/null 2>&1 & echo $! > $s/cgroup.procs && echo $!
	done`, false},
	{"its generation's cgroup.freeze", `echo 1 > $d/../cgroup.freeze`, false},
	{"the base's cgroup.freeze", `echo 1 > $d/../../cgroup.freeze`, false},
}

// A job that wrote a cgroup.kill, cgroup.freeze or cgroup.procs of its
// generation, of the base or of the spares made ahead does not affect
// the jobs started after it ended: each of 8 prints ok, alone in a
// cgroup of its own, not killed, not frozen.
func TestJobCgroupWrittenByAJob(t *testing.T) {
	for _, sab := range sabotages {
		t.Run(sab.name, func(t *testing.T) {
			g := openCgroups(t, t.TempDir())
			hivetest.Eventually(t, 5*time.Second, "the spares to be made", func() error {
				g.mu.Lock()
				defer g.mu.Unlock()
				if len(g.spares) < spares {
					return fmt.Errorf("%d spares", len(g.spares))
				}
				return nil
			})
			victim := startIn(t, g, "victim", `sleep 3600 >/dev/null 2>&1 & echo $!`)

			cmd := exec.Command("/bin/sh")
			release, err := g.Prepare("saboteur", cmd)
			if err != nil {
				t.Fatal(err)
			}
			cmd.Args = []string{"/bin/sh", "-c", "d=" + g.SlotOf("saboteur") + "\n" + sab.script}
			var out strings.Builder
			cmd.Stdout = &out
			err = cmd.Start()
			release()
			if err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-exited:
				g.End("saboteur", 100*time.Millisecond, true)
			case <-time.After(2 * time.Second): // frozen by its own write
				g.End("saboteur", 100*time.Millisecond, true)
				<-exited
			}
			var moved []Pinned
			for _, f := range strings.Fields(out.String()) {
				pid, _ := strconv.Atoi(f)
				if p, ok := Pin(pid, func(Stat) bool { return true }); ok {
					t.Cleanup(p.Close)
					moved = append(moved, p)
				}
			}

			for i := range 8 {
				id := "later" + strconv.Itoa(i)
				got, err := runLater(t, g, id)
				if err != nil || !strings.HasPrefix(got, "ok\n") {
					t.Errorf("job %d of 8 after a job wrote %s: %v, printed %q; want ok", i+1, sab.name, err, got)
					continue
				}
				for _, p := range moved {
					if strings.Contains(got, "\n"+strconv.Itoa(p.Pid)+"\n") {
						t.Errorf("job %d of 8 after a job wrote %s shares its cgroup with process %d, moved there by that job", i+1, sab.name, p.Pid)
					}
				}
			}
			if len(moved) > 0 {
				if left := WaitExit(moved, time.Now().Add(10*time.Second)); len(left) > 0 {
					t.Errorf("%d of %d processes the job moved into spares survived", len(left), len(moved))
					for _, p := range left {
						p.Signal(syscall.SIGKILL)
					}
				}
			}
			// The job that ran meanwhile was killed by the write, and is
			// told so; the later ones were not.
			wait := 200 * time.Millisecond // for a mark that would come late
			if sab.kills {
				wait = 5 * time.Second
			}
			if got := g.Killed("victim", wait); got != sab.kills {
				t.Errorf("Killed(the job that ran while another wrote %s) = %v, want %v", sab.name, got, sab.kills)
			}
			if sab.kills {
				gone(t, victim, "a write to cgroup.kill")
			}
			g.End("victim", 100*time.Millisecond, true)
			gone(t, victim, "their job's end")
		})
	}
}

// runLater runs a job that prints ok and the processes in its cgroup;
// one that does not end within 5 s (frozen) is ended.
func runLater(t *testing.T, g *JobCgroups, id string) (string, error) {
	cmd := exec.Command("/bin/sh")
	release, err := g.Prepare(id, cmd)
	if err != nil {
		return "", err
	}
	cmd.Args = []string{"/bin/sh", "-c", `echo ok; cat $0/cgroup.procs`, g.SlotOf(id)}
	var out strings.Builder
	cmd.Stdout = &out
	// A process started into a frozen cgroup stops before its exec, and
	// its start (a vfork) with it: it is killed after 5 s.
	stuck := time.AfterFunc(5*time.Second, func() { os.WriteFile(filepath.Join(g.SlotOf(id), "cgroup.kill"), []byte("1"), 0) })
	err = cmd.Run()
	release()
	if !stuck.Stop() {
		err = fmt.Errorf("it did not end within 5 s (frozen?): %v", err)
	}
	if g.Killed(id, 0) {
		t.Errorf("job %s, started after the write, is said to be killed by a write to cgroup.kill", id)
	}
	g.End(id, 0, true)
	return out.String(), err
}
