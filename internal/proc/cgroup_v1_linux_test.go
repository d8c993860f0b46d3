package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/limits"
)

// Where cgroup v2 lacks a limit's controller and its v1 hierarchy is
// writable (a hybrid mount), a job with that limit gets a v1 cgroup:
// below this process's own v1 cgroup (never the hierarchy's root),
// named as its v2 one, with the limit set; the wrapped process is in it
// before the command runs; its usage is read from it; End removes it.
// The v1 cgroups of a dead holder's generation are removed by the next
// open, and Close removes the base, which is made only for a job with
// limits.
func TestJobCgroupsV1(t *testing.T) {
	owner := t.TempDir()
	g := openCgroups(t, owner)
	ctrl := g.Controllers()
	var v1 []string
	for f, by := range ctrl {
		if by == limits.ByCgroupV1 {
			v1 = append(v1, f)
		}
	}
	if len(v1) == 0 {
		t.Skipf("no limit is enforced by cgroup v1 here (enforced: %v)", ctrl)
	}
	for _, h := range g.v1 { // made by the first job with a limit, not before
		if _, err := os.Stat(h.base); !os.IsNotExist(err) {
			t.Errorf("v1 base %s before any job with limits: %v", h.base, err)
		}
	}
	cmd := exec.Command("/bin/cat", "/proc/self/cgroup")
	release, err := g.Prepare("j", cmd)
	if err != nil {
		t.Fatal(err)
	}
	set, join := g.SetLimits("j", limits.Limits{MemoryMB: 64, Pids: 16, CPUs: 0.5, Nofile: 100})
	for _, f := range v1 {
		if set[f] != limits.ByCgroupV1 {
			t.Errorf("SetLimits set %v; want %s by %s", set, f, limits.ByCgroupV1)
		}
	}
	if len(join) == 0 {
		t.Fatal("no v1 cgroup to join")
	}
	want := map[string]string{"memory.limit_in_bytes": "67108864", "pids.max": "16", "cpu.cfs_quota_us": "50000"}
	rel := strings.TrimPrefix(g.SlotOf("j"), filepath.Dir(g.base)) // /hive-<hash>/g-.../s<n>
	for _, dir := range join {
		own := strings.TrimSuffix(dir, rel)
		found := false
		for c, o := range v1Layout() {
			if o == own && v1Knob[c] != "" {
				found = true
				if b, err := os.ReadFile(filepath.Join(dir, v1Knob[c])); err == nil && strings.TrimSpace(string(b)) != want[v1Knob[c]] {
					t.Errorf("%s/%s: %q, want %s", dir, v1Knob[c], b, want[v1Knob[c]])
				}
			}
		}
		if !found {
			t.Errorf("v1 cgroup %s is not below this process's own v1 cgroup of its controller (%v)", dir, v1Layout())
		}
	}
	limits.Wrap(cmd, limits.Rlimits{}, join...)
	out, err := cmd.Output()
	release()
	if err != nil {
		t.Fatalf("the wrapped command: %v: %s", err, out)
	}
	// Each of its v1 hierarchies' lines names the job's cgroup.
	in := 0
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "0::") && strings.HasSuffix(line, rel) {
			in++
		}
	}
	if in < len(join) {
		t.Errorf("the command is in %d of the %d v1 cgroups %v:\n%s", in, len(join), join, out)
	}
	u, ok := g.Usage("j")
	if !ok || (ctrl[limits.Memory] == limits.ByCgroupV1 && u.MemoryPeakBytes <= 0) {
		t.Errorf("usage %+v, %v: want the v1 memory peak", u, ok)
	}
	// What a daemon reads of a job its holder runs, by its v2 cgroup
	// alone: the same (the v1 ones found below its own v1 cgroups).
	if held, ok := CgroupUsage(g.SlotOf("j")); !ok || held.MemoryPeakBytes != u.MemoryPeakBytes {
		t.Errorf("CgroupUsage of the job's v2 cgroup: %+v, %v; want the v1 memory peak, as Usage: %+v", held, ok, u)
	}
	g.End("j", 0, true)
	for _, dir := range join {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the job's v1 cgroup %s is still there after its end: %v", dir, err)
		}
	}

	// A dead holder's generation in v1 (its v2 one gone already): the
	// next open removes it; a live one's stays.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	v1base := strings.TrimSuffix(join[0], rel) + "/" + filepath.Base(g.base)
	staleGen := filepath.Join(v1base, fmt.Sprintf("g-%d-1", dead.Process.Pid))
	liveGen := filepath.Join(v1base, fmt.Sprintf("g-%d-1", os.Getpid()))
	for _, gen := range []string{staleGen, liveGen} {
		if err := os.MkdirAll(filepath.Join(gen, "s0"), 0o755); err != nil {
			t.Fatal(err)
		}
		defer removeTree(gen)
	}
	g.Close()
	next := openCgroups(t, owner)
	hivetest.Eventually(t, 5*time.Second, "the dead generation's v1 cgroup to go", absent(staleGen))
	if _, err := os.Stat(liveGen); err != nil {
		t.Errorf("the v1 generation of a process that runs was removed: %v", err)
	}
	removeTree(liveGen)
	next.Close()
	for _, h := range next.v1 {
		if _, err := os.Stat(h.base); !os.IsNotExist(err) {
			t.Errorf("Close left the v1 base %s: %v", h.base, err)
		}
	}
}

// BenchmarkSetLimits is what a job's limits add to the making of its
// cgroup, on its start's path (no process is started; the removal, in
// the background at a job's end, is not timed): none, v2's files, or
// v1 cgroups made and written (three hierarchies on a hybrid mount).
func BenchmarkSetLimits(b *testing.B) {
	g, err := OpenJobCgroups(b.TempDir())
	if err != nil {
		b.Skipf("no cgroups here: %v", err)
	}
	defer g.Close()
	for _, bc := range []struct {
		name string
		l    limits.Limits
	}{{"none", limits.Limits{}}, {"memory,pids,cpus", limits.Limits{MemoryMB: 64, Pids: 16, CPUs: 0.5}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.Logf("enforced by %v", g.Controllers())
			for i := 0; b.Loop(); i++ {
				id := strconv.Itoa(i)
				release, err := g.Prepare(id, exec.Command("true"))
				if err != nil {
					b.Fatal(err)
				}
				g.SetLimits(id, bc.l)
				release()
				b.StopTimer()
				g.End(id, 0, true)
				b.StartTimer()
			}
		})
	}
}
