package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/limits"
)

// A hybrid machine mounts cgroup v1 and v2 side by side: the v2
// hierarchy (where JobCgroups makes each job's cgroup, for what it
// contains and kills) may lack the limits' controllers, which v1
// hierarchies have. For each limit whose controller v2 cannot enable,
// JobCgroups then uses the v1 hierarchy of that controller, if it is
// mounted and the calling process may make cgroups in its own cgroup
// there: a job with that limit gets a v1 cgroup too, laid out as its v2
// one below the own v1 cgroup (<own>/hive-<hash>/g-<pid>-<time>/s<n>),
// never at the hierarchy's root (a sandbox's memory limit binds the
// job's memory cgroup as it binds the spawner). A job without limits
// gets none: its v1 cgroups are made by SetLimits. The job's process
// joins them before it runs the command (limits.Wrap), and they are
// removed at its end, after its usage is read; those of a holder that
// died are removed at the next open, with its v2 generations.

// cgroupV1 is the v1 hierarchy that enforces one limit.
type cgroupV1 struct {
	field string // limits.Memory...
	ctrl  string // its controller: memory, pids, cpu
	base  string // <mount><own cgroup>/hive-<hash>: the jobs' v1 cgroups are below it
}

// v1Layout is where this process's cgroup is in each cgroup v1
// hierarchy, by controller (memory: /sys/fs/cgroup/memory/x/y), from
// /proc/self/mountinfo and /proc/self/cgroup; nil where there is none.
// It is read each time (LeaveJobCgroup may move this process).
func v1Layout() map[string]string {
	own := map[string]string{} // controller: path in its hierarchy
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		// id:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - cgroup source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fs, f := strings.Fields(post), strings.Fields(pre)
		if !ok || len(fs) < 3 || fs[0] != "cgroup" || len(f) < 5 {
			continue
		}
		root, mnt := f[3], f[4]
		for _, c := range strings.Split(fs[2], ",") {
			path, ok := own[c]
			if !ok {
				continue
			}
			// The mount shows root (of the hierarchy) at mnt: the own
			// cgroup is seen there only if it is below root.
			rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/"))
			if ok && (rel == "" || rel[0] == '/') {
				if _, dup := out[c]; !dup {
					out[c] = filepath.Join(mnt, rel)
				}
			}
		}
	}
	return out
}

// v1Knob is the file of a v1 controller that a limit is written to: it
// tells that a cgroup of that hierarchy can take the limit (pids.max is
// absent from the root cgroup).
var v1Knob = map[string]string{"memory": "memory.limit_in_bytes", "pids": "pids.max", "cpu": "cpu.cfs_quota_us"}

// openV1 finds the v1 hierarchies of the limits that v2 cannot enforce
// (not in v2) where a cgroup made in the own cgroup (the base, named
// name) takes the limit; it returns those.
func openV1(name string, v2 map[string]bool) []cgroupV1 {
	var out []cgroupV1
	layout := v1Layout()
	for _, c := range limitControllers {
		own := layout[c.ctrl]
		if v2[c.field] || own == "" || unix.Access(own, unix.W_OK) != nil {
			continue
		}
		base := filepath.Join(own, name)
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			continue
		}
		_, err := os.Stat(filepath.Join(base, v1Knob[c.ctrl]))
		// Made again by the first job with the limit (SetLimits): a
		// spawner whose jobs have none leaves nothing here, even if
		// it dies. One with what a dead one left stays.
		os.Remove(base)
		if err == nil {
			out = append(out, cgroupV1{field: c.field, ctrl: c.ctrl, base: base})
		}
	}
	return out
}

// enforcedBy is what a job's cgroups can enforce: the fields of v2 (by
// its controllers) and those of v1.
func enforcedBy(v2 map[string]bool, v1 []cgroupV1) limits.Enforced {
	by := limits.Enforced{}
	for f := range v2 {
		by[f] = limits.ByCgroup
	}
	for _, h := range v1 {
		if by[h.field] == "" {
			by[h.field] = limits.ByCgroupV1
		}
	}
	return by
}

// v1Of is the v1 counterparts of path, a cgroup at or below the base
// (the base, a generation, a job's): one per v1 hierarchy, none if g
// has no v1 ones.
func (g *JobCgroups) v1Of(path string) []string {
	if len(g.v1) == 0 {
		return nil
	}
	rel, err := filepath.Rel(g.base, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil
	}
	var out []string
	for _, h := range g.v1 {
		if p := filepath.Join(h.base, rel); !slices.Contains(out, p) { // controllers mounted together share a hierarchy
			out = append(out, p)
		}
	}
	return out
}

// setLimitsV1 makes job id's v1 cgroups (slot is its v2 one) and sets
// l's fields that v1 enforces in them (those set is missing). It
// returns the cgroups the job's process is to join (limits.Wrap).
func (g *JobCgroups) setLimitsV1(id, slot string, l limits.Limits, set limits.Enforced) (join []string) {
	rel, err := filepath.Rel(g.base, slot)
	if err != nil || len(g.v1) == 0 {
		return nil
	}
	var made []string
	for _, h := range g.v1 {
		var files [][2]string
		switch {
		case set[h.field] != "":
			continue
		case h.field == limits.Memory && l.MemoryMB > 0:
			n := strconv.FormatInt(l.MemoryMB<<20, 10)
			// memsw (memory and swap together) after the memory one,
			// which it may not be below; equal to it: no swap. Absent
			// without swap accounting.
			files = [][2]string{{"memory.limit_in_bytes", n}, {"memory.memsw.limit_in_bytes", n}}
		case h.field == limits.Pids && l.Pids > 0:
			files = [][2]string{{"pids.max", strconv.FormatInt(l.Pids, 10)}}
		case h.field == limits.CPUs && l.CPUs > 0:
			const period = 100000 // us, the kernel's default
			files = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)},
				{"cpu.cfs_quota_us", strconv.FormatInt(int64(math.Round(l.CPUs*period)), 10)}}
		default:
			continue
		}
		dir := filepath.Join(h.base, rel)
		if !slices.Contains(made, dir) {
			if err := os.MkdirAll(dir, 0o755); err != nil { // all: with its generation
				continue
			}
			made = append(made, dir)
		}
		ok := true
		for i, f := range files {
			err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0)
			if err != nil && !(i > 0 && errors.Is(err, fs.ErrNotExist)) {
				ok = false
				break
			}
		}
		if ok {
			set[h.field] = limits.ByCgroupV1
			if !slices.Contains(join, dir) {
				join = append(join, dir)
			}
		}
	}
	g.mu.Lock()
	if g.v1dirs == nil {
		g.v1dirs = map[string][]string{}
	}
	g.v1dirs[id] = made
	g.mu.Unlock()
	return join
}

// removeV1 removes v1 cgroups dirs, those without a process (the
// job's processes are in its v2 cgroup too, ended first); it returns
// those it could not remove.
func removeV1(dirs []string) (left []string) {
	for _, dir := range dirs {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			left = append(left, dir)
		}
	}
	return left
}

// addV1Usage adds to u what the v1 cgroups dirs tell and the v2 one
// did not (a controller v2 does not have): the memory peak and now
// (memory.max_usage_in_bytes, memory.usage_in_bytes), the OOM kills
// (memory.oom_control's oom_kill), the pids refusals (pids.events max)
// and the throttled periods (cpu.stat nr_throttled). CPU time is v2's
// cpu.stat, in every v2 cgroup.
func addV1Usage(u *limits.Usage, dirs []string) {
	one := func(dir, file string) (int64, bool) {
		b, err := readFile(filepath.Join(dir, file))
		if err != nil {
			return 0, false
		}
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		return n, true
	}
	for _, dir := range dirs {
		if n, ok := one(dir, "memory.max_usage_in_bytes"); ok && u.MemoryPeakBytes == 0 {
			u.MemoryPeakBytes = n
			u.MemoryBytes, _ = one(dir, "memory.usage_in_bytes")
			if b, err := readFile(filepath.Join(dir, "memory.oom_control")); err == nil {
				u.OOMKills = statValue(b, "oom_kill")
			}
		}
		if b, err := readFile(filepath.Join(dir, "pids.events")); err == nil && u.PidsRefused == 0 {
			u.PidsRefused = statValue(b, "max")
		}
		if b, err := readFile(filepath.Join(dir, "cpu.stat")); err == nil && u.Throttled == 0 {
			u.Throttled = statValue(b, "nr_throttled")
		}
	}
}

// v1OfSlot is the v1 counterparts of a job's v2 cgroup (or a
// generation) that another process made (a holder): below this
// process's own v1 cgroups, the same path from the hive-<hash> base on.
// A holder started by this daemon shares its v1 cgroups; one that
// another started may not, and then none are found.
func v1OfSlot(path string) []string {
	var rel string
	for dir := path; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if isBaseName(filepath.Base(dir)) {
			rel = strings.TrimPrefix(path, filepath.Dir(dir))
			break
		}
	}
	if rel == "" {
		return nil
	}
	var out []string
	layout := v1Layout() // two files read and parsed: once, not once a controller
	for _, c := range limitControllers {
		if own := layout[c.ctrl]; own != "" && !slices.Contains(out, own+rel) {
			out = append(out, own+rel)
		}
	}
	return out
}

// leaveJobCgroupsV1 moves this process out of the v1 cgroups of a job
// it is in into the cgroup that holds the hive-<hash> one, in each
// hierarchy (see LeaveJobCgroup).
func leaveJobCgroupsV1() error {
	var errs []error
	pid := []byte(strconv.Itoa(os.Getpid()))
	done := map[string]bool{}
	for _, own := range v1Layout() {
		for dir := own; dir != "/" && dir != "." && !done[own]; dir = filepath.Dir(dir) {
			if up := aboveJobCgroup(dir); up != "" {
				done[own] = true
				if err := os.WriteFile(filepath.Join(up, "cgroup.procs"), pid, 0); err != nil {
					errs = append(errs, fmt.Errorf("leave the job's cgroup v1 %s: %w", own, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
