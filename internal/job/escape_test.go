//go:build unix

package job

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
	"github.com/hivetools/hive/internal/proc"
)

// escapeCmd leaves two processes behind, both holding its stdout: a
// setsid escape (its own session) and a double fork (orphaned at once,
// still in the group). It prints their pids once the escape is in its
// session, then runs tail, which prints "ready" (then the leader exits,
// or execs a sleep).
const escapeCmd = `f=$(mktemp); setsid sh -c "echo \$\$ > $f; exec sleep 3600" &
( ( sleep 3600 & echo $! ) & wait )
until [ -s $f ]; do sleep 0.01; done; cat $f; rm -f $f; `

// TestEscapesEndWithTheirJob: processes that left a job's group (setsid)
// or were orphaned by a double fork end with their job, whether it ends
// by itself or is killed; they are counted in Leftover and, with a
// reaper, reaped (no zombie is left). Processes carrying the same marks
// that started before the job, or another owner's, are left alone.
func TestEscapesEndWithTheirJob(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	owner := t.TempDir()
	// The job that ends by itself waits for the gate: until its escapees
	// are seen running, not to race their end with it.
	gate := filepath.Join(t.TempDir(), "gate")
	open := func(*Manager) error { return os.WriteFile(gate, nil, 0o600) }
	for _, tc := range []struct {
		name   string
		reaper bool
		tail   string
		kill   func(m *Manager) error
		state  State
		// left: the double fork ignores SIGINT (bash's background
		// commands do) and stays till the end; a forced kill's SIGKILL to
		// the group takes it at once (counted only if it is still dying
		// when the leader is reaped): between minLeft and left.
		minLeft, left int
	}{
		{"ends by itself", true, "echo ready; until [ -e " + gate + " ]; do sleep 0.01; done; exit 3", open, Done, 2, 2},
		{"killed", true, "echo ready; exec sleep 3600", func(m *Manager) error { _, err := m.Kill("esc", false); return err }, Killed, 2, 2},
		{"force killed", true, "echo ready; exec sleep 3600", func(m *Manager) error { _, err := m.Kill("esc", true); return err }, Killed, 1, 2},
		{"killed, no reaper", false, "echo ready; exec sleep 3600", func(m *Manager) error { _, err := m.Kill("esc", false); return err }, Killed, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Owner: owner, LeftoverGrace: time.Second, Grace: time.Second}
			if tc.reaper {
				o.Reaper = testReaper(t)
			}
			h := newHarness(t, o)
			// Two processes with the job's marks that are not its: one
			// started before it, one of another owner. (Started after New,
			// which would take them for a dead daemon's.)
			var strangers []*exec.Cmd
			for _, o := range []string{owner, owner + "-other"} {
				c := exec.Command("sleep", "3600")
				c.Env = append(os.Environ(), EnvJobID+"=esc", EnvJobOwner+"="+o)
				c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				if err := proc.Start(c); err != nil {
					t.Fatal(err)
				}
				strangers = append(strangers, c)
			}
			defer func() {
				for _, c := range strangers {
					c.Process.Kill()
					proc.Wait(c)
				}
			}()
			// The job starts in a later clock tick than the first stranger.
			first, _ := proc.Read(strangers[0].Process.Pid)
			hivetest.Eventually(t, 10*time.Second, "a later clock tick", func() error {
				if now := ticksNow(t); now <= first.Start+1 {
					return fmt.Errorf("clock tick %d, the stranger's %d", now, first.Start)
				}
				return nil
			})
			j := h.start(Spec{Name: "esc", Cmd: escapeCmd + tc.tail})
			pids := waitPids(t, j, 3)
			starts := make([]uint64, len(pids))
			for i, pid := range pids {
				st, ok := proc.Read(pid)
				if !ok || !st.Alive() {
					t.Fatalf("escapee %d not running", pid)
				}
				starts[i] = st.Start
			}
			if tc.kill != nil {
				if err := tc.kill(h.m); err != nil {
					t.Fatal(err)
				}
			}
			in := h.wait(j)
			if in.State != tc.state || in.Leftover < tc.minLeft || in.Leftover > tc.left {
				t.Errorf("job: %s with %d leftover, want %s with %d..%d", in.State, in.Leftover, tc.state, tc.minLeft, tc.left)
			}
			for i, pid := range pids {
				st, ok := proc.Read(pid)
				if !ok || st.Start != starts[i] {
					continue // gone: reaped
				}
				if st.Alive() {
					t.Errorf("escapee %d survived its job (state %c)", pid, st.State)
				} else if tc.reaper {
					t.Errorf("escapee %d left a zombie (parent %d)", pid, st.PPid)
				}
			}
			for _, c := range strangers {
				if !alive(c.Process.Pid) {
					t.Fatalf("process %d, with the job's marks but not its, was signalled", c.Process.Pid)
				}
			}
		})
	}
}

// testReaper makes this process a child subreaper for the test (closed
// after the test's manager, whose cleanup comes later).
func testReaper(t *testing.T) *proc.Reaper {
	t.Helper()
	r, err := proc.NewReaper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// waitPids waits (on the job's output, no polling) until j printed n
// lines, and returns them as pids.
func waitPids(t *testing.T, j *Job, n int) []int {
	t.Helper()
	var out []byte
	timeout := time.After(10 * time.Second)
	for strings.Count(string(out), "\n") < n {
		<-j.Started()
		changed := j.Stdout().Changed()
		c, err := j.Stdout().Read(int64(len(out)), 1024)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Data...)
		if len(c.Data) == 0 {
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("job printed %q within 10 s, want %d pids", out, n)
			}
		}
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if f == "ready" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("job printed %q", out)
		}
		pids = append(pids, p)
	}
	return pids
}

// ticksNow is the time since boot in clock ticks (as proc.Stat.Start).
func ticksNow(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return uint64(f * 100)
}

// TestCgroupEndsScrubbedEscapes: with a cgroup per job, a process that
// left the job's group and dropped its marks (env -i) ends with the job,
// killed or not, with a reaper or without, counted in Leftover; one that
// ignores SIGTERM gets SIGKILL. The job's cgroup goes with it. A job
// that leaves nothing (with a reaper, its cgroup is not looked at) still
// has its cgroup removed. Needs a machine that lets this process make
// cgroups (proc.OpenJobCgroups).
func TestCgroupEndsScrubbedEscapes(t *testing.T) {
	owner := t.TempDir()
	g, err := proc.OpenJobCgroups(owner)
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	defer g.Close()
	// Two escapes without marks, in sessions of their own; the second
	// ignores SIGTERM.
	const escapes = `f=$(mktemp); env -i setsid sh -c "echo \$\$ > $f.1; exec sleep 3600" &
env -i setsid sh -c "trap '' TERM; echo \$\$ > $f.2; exec sleep 3600" &
until [ -s $f.1 ] && [ -s $f.2 ]; do sleep 0.01; done; p=$(cat $f.1 $f.2); rm -f $f $f.1 $f.2; echo "$p"; `
	// The pids are printed last, by the shell itself: a kill then finds
	// nothing of the job's but the escapes (and the leader) running.
	// A job that ends by itself waits for the gate: until its escapees
	// are pinned, not to race their end with it.
	gate := filepath.Join(t.TempDir(), "gate")
	waitGate := "until [ -e " + gate + " ]; do sleep 0.01; done; "
	for _, tc := range []struct {
		name, cmd string
		reaper    bool
		kill      bool
		state     State
		left      int
	}{
		{"killed", escapes + "exec sleep 3600", false, true, Killed, 2},
		{"ends by itself", escapes + waitGate + "exit 3", false, false, Done, 2},
		{"ends by itself, reaper", escapes + waitGate + "exit 3", true, false, Done, 2},
		{"killed, reaper", escapes + "exec sleep 3600", true, true, Killed, 2},
		{"leaves nothing, reaper", "sed -n 's/^0:://p' /proc/self/cgroup", true, false, Done, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Owner: owner, Cgroups: g, LeftoverGrace: 300 * time.Millisecond, Grace: time.Second}
			if tc.reaper {
				o.Reaper = testReaper(t)
			}
			h := newHarness(t, o)
			j := h.start(Spec{Name: "scrub", Cmd: tc.cmd})
			<-j.Started()
			slot := g.SlotOf(j.Info().ID) // while it runs
			var pinned []proc.Pinned
			if tc.left > 0 {
				for _, pid := range waitPids(t, j, tc.left) {
					p, ok := proc.Pin(pid, nil)
					if !ok {
						t.Fatalf("escapee %d not running", pid)
					}
					defer p.Close()
					if env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); strings.Contains(string(env), EnvJobID) {
						t.Fatalf("escapee %d has the marks: %q", pid, env)
					}
					pinned = append(pinned, p)
				}
			}
			if tc.kill {
				if _, err := h.m.Kill("scrub", false); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(gate)
			in := h.wait(j)
			if tc.left == 0 { // it may have ended already: it says where it ran
				c, _ := j.Stdout().Read(0, 1024)
				if ran := strings.TrimSpace(string(c.Data)); strings.HasSuffix(g.Dir(), filepath.Dir(ran)) {
					slot = filepath.Join(g.Dir(), filepath.Base(ran))
				}
			}
			if !strings.HasPrefix(slot, g.Dir()+"/") {
				t.Fatalf("the job ran in cgroup %q, want one in %s", slot, g.Dir())
			}
			if in.State != tc.state || in.Leftover != tc.left {
				t.Errorf("job: %s with %d leftover, want %s with %d", in.State, in.Leftover, tc.state, tc.left)
			}
			if left := proc.WaitExit(pinned, time.Now().Add(time.Second)); len(left) > 0 { // at once if they are gone
				t.Errorf("%d escapees without marks survived their job", len(left))
				for _, p := range left {
					p.Signal(syscall.SIGKILL)
				}
			}
			// Removed at the end, or soon after it (in the background).
			hivetest.Eventually(t, 5*time.Second, "the job's cgroup "+slot+" to go", func() error {
				if _, err := os.Stat(slot); !os.IsNotExist(err) {
					return fmt.Errorf("it is still there (%v)", err)
				}
				return nil
			})
		})
	}
}
