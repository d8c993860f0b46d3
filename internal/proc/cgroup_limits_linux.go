package proc

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/limits"
)

// limitControllers are the cgroup controllers of the limits (v2 ones,
// or v1 hierarchies: see cgroupV1), with the field (limits.Memory...)
// each enforces.
var limitControllers = []struct{ ctrl, field string }{
	{"memory", limits.Memory}, {"pids", limits.Pids}, {"cpu", limits.CPUs},
}

// enableControllers enables the limits' controllers for the cgroups
// below each of dirs, from the top (the own cgroup, the base, a
// generation): a controller reaches a job's cgroup only when every
// cgroup above it has it in cgroup.subtree_control. It returns the
// fields whose controller reached the last of dirs. One that cannot be
// enabled is not: the hierarchy does not have it (a hybrid one, where
// cgroup v1 has it), or the own cgroup has processes of its own and is
// not the root (cgroup v2's "no internal processes" rule): those limits
// are rlimits then (limits.Split).
func enableControllers(dirs ...string) map[string]bool {
	if len(dirs) == 0 {
		return nil
	}
	avail, _ := readFile(filepath.Join(dirs[0], "cgroup.controllers"))
	have := strings.Fields(string(avail))
	on := map[string]bool{}
	for _, c := range limitControllers {
		if !slices.Contains(have, c.ctrl) {
			continue
		}
		ok := true
		for _, dir := range dirs {
			sub, _ := readFile(filepath.Join(dir, "cgroup.subtree_control"))
			if slices.Contains(strings.Fields(string(sub)), c.ctrl) {
				continue
			}
			if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c.ctrl), 0) != nil {
				ok = false
				break
			}
		}
		if ok {
			on[c.field] = true
		}
	}
	return on
}

// Controllers are the limits a job's cgroups can enforce, by field
// (limits.Memory, limits.Pids, limits.CPUs): limits.ByCgroup (v2) or
// limits.ByCgroupV1; nil for a nil g.
func (g *JobCgroups) Controllers() limits.Enforced {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ctrl
}

// SetLimits sets l on job id's cgroups (after Prepare, before the
// start): in its v2 cgroup memory.max with memory.swap.max 0, pids.max,
// cpu.max, for the controllers v2 has; the others in v1 cgroups of the
// job's, made now (see cgroupV1): memory.limit_in_bytes with
// memory.memsw.limit_in_bytes, pids.max, cpu.cfs_quota_us. It returns
// how it set each field it set (limits.ByCgroup or ByCgroupV1; those it
// did not are left to rlimits, see limits.Split), and the v1 cgroups
// the job's process is to join before it runs the command (see
// limits.Wrap). nofile is never a cgroup's.
func (g *JobCgroups) SetLimits(id string, l limits.Limits) (set limits.Enforced, join []string) {
	if g == nil || l.IsZero() {
		return nil, nil
	}
	g.mu.Lock()
	slot, ctrl := g.slots[id], g.ctrl
	g.mu.Unlock()
	if slot == "" {
		return nil, nil
	}
	set = limits.Enforced{}
	write := func(field, file, v string) bool {
		return ctrl[field] == limits.ByCgroup && os.WriteFile(filepath.Join(slot, file), []byte(v), 0) == nil
	}
	if l.MemoryMB > 0 && write(limits.Memory, "memory.max", strconv.FormatInt(l.MemoryMB<<20, 10)) {
		write(limits.Memory, "memory.swap.max", "0") // absent without swap accounting: no swap to limit
		set[limits.Memory] = limits.ByCgroup
	}
	if l.Pids > 0 && write(limits.Pids, "pids.max", strconv.FormatInt(l.Pids, 10)) {
		set[limits.Pids] = limits.ByCgroup
	}
	const period = 100000 // us, the kernel's default
	if l.CPUs > 0 && write(limits.CPUs, "cpu.max", fmt.Sprintf("%d %d", int64(math.Round(l.CPUs*period)), period)) {
		set[limits.CPUs] = limits.ByCgroup
	}
	join = g.setLimitsV1(id, slot, l, set)
	return set, join
}

// Usage is what job id's cgroups used so far (see CgroupUsage, and its
// v1 cgroups'); ok false if it has none. Call it before End, which
// removes them.
func (g *JobCgroups) Usage(id string) (u limits.Usage, ok bool) {
	return g.usageOf(id, allCgroupFiles)
}

// EndUsage is Usage at the end of job id, of what its cgroups tell that
// the leader's rusage does not: the memory and pids counters where their
// controllers are on (the memory peak of all its processes together, the
// kills, the refused forks), and cpu.stat (user and system time,
// throttled periods) only if cpu says so (the job had a CPU limit, or
// processes its leader did not wait for may have run). The rusage of a
// reaped leader has the processor time of all it waited for;
// reading cpu.stat flushes the kernel's per-CPU counters of the
// hierarchy, the dearest part of a job's end (about 30 us of the
// holder's processor a job on two CPUs). cpuRead says whether it was.
func (g *JobCgroups) EndUsage(id string, cpu bool) (u limits.Usage, cpuRead, ok bool) {
	if g != nil {
		g.mu.Lock()
		mem, pids := g.ctrl[limits.Memory] == limits.ByCgroup, g.ctrl[limits.Pids] == limits.ByCgroup
		g.mu.Unlock()
		u, ok = g.usageOf(id, cgroupFiles{cpu: cpu, memory: mem, pids: pids})
	}
	return u, cpu && ok, ok
}

func (g *JobCgroups) usageOf(id string, f cgroupFiles) (u limits.Usage, ok bool) {
	if g == nil {
		return limits.Usage{}, false
	}
	g.mu.Lock()
	slot, v1 := g.slots[id], g.v1dirs[id]
	g.mu.Unlock()
	if slot == "" {
		return limits.Usage{}, false
	}
	if u, ok = cgroupUsage(slot, f); ok {
		addV1Usage(&u, v1)
	}
	return u, ok
}

// cgroupFiles says which of a v2 cgroup's counters cgroupUsage reads.
type cgroupFiles struct{ cpu, memory, pids bool }

var allCgroupFiles = cgroupFiles{cpu: true, memory: true, pids: true}

// CgroupUsage reads what cgroup dir used: cpu.stat (user and system
// time, throttled periods), memory.peak and memory.current, the kills
// of memory.events and the refusals of pids.events, those the cgroup has
// (a file of a controller not enabled is absent: its fields stay 0),
// and what the v1 cgroups of the same job tell of the others (see
// cgroupV1: found below this process's own v1 cgroups). ok is false if
// dir is no cgroup (gone).
func CgroupUsage(dir string) (u limits.Usage, ok bool) {
	if u, ok = cgroupUsage(dir, allCgroupFiles); ok {
		var v1 []string
		for _, d := range v1OfSlot(dir) {
			if unix.Access(d, unix.F_OK) == nil { // most jobs have none (no limits)
				v1 = append(v1, d)
			}
		}
		addV1Usage(&u, v1)
	}
	return u, ok
}

// cgroupUsage is CgroupUsage of the v2 cgroup dir alone, of the files f
// names (a file of a controller not enabled is absent: its fields stay
// 0). ok is false if dir is no cgroup (gone).
func cgroupUsage(dir string, f cgroupFiles) (u limits.Usage, ok bool) {
	if f.cpu {
		stat, err := readFile(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return u, false
		}
		u.CPUUserMS = statValue(stat, "user_usec") / 1000
		u.CPUSystemMS = statValue(stat, "system_usec") / 1000
		u.Throttled = statValue(stat, "nr_throttled")
	}
	if f.memory {
		one := func(file string) int64 {
			b, _ := readFile(filepath.Join(dir, file))
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
			return n
		}
		u.MemoryPeakBytes = one("memory.peak")
		u.MemoryBytes = one("memory.current")
		if b, err := readFile(filepath.Join(dir, "memory.events")); err == nil {
			u.OOMKills = statValue(b, "oom_kill")
		}
	}
	if f.pids {
		if b, err := readFile(filepath.Join(dir, "pids.events")); err == nil {
			u.PidsRefused = statValue(b, "max")
		}
	}
	return u, true
}

// statValue is the number of key in b, a cgroup file of "key value"
// lines (cpu.stat, memory.events); 0 if it has none.
func statValue(b []byte, key string) int64 {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if k, v, ok := bytes.Cut(line, []byte(" ")); ok && string(k) == key {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}
