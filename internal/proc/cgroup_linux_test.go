package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/limits"
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
	if _, err := os.Stat(slot); !os.IsNotExist(err) {
		t.Errorf("the job's cgroup is still there: %v", err)
	}
}

// runIn runs sh -c script in a new cgroup for job id, and ends the job
// (End with check); it returns the job's output, and the cgroup it ran
// in (by its own /proc/self/cgroup), removed by then.
func runIn(t *testing.T, g *JobCgroups, id, script string) (out, cgroup string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sed -n 's/^0:://p' /proc/self/cgroup; "+script)
	release, err := g.Prepare(id, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Prepare(id, exec.Command("true")); err == nil {
		t.Errorf("a second Prepare of job %s gave it a second cgroup", id)
	}
	b, err := cmd.Output()
	release()
	g.End(id, time.Second, true)
	first, rest, _ := strings.Cut(string(b), "\n")
	if err != nil && !strings.Contains(script, "cgroup.kill") {
		t.Errorf("job %s in a cgroup: %v: %q", id, err, b)
	}
	if _, serr := os.Stat(g.mount + first); !os.IsNotExist(serr) {
		t.Errorf("job %s's cgroup %s is still there after its end: %v", id, first, serr)
	}
	return rest, first
}

// A cgroup is never reused: a job that wrote its cgroup's cgroup.kill
// or cgroup.freeze does not kill or freeze the next job (Linux 6.18
// kills what is started into a cgroup that was written cgroup.kill).
func TestJobCgroupNotReused(t *testing.T) {
	g := openCgroups(t, t.TempDir())
	seen := map[string]bool{}
	for i, script := range []string{
		`echo 1 > /sys/fs/cgroup/unified$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.kill; sleep 1`,
		`echo ok`,
		"freeze",
		`echo ok`,
		`echo ok`,
	} {
		if !strings.HasPrefix(g.mount, "/sys/fs/cgroup/unified") {
			script = strings.ReplaceAll(script, "/sys/fs/cgroup/unified", g.mount)
		}
		id := "j" + strconv.Itoa(i)
		if script == "freeze" { // frozen (by its own doing, say), then ended
			ps := startIn(t, g, id, `sleep 3600 >/dev/null 2>&1 & echo $!`)
			cg := g.SlotOf(id)
			if err := os.WriteFile(filepath.Join(cg, "cgroup.freeze"), []byte("1"), 0); err != nil {
				t.Fatal(err)
			}
			if n := g.End(id, 100*time.Millisecond, true); n != 1 {
				t.Errorf("End of a frozen job's cgroup counted %d, want 1", n)
			}
			gone(t, ps, "the end of their frozen job")
			seen[strings.TrimPrefix(cg, g.mount)] = true
			continue
		}
		done := make(chan string, 1)
		go func() { out, cg := runIn(t, g, id, script); done <- out + "|" + cg }()
		var got string
		select {
		case got = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("job %d (%s) did not end within 20 s (started frozen?)", i, script)
		}
		out, cg, _ := strings.Cut(got, "|")
		if seen[cg] {
			t.Errorf("job %d ran in a cgroup used before: %s", i, cg)
		}
		seen[cg] = true
		if strings.HasSuffix(script, "echo ok") && out != "ok\n" {
			t.Errorf("job %d after jobs that killed or froze their cgroups printed %q, want ok", i, out)
		}
	}
}

// What a job whose end had no look at its cgroup (End without check:
// nothing should be left) left anyway is found when the cgroup is
// removed, in the background, and ended.
func TestJobCgroupRemovedInTheBackground(t *testing.T) {
	g := openCgroups(t, t.TempDir())
	ps := startIn(t, g, "a", `env -i setsid sleep 3600 >/dev/null 2>&1 & echo $!`)
	slot := g.SlotOf("a")
	if n := g.End("a", 100*time.Millisecond, false); n != 0 {
		t.Errorf("End without a look counted %d", n)
	}
	if left := WaitExit(ps, time.Now().Add(10*time.Second)); len(left) > 0 {
		t.Errorf("what a job left without its end seeing it survived the removal of its cgroup")
		for _, p := range left {
			p.Signal(syscall.SIGKILL)
		}
	}
	hivetest.Eventually(t, 5*time.Second, "the ended job's cgroup to go", absent(slot))
}

// absent is a condition for hivetest.Eventually: nothing is at path.
func absent(path string) func() error {
	return func() error {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			return fmt.Errorf("%s is still there (%v)", path, err)
		}
		return nil
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
	// This holder lives on (a dead one's worker makes nothing): its
	// worker has made the spare the start took again before the kill,
	// or it would make the generation again after it.
	hivetest.Eventually(t, 5*time.Second, "the worker to make the spares again", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.spares) < spares {
			return fmt.Errorf("%d spares of %d", len(g.spares), spares)
		}
		return nil
	})
	for _, bad := range []string{filepath.Dir(slot), filepath.Dir(filepath.Dir(slot)), "/tmp/x/g-1/s0", strings.Replace(slot, baseName(owner), baseName(owner+"-other"), 1)} {
		if n := KillJobCgroups(owner, 0, bad); n[0] != 0 {
			t.Errorf("KillJobCgroups(%s) counted %v", bad, n)
		}
	}
	if st, ok := Read(ps[0].Pid); !ok || !st.Alive() {
		t.Fatal("a path that is not the job's slot ended its process")
	}
	if n := KillJobCgroups(owner, 100*time.Millisecond, slot); n[0] != 1 {
		t.Errorf("KillJobCgroups(the job's slot) counted %v, want [1]", n)
	}
	gone(t, ps, "KillJobCgroups")
	// The whole generation goes (a dead holder's: its spares too).
	if _, err := os.Stat(g.Dir()); !os.IsNotExist(err) {
		t.Errorf("the killed generation is still there: %v", err)
	}
	g.Close()

	// A generation whose process is gone (a holder that died): the next
	// one ends what is in it and removes it. One whose process runs is
	// left alone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	base := filepath.Dir(g.Dir())
	staleGen := filepath.Join(base, fmt.Sprintf("g-%d-1", dead.Process.Pid))
	liveGen := filepath.Join(base, fmt.Sprintf("g-%d-1", os.Getpid()))
	var stale []Pinned
	for _, gen := range []string{staleGen, liveGen} {
		if err := os.MkdirAll(filepath.Join(gen, "s0"), 0o755); err != nil {
			t.Fatal(err)
		}
		defer removeTree(gen)
		h := &JobCgroups{mount: g.mount, base: base, gen: gen, slots: map[string]string{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		close(h.stop)
		ps := startIn(t, h, "x", `env -i setsid sleep 3600 >/dev/null 2>&1 & echo $!`)
		if gen == staleGen {
			stale = ps
		} else {
			defer gone(t, ps, "the kill of their generation, below") // meant to run until then
		}
	}
	next, err := OpenJobCgroups(owner)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	gone(t, stale, "the next generation's start")
	hivetest.Eventually(t, 5*time.Second, "the dead generation to go", absent(staleGen))
	if !populated(liveGen) {
		t.Errorf("the generation of a process that runs was ended")
	}
	// Any path in a generation ends the whole of it (a dead holder's):
	// here the live one's, made by hand, so that its processes go.
	KillJobCgroups(owner, 0, filepath.Join(liveGen, "s1"))
	next.Close()
	if _, err := os.Stat(base); !os.IsNotExist(err) {
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
		for _, dir := range v1Layout() {
			os.Stdout.WriteString(dir + "\n")
		}
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
	slot := g.SlotOf("d")
	// Its cgroup v1 ones too, where it has some (a hybrid mount).
	_, join := g.SetLimits("d", limits.Limits{MemoryMB: 1024, Pids: 1000, CPUs: 1})
	limits.Wrap(cmd, limits.Rlimits{}, join...)
	out, err := cmd.Output()
	release()
	g.End("d", 0, true)
	lines := strings.Split(string(out), "\n")
	own, _ := Cgroup2()
	if err != nil || len(lines) < 3 || lines[0] != slot || lines[1] != own || lines[2] != own {
		t.Errorf("LeaveJobCgroup in a job's cgroup: %q %v; want from the slot to %s", out, err, own)
	}
	for _, dir := range lines[min(3, len(lines)):] {
		if strings.Contains(dir, "/"+filepath.Base(g.base)+"/") {
			t.Errorf("LeaveJobCgroup left the process in the job's cgroup v1 %s (it joined %v)", dir, join)
		}
	}
}

// With HIVE_TEST_MAIN_THREAD_EXITS=1 the test binary is a process whose
// main thread exits while another runs: it ignores SIGTERM, prints its
// pid, closes its stdout, and exits its main thread (during init, the
// main goroutine runs on it). /proc then shows it as a zombie.
func init() {
	if os.Getenv("HIVE_TEST_MAIN_THREAD_EXITS") != "1" {
		return
	}
	signal.Ignore(syscall.SIGTERM)
	go func() {
		fmt.Println(os.Getpid())
		os.Stdout.Close()
		for {
			time.Sleep(time.Hour)
		}
	}()
	time.Sleep(50 * time.Millisecond)
	syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0) // this thread only
}

// A process whose main thread exited while another runs is alive: the
// reaper counts it among the adopted children still alive (so a job's
// end looks at its cgroup), and End kills it (cgroup.kill passes over
// it; its pidfd does not).
func TestJobCgroupMainThreadExited(t *testing.T) {
	g := openCgroups(t, t.TempDir())
	r, err := NewReaper()
	if err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	defer r.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `HIVE_TEST_MAIN_THREAD_EXITS=1 "$0" -test.run='^$' &`, self)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	release, err := g.Prepare("z", cmd)
	if err != nil {
		t.Fatal(err)
	}
	slot := g.SlotOf("z")
	err = Start(cmd)
	release()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(pipe) // until the process closes its stdout
	if err := Wait(cmd); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the process printed %q", b)
	}
	p, ok := pinMember(pid, "0::"+strings.TrimPrefix(slot, g.mount))
	if !ok {
		t.Fatalf("process %d is not in the job's cgroup", pid)
	}
	defer p.Close()
	defer p.Signal(syscall.SIGKILL) // if it survives
	hivetest.Eventually(t, 10*time.Second, "the process's main thread to exit", func() error {
		if st, ok := Read(pid); !ok || st.State != 'Z' { // a zombie: its main thread has exited
			return fmt.Errorf("process %d: state %c (read %v)", pid, st.State, ok)
		}
		return nil
	})
	if alive := r.Reap(); !slices.Contains(alive, pid) {
		t.Errorf("Reap: alive %v, want %d in it (its other thread runs)", alive, pid)
	}
	if n := g.End("z", 100*time.Millisecond, true); n != 1 {
		t.Errorf("End counted %d, want 1", n)
	}
	if left := WaitExit([]Pinned{p}, time.Now().Add(2*time.Second)); len(left) > 0 {
		t.Errorf("the process whose main thread exited survived its job's end")
	}
}

// cgroupUsage reads only the counters asked for: a job's end reads
// cpu.stat (whose read flushes the kernel's per-CPU counters) only when
// the leader's rusage may not have it all, and the memory and pids files
// only where their controllers are on. A directory with the files of a
// cgroup stands in for one.
func TestCgroupUsageFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"cpu.stat":       "usage_usec 9000\nuser_usec 7000\nsystem_usec 2000\nnr_periods 4\nnr_throttled 3\n",
		"memory.peak":    "1048576\n",
		"memory.current": "4096\n",
		"memory.events":  "low 0\nhigh 0\nmax 1\noom 1\noom_kill 1\n",
		"pids.events":    "max 5\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := limits.Usage{CPUUserMS: 7, CPUSystemMS: 2, Throttled: 3, MemoryPeakBytes: 1 << 20, MemoryBytes: 4096, OOMKills: 1, PidsRefused: 5}
	for _, c := range []struct {
		f    cgroupFiles
		want limits.Usage
	}{
		{allCgroupFiles, all},
		{cgroupFiles{}, limits.Usage{}},
		{cgroupFiles{cpu: true}, limits.Usage{CPUUserMS: 7, CPUSystemMS: 2, Throttled: 3}},
		{cgroupFiles{memory: true, pids: true}, limits.Usage{MemoryPeakBytes: 1 << 20, MemoryBytes: 4096, OOMKills: 1, PidsRefused: 5}},
	} {
		u, ok := cgroupUsage(dir, c.f)
		if !ok || u != c.want {
			t.Errorf("files %+v: %+v, %v; want %+v", c.f, u, ok, c.want)
		}
	}
	if _, ok := cgroupUsage(filepath.Join(dir, "gone"), cgroupFiles{cpu: true}); ok {
		t.Error("a cgroup that is gone: ok, want not")
	}
}

// A kept job's cgroup (lent, adopted, the job run in it, ended) costs
// one pass of the worker, at its end, which both removes it and makes
// the spare its start took again: a Lend wakes the worker only when the
// spares made ahead run low (issue 20: each pass is a wake-up of the
// holder on its own).
func TestJobCgroupsOnePassAJob(t *testing.T) {
	g := openCgroups(t, t.TempDir())
	full := func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.spares) < spares {
			return fmt.Errorf("%d spares of %d", len(g.spares), spares)
		}
		return nil
	}
	hivetest.Eventually(t, 5*time.Second, "the spares made at the open", full)
	const jobs = 3 * spares
	pokes := g.pokes.Load()
	for i := range jobs {
		lent := g.Lend(1)
		if len(lent) != 1 {
			t.Fatalf("job %d: lent %v", i, lent)
		}
		id := fmt.Sprintf("k%d", i)
		if !g.Adopt(id, lent[0]) {
			t.Fatalf("job %d: %s not adopted", i, lent[0])
		}
		fd, err := syscall.Open(lent[0], syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("true")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		err = cmd.Run()
		syscall.Close(fd)
		if err != nil {
			t.Fatalf("job %d: true in %s: %v", i, lent[0], err)
		}
		g.End(id, 0, false)
		hivetest.Eventually(t, 5*time.Second, "the ended job's cgroup to go", absent(lent[0]))
		hivetest.Eventually(t, 5*time.Second, "the spare made again", full)
	}
	if n := g.pokes.Load() - pokes; n != jobs {
		t.Errorf("%d jobs woke the worker %d times, not once each", jobs, n)
	}

	// Lent below lowSpares: the worker makes them again, unasked.
	pokes = g.pokes.Load()
	if lent := g.Lend(spares); len(lent) != spares {
		t.Fatalf("lent %v", lent)
	}
	if g.pokes.Load() == pokes {
		t.Error("a Lend that took every spare did not wake the worker")
	}
	hivetest.Eventually(t, 5*time.Second, "the worker to make the spares again", full)
}

// EndLeftJobCgroups ends and removes the generations of owner's job
// cgroups whose maker is gone (here one whose pid is of a process that
// exited, with a process left in a job's cgroup), and leaves the
// generation of a maker that runs (this process's) as it is.
func TestEndLeftJobCgroups(t *testing.T) {
	owner := t.TempDir()
	g := openCgroups(t, owner)
	base := filepath.Dir(g.Dir())
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(base, fmt.Sprintf("g-%d-1", gone.Process.Pid))
	for _, d := range []string{dead, filepath.Join(dead, "s0"), filepath.Join(dead, "s1")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	left := exec.Command("/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && echo ok && exec sleep 3600`, filepath.Join(dead, "s0"))
	out, err := left.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { io.Copy(io.Discard, out); waited <- left.Wait() }()
	t.Cleanup(func() { left.Process.Kill(); <-waited })
	hivetest.Eventually(t, 5*time.Second, "the process in the dead maker's job cgroup", func() error {
		if !populated(filepath.Join(dead, "s0")) {
			return fmt.Errorf("%s is empty", dead)
		}
		return nil
	})
	EndLeftJobCgroups(owner, 100*time.Millisecond)
	select {
	case <-waited:
		waited <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("the process left in the dead maker's job cgroup still runs")
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead maker's generation: %v, want it removed", err)
	}
	if _, err := os.Stat(g.Dir()); err != nil {
		t.Errorf("the live maker's generation: %v, want it left", err)
	}
}
