package reliability

import (
	"fmt"
	"testing"

	"github.com/hivetools/hive/internal/proc"
)

// daemonZombies lists the daemon's children that have exited and were
// not reaped.
func daemonZombies(pid int) []int {
	var out []int
	for _, c := range proc.Children(pid) {
		if !c.Alive() {
			out = append(out, c.Pid)
		}
	}
	return out
}

// Row 3: jobs that each orphan a short grandchild ((sleep 0.05 &) in a
// subshell) all report their own exit code, and leave no zombie behind:
// none among the daemon's children after any job, none once settled.
func TestRow03OrphanedGrandchildren(t *testing.T) {
	n := count(100, 1000)
	dir := newStateDir(t)
	d := startDaemon(t, dir)
	base := d.Settled()
	s := d.MCP()
	maxZombies, leftovers := 0, 0
	for i := range n {
		code := i % 256
		var st task
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("sh -c '(sleep 0.05 &); exit %d'", code), "wait_seconds": 20}, &st)
		if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != code || st.Error != "" {
			t.Fatalf("job %d (exit %d): %+v", i, code, st)
		}
		leftovers += st.Leftover
		// The job has ended, so its leader was reaped: nothing of it may
		// be left a zombie of the daemon.
		if z := daemonZombies(d.Pid); len(z) > 0 {
			maxZombies = max(maxZombies, len(z))
			t.Errorf("after job %d: zombie children of the daemon: %v", i, z)
		}
	}
	s.Close()
	st := d.Settled()
	z := daemonZombies(d.Pid)
	figure(t, 3, "orphaned grandchildren ×%d: every exit code right (0..%d), %d zombies after any job, settled with %d children and %d zombies (%d zombie children by /proc); %d grandchildren still in their group at the end were terminated by hive",
		n, min(n, 256)-1, maxZombies, st.Children, st.Zombies, len(z), leftovers)
	if st.Zombies != 0 || st.Children != 0 || len(z) != 0 {
		t.Errorf("settled daemon: %d children, %d zombies, zombie children %v", st.Children, st.Zombies, z)
	}
	d.CheckBaseline(base)
}
