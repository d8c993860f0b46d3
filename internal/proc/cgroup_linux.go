package proc

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup2 finds the cgroup v2 directory of the calling process and
// reports whether it may create cgroups under it (the subtree is
// delegated to it, or it runs as root): where it may, each job could run
// in a cgroup of its own that no process can leave (docs/architecture.md).
// dir is "" when there is no cgroup v2 hierarchy.
func Cgroup2() (dir string, writable bool) {
	mnt := cgroup2Mount()
	if mnt == "" {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			dir = filepath.Join(mnt, filepath.Clean("/"+rest))
			return dir, unix.Access(dir, unix.W_OK) == nil
		}
	}
	return "", false
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, from
// /proc/self/mountinfo ("" if nowhere).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				return f[4]
			}
		}
	}
	return ""
}

// JobCgroups gives each job a cgroup v2 of its own, below the calling
// process's. A job's leader is started into it (clone3 with
// CLONE_INTO_CGROUP), so every process the job starts is in it whatever
// it does to its group, session or environment, and what is left at the
// job's end is listed by cgroup.procs and killed by cgroup.kill
// (docs/architecture.md, "cgroup v2").
//
// The layout is <own cgroup>/hive-<hash of the state dir>/g-<generation>/s<n>:
// a base per state dir, a generation per process that holds jobs (the
// holder, or a daemon that runs its own), and slots. A slot is a job's
// cgroup for the job's life, then, empty, the next job's: making and
// removing a cgroup costs a job 60-100 us, starting into one that exists
// about 10. A nil *JobCgroups does nothing.
type JobCgroups struct {
	mount, base, gen string

	mu    sync.Mutex
	free  []string          // empty slots (paths), the last one first
	slots map[string]string // the slot of each running job, by id
	next  int               // the number of the next new slot
}

// maxFree bounds the empty slots kept for the next jobs.
const maxFree = 64

// OpenJobCgroups makes a generation of cgroups for owner's jobs (owner
// is the state dir) when this machine lets the calling process manage
// cgroups below its own: a cgroup v2 hierarchy, write access to the own
// cgroup, and cgroup.kill (Linux 5.14); where systemd is the init
// system, only in a cgroup it delegated (Delegate=yes marks it with the
// trusted.delegate or user.delegate attribute), since systemd is
// otherwise the one writer of its tree. HIVE_CGROUPS=off turns it off. A
// trial process is started into a slot (a seccomp filter may refuse
// clone3). The error says why there are no cgroups.
//
// The caller must be the one process that holds owner's jobs (it holds
// the state dir's lock): the generations found are those of holders that
// died, and what is left in them is ended (in the background).
func OpenJobCgroups(owner string) (*JobCgroups, error) {
	if v := os.Getenv("HIVE_CGROUPS"); v == "off" || v == "0" || v == "false" {
		return nil, errors.New("HIVE_CGROUPS=" + v)
	}
	mount := cgroup2Mount()
	own, writable := Cgroup2()
	switch {
	case own == "":
		return nil, errors.New("no cgroup v2 hierarchy")
	case !writable:
		return nil, fmt.Errorf("cgroup %s is not writable", own)
	}
	if st, err := os.Stat("/run/systemd/system"); err == nil && st.IsDir() && !delegated(own) {
		return nil, fmt.Errorf("cgroup %s is systemd's (not delegated: run hive in a unit with Delegate=yes)", own)
	}
	base := filepath.Join(own, baseName(owner))
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(base, "cgroup.kill")); err != nil {
		os.Remove(base)
		return nil, errors.New("no cgroup.kill (Linux 5.14 or later has it)")
	}
	var stale []string
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "g-") {
			stale = append(stale, filepath.Join(base, e.Name()))
		}
	}
	g := &JobCgroups{mount: mount, base: base, slots: map[string]string{},
		gen: filepath.Join(base, fmt.Sprintf("g-%d-%x", os.Getpid(), time.Now().UnixNano()))}
	if err := os.Mkdir(g.gen, 0o755); err != nil {
		return nil, err
	}
	if err := g.try(); err != nil {
		removeTree(g.gen)
		os.Remove(base)
		return nil, fmt.Errorf("a process cannot be started into a cgroup: %w", err)
	}
	if len(stale) > 0 {
		go func() {
			for _, dir := range stale {
				var slots []string
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if e.IsDir() {
						slots = append(slots, filepath.Join(dir, e.Name()))
					}
				}
				killDirs(slots, time.Second)
				removeTree(dir)
			}
		}()
	}
	return g, nil
}

// baseName is the name of owner's cgroup: hive-<hash of owner>.
func baseName(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return "hive-" + hex.EncodeToString(sum[:6])
}

// isBaseName reports whether name is one baseName makes.
func isBaseName(name string) bool {
	h, ok := strings.CutPrefix(name, "hive-")
	if !ok || len(h) != 12 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// KillJobCgroups ends what is left in the cgroups slots of owner's jobs
// (what a holder said of each, see SlotOf), as End does, all at once,
// and removes them: the jobs of a holder that died. A path that is not
// a slot of owner's is skipped. It returns how many processes each had.
func KillJobCgroups(owner string, grace time.Duration, slots ...string) []int {
	mount := cgroup2Mount()
	var dirs []string
	var idx []int
	for i, slot := range slots {
		slot = filepath.Clean(slot)
		gen := filepath.Dir(slot)
		base := filepath.Dir(gen)
		if slot == "." || mount == "" || filepath.Base(base) != baseName(owner) || !strings.HasPrefix(filepath.Base(gen), "g-") || !strings.HasPrefix(base, mount+"/") {
			continue
		}
		dirs, idx = append(dirs, slot), append(idx, i)
	}
	counts := make([]int, len(slots))
	for k, n := range killDirs(dirs, grace) {
		counts[idx[k]] = n
	}
	for _, dir := range dirs {
		removeTree(dir)
		os.Remove(filepath.Dir(dir))               // the generation, once empty
		os.Remove(filepath.Dir(filepath.Dir(dir))) // the base, once empty
	}
	return counts
}

// LeaveJobCgroup moves the calling process out of a job's cgroup (a slot
// of a generation of a hive-<hash> cgroup) into the cgroup the
// hive-<hash> one is in: a hive daemon started by a job of another hive
// is not that job's process. from is "" when it is in no job's cgroup.
func LeaveJobCgroup() (from, to string, err error) {
	own, _ := Cgroup2()
	mount := cgroup2Mount()
	if own == "" || mount == "" {
		return "", "", nil
	}
	for dir := own; len(dir) > len(mount); dir = filepath.Dir(dir) {
		gen := filepath.Dir(dir)
		if strings.HasPrefix(filepath.Base(gen), "g-") && isBaseName(filepath.Base(filepath.Dir(gen))) {
			to = filepath.Dir(filepath.Dir(gen))
			err = os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
			return own, to, err
		}
	}
	return "", "", nil
}

// delegated reports whether systemd delegated cgroup dir (Delegate=yes).
func delegated(dir string) bool {
	buf := make([]byte, 8)
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		if n, err := unix.Getxattr(dir, attr, buf); err == nil && string(buf[:n]) == "1" {
			return true
		}
	}
	return false
}

// try starts /bin/sh into a slot and waits for it.
func (g *JobCgroups) try() error {
	id := "try"
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	release, err := g.Prepare(id, cmd)
	if err != nil {
		return err
	}
	err = Start(cmd)
	release()
	if err == nil {
		err = Wait(cmd)
	}
	g.End(id, 0, false)
	return err
}

// Dir is the generation's cgroup ("" for nil).
func (g *JobCgroups) Dir() string {
	if g == nil {
		return ""
	}
	return g.gen
}

// Close removes the empty slots, the generation and the base, those of
// them with no process left (Prepare makes them again).
func (g *JobCgroups) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.free = nil
	g.mu.Unlock()
	removeTree(g.gen)
	os.Remove(g.base)
}

// SlotOf is job id's cgroup, "" if it has none.
func (g *JobCgroups) SlotOf(id string) string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots[id]
}

// Prepare sets cmd to start in a cgroup of its own, job id's until End:
// an empty slot, or a new one. release is to be called once cmd has
// started or failed to (it closes the cgroup's descriptor); End(id) once
// its leader is reaped, or if it failed to start. With an error cmd is
// left as it was.
func (g *JobCgroups) Prepare(id string, cmd *exec.Cmd) (release func(), err error) {
	if g == nil {
		return nil, errors.New("no cgroups")
	}
	g.mu.Lock()
	if _, dup := g.slots[id]; dup {
		g.mu.Unlock()
		return nil, fmt.Errorf("job %q has a cgroup already", id)
	}
	var slot string
	if n := len(g.free); n > 0 {
		slot, g.free = g.free[n-1], g.free[:n-1]
	} else {
		slot = filepath.Join(g.gen, "s"+strconv.Itoa(g.next))
		g.next++
	}
	g.mu.Unlock()
	fd, err := unix.Open(slot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) { // a new slot, or one removed by Close
		if err = os.MkdirAll(slot, 0o755); err == nil {
			fd, err = unix.Open(slot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.slots[id] = slot
	g.mu.Unlock()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return func() { unix.Close(fd) }, nil
}

// End ends what is left in job id's cgroup once its leader is reaped,
// and frees it for the next job: each process in it or below it gets
// SIGTERM, up to grace to exit, then the cgroup gets cgroup.kill
// (SIGKILL to all in its subtree, what they forked meanwhile included).
// It returns how many processes there were; those a Reaper adopted are
// reaped. With check false the caller knows nothing can be left (with a
// subreaper: no adopted process is alive, and what a job leaves is
// adopted), and the cgroup is freed without a look.
func (g *JobCgroups) End(id string, grace time.Duration, check bool) int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	slot, ok := g.slots[id]
	delete(g.slots, id)
	g.mu.Unlock()
	if !ok {
		return 0
	}
	if check && populated(slot) {
		// A cgroup that was written cgroup.kill kills every process
		// later started into it with CLONE_INTO_CGROUP (Linux 6.18 does:
		// its kill count stays ahead of the forking parent's). It is not
		// for another job: it goes, once empty.
		n := killDirs([]string{slot}, grace)[0]
		removeTree(slot)
		return n
	}
	g.mu.Lock()
	if len(g.free) < maxFree {
		g.free = append(g.free, slot)
		slot = ""
	}
	g.mu.Unlock()
	if slot != "" {
		os.Remove(slot)
	}
	return 0
}

// killDirs ends what is in the cgroups dirs and below them: SIGTERM to
// each process (pinned, and checked to be in its cgroup still), up to
// grace for all to exit, then cgroup.kill until each is empty (2 s at
// most). It returns how many processes each had; those a Reaper adopted
// are reaped.
func killDirs(dirs []string, grace time.Duration) []int {
	counts := make([]int, len(dirs))
	var ps []Pinned
	var full []string
	mount := cgroup2Mount()
	for i, dir := range dirs {
		if !populated(dir) {
			continue
		}
		full = append(full, dir)
		rel := "0::" + strings.TrimPrefix(dir, mount)
		for _, pid := range procsUnder(dir) {
			// Pinned, then checked to be in the cgroup still: the pid
			// read may have been reused since by another process.
			if p, ok := Pin(pid, func(Stat) bool { return inCgroup(pid, rel) }); ok {
				ps = append(ps, p)
				counts[i]++
			}
		}
	}
	if len(full) == 0 {
		return counts
	}
	for _, p := range ps {
		p.Signal(syscall.SIGTERM)
	}
	WaitExit(ps, time.Now().Add(grace))
	deadline := time.Now().Add(2 * time.Second)
	for _, dir := range full {
		for wait := time.Millisecond; populated(dir) && time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
			os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
			time.Sleep(wait)
		}
	}
	reapExited(ps)
	for _, p := range ps {
		p.Close()
	}
	if r := active.Load(); r != nil {
		r.Reap()
	}
	return counts
}

// populated reports whether a process is in cgroup dir or below it.
func populated(dir string) bool {
	b, err := readFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && bytes.Contains(b, []byte("populated 1"))
}

// procsUnder lists the processes of cgroup dir and of the cgroups below
// it (a job may make its own, its cgroup being its user's).
func procsUnder(dir string) []int {
	var out []int
	b, _ := readFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, pid)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, procsUnder(filepath.Join(dir, e.Name()))...)
		}
	}
	return out
}

// removeTree removes cgroup dir and the cgroups below it, deepest first
// (rmdir is how a cgroup is removed, its files with it); those with a
// process in them stay.
func removeTree(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir)
}

// inCgroup reports whether process pid's cgroup v2 path is rel ("0::/x")
// or below it.
func inCgroup(pid int, rel string) bool {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == rel || strings.HasPrefix(line, rel+"/") {
			return true
		}
	}
	return false
}
