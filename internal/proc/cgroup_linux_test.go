package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func openCgroups(t *testing.T, owner string) *JobCgroups {
	t.Helper()
	g, err := OpenJobCgroups(owner)
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// startIn starts sh -c script in job id's cgroup; the script prints the
// pids to pin, one a line, then exits. It returns them pinned, checked
// to be in the job's cgroup (or below it).
func startIn(t *testing.T, g *JobCgroups, id, script string) []Pinned {
	t.Helper()
	cmd := exec.Command("/bin/sh")
	release, err := g.Prepare(id, cmd)
	if err != nil {
		t.Fatal(err)
	}
	slot := g.SlotOf(id)
	cmd.Args = []string{"/bin/sh", "-c", script, slot}
	out, err := cmd.Output()
	release()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var ps []Pinned
	for _, f := range strings.Fields(string(out)) {
		pid, _ := strconv.Atoi(f)
		p, ok := Pin(pid, func(Stat) bool { return inCgroup(pid, "0::"+strings.TrimPrefix(slot, g.mount)) })
		if !ok {
			t.Fatalf("process %d is not running in %s", pid, slot)
		}
		t.Cleanup(p.Close)
		ps = append(ps, p)
	}
	return ps
}

// gone checks that every one of ps has exited, and kills any that has not.
func gone(t *testing.T, ps []Pinned, what string) {
	t.Helper()
	if left := WaitExit(ps, time.Now().Add(time.Second)); len(left) > 0 { // at once if they are gone
		t.Errorf("%d of %d processes survived %s", len(left), len(ps), what)
		for _, p := range left {
			p.Signal(syscall.SIGKILL)
		}
	}
}

// Each prints its pid once it is set up (the third after it moved itself
// into a cgroup below the job's); the leader waits for the three lines,
// then exits.
const threeEscapes = `f=$(mktemp)
env -i setsid sh -c "echo \$\$ >> $f; exec sleep 3600" >/dev/null 2>&1 &
setsid sh -c "trap '' TERM; echo \$\$ >> $f; exec sleep 3600" >/dev/null 2>&1 &
setsid sh -c "mkdir $0/sub && echo \$\$ > $0/sub/cgroup.procs && echo \$\$ >> $f && exec sleep 3600" >/dev/null 2>&1 &
until [ "$(wc -l < $f)" -ge 3 ]; do sleep 0.01; done; cat $f; rm -f $f`

// A job's cgroup holds what its leader starts, whatever leaves the group
// or the session: End ends it (SIGTERM, then cgroup.kill for one that
// ignores it, and one that moved itself into a cgroup below), counts it,
// and frees the cgroup, empty, for the next job.
func TestJobCgroupEnd(t *testing.T) {
	g := openCgroups(t, t.TempDir())
	ps := startIn(t, g, "j1", threeEscapes)
	slot := g.SlotOf("j1")
	if len(ps) != 3 {
		t.Fatalf("the job printed %d pids, want 3", len(ps))
	}
	if n := g.End("j1", 200*time.Millisecond, true); n != 3 {
		t.Errorf("End counted %d, want 3", n)
	}
	gone(t, ps, "their job's end")
	if n := g.End("j1", 0, true); n != 0 {
		t.Errorf("a second End counted %d", n)
	}
	// A cgroup that needed cgroup.kill goes (the kernel would kill what
	// is started into it next), the one below it too.
	if _, err := os.Stat(slot); !os.IsNotExist(err) {
		t.Errorf("the killed job's cgroup is still there: %v", err)
	}
	// A job that left nothing frees its cgroup for the next one, which
	// runs in it; a job has one cgroup at a time.
	run := func(id string) string {
		cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup")
		release, err := g.Prepare(id, cmd)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		release()
		if err != nil {
			t.Fatalf("a job in a cgroup: %v", err)
		}
		slot := g.SlotOf(id)
		if !strings.Contains(string(out), "0::"+strings.TrimPrefix(slot, g.mount)+"\n") {
			t.Errorf("job %s ran in %q, want %s", id, out, slot)
		}
		if _, err := g.Prepare(id, exec.Command("true")); err == nil {
			t.Errorf("a second Prepare of job %s gave it a second cgroup", id)
		}
		if n := g.End(id, 0, true); n != 0 {
			t.Errorf("End of job %s, which left nothing, counted %d", id, n)
		}
		return slot
	}
	if a, b := run("j2"), run("j3"); a != b {
		t.Errorf("the next job's cgroup %s, want the freed %s", b, a)
	}
}

// What a dead holder's jobs left: KillJobCgroups ends it by the paths
// the holder gave (and nothing at a path that is not a slot of the
// owner's); a new generation ends what the dead ones left; Close
// removes the generation and the base, and Prepare makes them again.
func TestJobCgroupsOfADeadHolder(t *testing.T) {
	owner := t.TempDir()
	g := openCgroups(t, owner)
	ps := startIn(t, g, "a", `env -i setsid sleep 3600 >/dev/null 2>&1 & echo $!`)
	slot := g.SlotOf("a")
	for _, bad := range []string{filepath.Dir(slot), filepath.Dir(filepath.Dir(slot)), "/tmp/x/g-1/s0", strings.Replace(slot, baseName(owner), baseName(owner+"-other"), 1)} {
		if n := KillJobCgroups(owner, 0, bad); n[0] != 0 {
			t.Errorf("KillJobCgroups(%s) counted %v", bad, n)
		}
	}
	if WaitExit(ps, time.Now()) == nil {
		t.Fatal("a path that is not the job's slot ended its process")
	}
	if n := KillJobCgroups(owner, 100*time.Millisecond, slot); n[0] != 1 {
		t.Errorf("KillJobCgroups(the job's slot) counted %v, want [1]", n)
	}
	gone(t, ps, "KillJobCgroups")
	if _, err := os.Stat(slot); !os.IsNotExist(err) {
		t.Errorf("the killed slot is still there: %v", err)
	}

	// A holder that dies leaves its generation: the next one ends it.
	ps = startIn(t, g, "b", `env -i setsid sleep 3600 >/dev/null 2>&1 & echo $!`)
	old := g.Dir()
	next, err := OpenJobCgroups(owner)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next.Dir() == old {
		t.Fatalf("the new generation is the old one: %s", old)
	}
	gone(t, ps, "the next generation's start")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(old); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead generation %s is still there", old)
		}
	}
	next.Close()
	if _, err := os.Stat(filepath.Dir(next.Dir())); !os.IsNotExist(err) {
		t.Fatalf("Close left the base: %v", err)
	}
	cmd := exec.Command("true")
	release, err := next.Prepare("again", cmd)
	if err != nil {
		t.Fatalf("Prepare after Close: %v", err)
	}
	err = cmd.Run()
	release()
	if err != nil {
		t.Fatal(err)
	}
	if n := next.End("again", 0, true); n != 0 {
		t.Errorf("End of a job that left nothing counted %d", n)
	}
}

// A daemon started by a job leaves the job's cgroup for the one its
// holder is in (LeaveJobCgroup, run here in a child in a job's slot).
func TestLeaveJobCgroup(t *testing.T) {
	if os.Getenv("HIVE_TEST_LEAVE") == "1" {
		from, to, err := LeaveJobCgroup()
		own, _ := Cgroup2()
		os.Stdout.WriteString(from + "\n" + to + "\n" + own + "\n")
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	g := openCgroups(t, t.TempDir())
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaveJobCgroup$")
	cmd.Env = append(os.Environ(), "HIVE_TEST_LEAVE=1")
	release, err := g.Prepare("d", cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	release()
	g.End("d", 0, true)
	lines := strings.Split(string(out), "\n")
	own, _ := Cgroup2()
	if err != nil || len(lines) < 3 || lines[0] != g.SlotOf("d") && !strings.HasPrefix(lines[0], filepath.Dir(g.Dir())) || lines[1] != own || lines[2] != own {
		t.Errorf("LeaveJobCgroup in a job's cgroup: %q %v; want from the slot to %s", out, err, own)
	}
}
