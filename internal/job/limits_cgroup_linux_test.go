package job

import (
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
)

// cgroupsWith opens job cgroups, or skips the test where they cannot
// enforce the limit field (no cgroup v2, or a hierarchy without the
// controller: a hybrid one where cgroup v1 has it).
func cgroupsWith(t *testing.T, field string) *proc.JobCgroups {
	t.Helper()
	g, err := proc.OpenJobCgroups(t.TempDir())
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	t.Cleanup(g.Close)
	if g.Controllers()[field] == "" {
		t.Skipf("the cgroups here cannot enforce %s (its controller is neither available in %s nor in a writable cgroup v1 hierarchy)", field, g.Dir())
	}
	return g
}

// A memory hog (it doubles a string up to 256 MiB) under a 64 MiB
// memory limit is killed by it: the job says so, not a plain exit 137,
// and tells its peak.
func TestCgroupMemoryLimit(t *testing.T) {
	g := cgroupsWith(t, limits.Memory)
	h := newHarness(t, Options{Cgroups: g, Grace: time.Second})
	in := h.wait(h.start(Spec{Cmd: `awk 'BEGIN { s = "x"; while (length(s) < 256 * 1024 * 1024) s = s s; print "grew to", length(s) }'`,
		Limits: limits.Limits{MemoryMB: 64}}))
	m := in.Meaning()
	if in.LimitHit != limits.Memory || m.Status != "error" || m.Message != "Killed by the memory limit (64 MiB)" {
		t.Errorf("limit hit %q, meaning %+v; want memory_mb, error, killed by the memory limit", in.LimitHit, m)
	}
	if in.LimitsBy[limits.Memory] != g.Controllers()[limits.Memory] {
		t.Errorf("enforced by %v", in.LimitsBy)
	}
	if in.Usage == nil || in.Usage.OOMKills == 0 || in.Usage.MemoryPeakBytes < 32<<20 || in.Usage.MemoryPeakBytes > 80<<20 {
		t.Errorf("usage %+v: want an OOM kill and a peak near 64 MiB", in.Usage)
	}
}

// A bounded fork loop (64 sleepers) under pids 16 is contained: the
// forks past the limit are refused and counted.
func TestCgroupPidsLimit(t *testing.T) {
	g := cgroupsWith(t, limits.Pids)
	h := newHarness(t, Options{Cgroups: g, Grace: time.Second})
	in := h.wait(h.start(Spec{Cmd: `for i in $(seq 64); do sleep 1 2>/dev/null & done 2>/dev/null; wait; echo done`,
		Limits: limits.Limits{Pids: 16}}))
	if in.LimitHit != limits.Pids || in.Usage == nil || in.Usage.PidsRefused == 0 {
		t.Fatalf("limit hit %q, usage %+v: want pids, refusals counted", in.LimitHit, in.Usage)
	}
	if m := in.Meaning(); m.Status != "error" || !strings.Contains(m.Message, "refused by the pids limit (16)") {
		t.Errorf("meaning %+v", m)
	}
}

// A busy loop under cpus 0.5 for 2 s uses about half a core, and its
// cgroup's throttled periods are counted. The loop is a shell's alone
// (no process per turn, whose start would count against it on a busy
// machine), for 2 s of wall time exactly. The same loop without a limit
// runs beside it: on a machine too busy to give it most of a core, or
// to give the limited one as much as its limit, a limit of half a core
// may not show (the limited loop is never throttled), and the test then
// skips.
func TestCgroupCPUsLimit(t *testing.T) {
	g := cgroupsWith(t, limits.CPUs)
	h := newHarness(t, Options{Cgroups: g, Grace: time.Second})
	const loop = `sh -c 'while :; do :; done' & sleep 2; kill $!`
	limited := h.start(Spec{Cmd: loop, Limits: limits.Limits{CPUs: 0.5}})
	free := h.start(Spec{Cmd: loop})
	in, ctl := h.wait(limited), h.wait(free)
	if in.Usage == nil || ctl.Usage == nil {
		t.Fatalf("usage %+v, %+v", in.Usage, ctl.Usage)
	}
	share := func(in Info) float64 {
		return float64(in.Usage.CPUUserMS+in.Usage.CPUSystemMS) / float64(in.Duration().Milliseconds())
	}
	r, rc := share(in), share(ctl)
	if (rc < 0.8 || r < 0.45) && in.Usage.Throttled == 0 {
		t.Skipf("the machine is too busy to show a CPU limit: the unlimited loop beside it got %.2f of a core, the limited one %.2f, never throttled", rc, r)
	}
	if r < 0.25 || r > 0.75 {
		t.Errorf("cpu %+v over %v of wall time: %.2f of a core, want about 0.5 (the unlimited loop: %.2f)", in.Usage, in.Duration(), r, rc)
	}
	if in.Usage.Throttled == 0 {
		t.Errorf("usage %+v: no throttled period", in.Usage)
	}
}

// A job in a cgroup tells its CPU time from the cgroup's cpu.stat, that
// of every process of it: here of a child the leader never waits for
// (rusage would not count it).
func TestCgroupUsage(t *testing.T) {
	g, err := proc.OpenJobCgroups(t.TempDir())
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	t.Cleanup(g.Close)
	h := newHarness(t, Options{Cgroups: g, Grace: time.Second})
	// The busy child counts to 100000 (well over 50 ms of CPU); the
	// leader execs sleep, which never waits for it.
	in := h.wait(h.start(Spec{Cmd: `sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done' & exec sleep 1`}))
	if in.Usage == nil || in.Usage.CPUUserMS+in.Usage.CPUSystemMS < 50 {
		t.Errorf("usage %+v: want the busy child's CPU time", in.Usage)
	}
}
