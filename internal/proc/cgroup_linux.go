package proc

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/limits"
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
// it does to its group, session or environment (only a write of its pid
// into another cgroup's cgroup.procs takes it out), and what is left at
// the job's end is listed by cgroup.procs and killed (docs/architecture.md,
// "cgroup v2").
//
// The layout is <own cgroup>/hive-<hash>/g-<pid>-<time>/s<n> (the hash of the
// state dir and the PID namespace, see baseName):
// a base per state dir, a generation per process that holds jobs (the
// holder, or a daemon that runs its own), and one cgroup per job, never
// reused (a job can leave its cgroup killing or freezing whatever starts
// into it next: cgroup.kill, cgroup.freeze). Making and removing one
// costs 60-100 us, so both are done off the jobs' path: a few are made
// ahead, and those of ended jobs are removed in the background (where
// what is still in one is found and killed). A nil *JobCgroups does
// nothing.
//
// A job runs as the user of the holder, so it can write the files of
// every cgroup here: a write to the cgroup.kill of its generation or of
// the base kills what runs in them (and the kernel then kills what is
// started later, with CLONE_INTO_CGROUP, into a cgroup that was below
// it: see watcher), one to a spare's cgroup.freeze freezes the job that
// is started into it. Such writes are watched (inotify): a spare that
// was written is dropped, a write to the generation or the base drops
// all spares and starts a new generation, and a job whose cgroup or one
// above it was written cgroup.kill is told by Killed.
//
// A job's limits are set on its cgroup (SetLimits); those whose
// controller the v2 hierarchy does not have (a hybrid mount) on cgroup
// v1 ones of the job's, where v1 has it (see cgroupV1).
type JobCgroups struct {
	mount, base, gen string
	v1               []cgroupV1 // the v1 hierarchies of the limits v2 cannot take (set at the open)

	mu     sync.Mutex
	ctrl   limits.Enforced   // the limits a job's cgroups can take (enableControllers, openV1)
	spares []spare           // made ahead, never used
	slots  map[string]string // the cgroup of each running job, by id
	done   []string          // ended jobs' cgroups, to remove
	old    []string          // generations left after a write to them, to remove once empty
	next   int               // the number of the next cgroup
	epoch  int               // bumped each time the spares are dropped
	w      *watcher          // nil: no watch, and no spares
	wds    map[string]int32  // the watch of each running job's cgroup, by id
	killed map[string]bool   // jobs whose cgroup was written cgroup.kill
	wake   chan struct{}     // the worker: make spares, remove done
	stop   chan struct{}     // closed by Close
	worker sync.WaitGroup
	pokes  atomic.Int64 // the worker's wake-ups (tests)

	v1dirs map[string][]string // under mu: the v1 cgroups of each running job, by id (SetLimits)
	doneV1 []string            // under mu: ended jobs' v1 cgroups, to remove
	lent   map[string]bool     // under mu: spares lent (Lend), not adopted or taken back yet

	onSpares func() // under mu: told once the worker made spares (OnSpares)
}

// OnSpares has f called (on the worker's goroutine, no lock held) each
// time the worker has made spares: a holder lends them to a daemon whose
// loan ran short while there were none (Lend gives what there is).
func (g *JobCgroups) OnSpares(f func()) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.onSpares = f
	g.mu.Unlock()
}

// spare is a cgroup made ahead, open and watched.
type spare struct {
	path string
	fd   int
	wd   int32 // its watch, -1 if none
}

// watcher is an inotify instance that watches the base, the
// generations, the spares and the running jobs' cgroups: a write to a
// file of a cgroup is an IN_MODIFY event of its directory, queued before
// the write returns, so a job that wrote one has its write seen by the
// time its end is (Prepare and Killed read the queue first). A write
// through another mount of the cgroup hierarchy in another cgroup
// namespace is not seen (another superblock).
//
// Linux (6.18 here) kills a process started with CLONE_INTO_CGROUP into
// a cgroup that was ever below a cgroup.kill written (its kill_seq
// differs from the one of the cgroup the caller is in): a spare made
// before a write to its generation's or the base's cgroup.kill kills
// every job started into it.
type watcher struct {
	fd  int
	of  map[int32]watched // by watch descriptor
	buf []byte
}

// watched is what a watch is on.
type watched struct {
	kind watchKind
	path string // the cgroup
	id   string // watchJob: the job
}

type watchKind uint8

const (
	watchBase  watchKind = iota // the base
	watchGen                    // a generation, current or left
	watchSpare                  // a spare
	watchJob                    // a running job's cgroup
)

// spares is how many cgroups are made ahead: a keeping daemon's loan
// (the holder's spareLoan), lent half at a time.
const spares = 16

// workDelay is how long the worker waits after a poke.
const workDelay = 3 * time.Millisecond

// lowSpares: a Lend that leaves fewer spares made ahead wakes the worker
// to make more. Above it they are made again with the removal of the
// cgroup of a job that ended (End wakes the worker): one pass of the
// worker a kept job, not two (one at its start, one at its end). A pass
// is a wake-up of the holder on its own, which costs it more processor
// time than the work (issue 20).
const lowSpares = spares / 2

// OpenJobCgroups makes a generation of cgroups for owner's jobs (owner
// is the state dir) when this machine lets the calling process manage
// cgroups below its own: a cgroup v2 hierarchy, write access to the own
// cgroup, and cgroup.kill (Linux 5.14); where systemd is the init
// system, only in a cgroup it delegated (Delegate=yes marks it with the
// trusted.delegate or user.delegate attribute), since systemd is
// otherwise the one writer of its tree. HIVE_CGROUPS=off turns it off. A
// trial process is started into a cgroup (a seccomp filter may refuse
// clone3). The error says why there are no cgroups.
//
// The caller holds the state dir's jobs (its lock): the generations it
// finds whose process is gone are those of holders or daemons that died,
// and what is left in them is ended, in the background.
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
	g := &JobCgroups{mount: mount, base: base, slots: map[string]string{}, gen: newGenPath(base),
		wds: map[string]int32{}, killed: map[string]bool{}, v1dirs: map[string][]string{}, lent: map[string]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	// The base may go meanwhile (a daemon removes it once empty, after
	// a dead holder's jobs): made again, a few times.
	var err error
	for try := 0; try < 3; try++ {
		if err = os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if err = os.Mkdir(g.gen, 0o755); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(g.gen, "cgroup.kill")); err != nil {
		removeTree(g.gen)
		os.Remove(base)
		return nil, errors.New("no cgroup.kill (Linux 5.14 or later has it)")
	}
	v2 := enableControllers(own, base, g.gen)
	g.v1 = openV1(filepath.Base(base), v2)
	g.ctrl = enforcedBy(v2, g.v1)
	if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
		g.w = &watcher{fd: fd, of: map[int32]watched{}, buf: make([]byte, 16<<10)}
		g.mu.Lock()
		g.watchLocked(watched{kind: watchBase, path: base})
		g.watchLocked(watched{kind: watchGen, path: g.gen})
		g.mu.Unlock()
	}
	if err := g.try(); err != nil {
		g.closeWatcher()
		removeTree(g.gen)
		os.Remove(base)
		for _, h := range g.v1 {
			os.Remove(h.base)
		}
		return nil, fmt.Errorf("a process cannot be started into a cgroup: %w", err)
	}
	var stale []string
	for _, b := range append([]string{base}, g.v1Of(base)...) {
		// The v1 ones are ended with the v2 ones (the same processes):
		// what is found is removed then, even with its v2 one gone.
		ents, _ := os.ReadDir(b)
		for _, e := range ents {
			if dir := filepath.Join(b, e.Name()); e.IsDir() && e.Name() != filepath.Base(g.gen) && genGone(e.Name()) {
				stale = append(stale, dir)
			}
		}
	}
	// The first spares are made now: the first jobs find them, and what
	// the process holds (their descriptors) is steady from here on.
	g.refill()
	g.worker.Add(1)
	go g.work(stale)
	return g, nil
}

// newGenPath is the path of a new generation in base.
func newGenPath(base string) string {
	return filepath.Join(base, fmt.Sprintf("g-%d-%x", os.Getpid(), time.Now().UnixNano()))
}

// genGone reports whether the process that made generation name
// (g-<pid>-<time>) is gone: only then is what is in it left over.
func genGone(name string) bool {
	rest, ok := strings.CutPrefix(name, "g-")
	if !ok {
		return false
	}
	pidS, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidS)
	return err == nil && pid > 0 && unix.Kill(pid, 0) == unix.ESRCH
}

// work is the worker: it ends the stale generations, then, on each
// poke, removes the cgroups of ended jobs and makes spares.
func (g *JobCgroups) work(stale []string) {
	defer g.worker.Done()
	for _, dir := range stale { // the v2 ones first: the v1 ones are then empty
		if strings.HasPrefix(dir, g.base+"/") {
			killGen(dir, time.Second)
		} else {
			removeTree(dir)
		}
	}
	for {
		select {
		case <-g.stop:
			return
		case <-g.wake:
		}
		// The work waits a little: a job's start and end are round trips
		// of a client, and on few CPUs the work would delay the one that
		// poked (its answer, or the job).
		select {
		case <-g.stop:
			return
		case <-time.After(workDelay):
		}
		g.removeDone()
		g.refill()
	}
}

// refill makes spares until there are enough (or one cannot be made or
// watched: a job's cgroup is then made at its start).
func (g *JobCgroups) refill() {
	if g.makeSpares() {
		g.mu.Lock()
		f := g.onSpares
		g.mu.Unlock()
		if f != nil {
			f()
		}
	}
}

// makeSpares makes spares until there are enough (or one cannot be made
// or watched: a job's cgroup is then made at its start), and reports
// whether it made any.
func (g *JobCgroups) makeSpares() (made bool) {
	for {
		g.mu.Lock()
		g.drainLocked()
		if g.w == nil || len(g.spares) >= spares {
			g.mu.Unlock()
			return made
		}
		path, epoch := g.newPathLocked(), g.epoch
		g.mu.Unlock()
		s, err := makeSpare(path)
		if err != nil {
			return made // made at the start instead
		}
		g.mu.Lock()
		// Watched from now on: a write between its mkdir and this
		// is not seen (its name is not known before).
		renewed := epoch != g.epoch // a write to the generation meanwhile
		ok := !renewed
		if ok {
			s.wd = g.watchLocked(watched{kind: watchSpare, path: path})
			ok = s.wd >= 0
		}
		if ok {
			g.spares = append(g.spares, s)
			made = true
		} else {
			unix.Close(s.fd)
			g.done = append(g.done, s.path)
		}
		g.mu.Unlock()
		if !ok && !renewed {
			return made // not watched: made at the start instead
		}
	}
}

// removeDone removes the cgroups of ended jobs. One that is not empty
// holds what the look at the job's end did not see (see End): it is
// ended now.
func (g *JobCgroups) removeDone() {
	g.mu.Lock()
	done := g.done
	g.done = nil
	g.mu.Unlock()
	for _, dir := range done {
		// rmdir, not os.Remove: that tries unlink first (EISDIR), a
		// system call a job.
		if unix.Rmdir(dir) != nil {
			killDirs([]string{dir}, time.Second)
			removeTree(dir)
		}
	}
	g.mu.Lock()
	doneV1 := g.doneV1
	g.doneV1 = nil
	g.mu.Unlock()
	// Removed after the v2 ones: a process left in one is in the v2 one
	// too, ended above. One that is not empty still (a process that
	// moved itself out of its v2 cgroup) is tried again next time.
	left := removeV1(doneV1)
	g.mu.Lock()
	g.doneV1 = append(g.doneV1, left...)
	old := g.old[:0]
	for _, gen := range g.old {
		if err := os.Remove(gen); err != nil && !errors.Is(err, fs.ErrNotExist) {
			old = append(old, gen) // a job of it runs still
		} else {
			removeV1(g.v1Of(gen))
		}
	}
	g.old = old
	g.mu.Unlock()
}

// watchLocked watches cgroup w.path for writes to its files, and for
// cgroups made in it; it returns the watch descriptor, -1 if it is not
// watched.
func (g *JobCgroups) watchLocked(w watched) int32 {
	if g.w == nil {
		return -1
	}
	wd, err := unix.InotifyAddWatch(g.w.fd, w.path, unix.IN_MODIFY|unix.IN_CREATE)
	if err != nil {
		return -1
	}
	g.w.of[int32(wd)] = w
	return int32(wd)
}

// drainLocked reads the writes the watcher has queued (see noteLocked).
func (g *JobCgroups) drainLocked() {
	if g.w == nil {
		return
	}
	const head = unix.SizeofInotifyEvent
	for {
		n, err := unix.Read(g.w.fd, g.w.buf)
		if err != nil || n < head {
			return // EAGAIN: none
		}
		b := g.w.buf[:n]
		for len(b) >= head {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := min(int(binary.NativeEndian.Uint32(b[12:])), len(b)-head)
			name := string(bytes.TrimRight(b[head:head+size], "\x00"))
			b = b[head+size:]
			g.noteLocked(wd, mask, name)
		}
	}
}

// noteLocked takes a write (or a cgroup made, or a notice of the
// kernel's) to file name of the cgroup watched as wd: a spare so
// touched is dropped; a write to the generation or the base drops all
// spares and starts a new generation (see renewLocked); one to a
// cgroup.kill marks the jobs below it killed. A lost event (the queue
// overflowed) counts as a write to the generation.
func (g *JobCgroups) noteLocked(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		g.renewLocked()
		return
	}
	w, ok := g.w.of[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 { // the cgroup is gone
		delete(g.w.of, wd)
		return
	}
	switch w.kind {
	case watchSpare: // whatever it was: a write, a process moved in (its cgroup.events), a cgroup made in it
		for i, s := range g.spares {
			if s.wd == wd {
				unix.Close(s.fd)
				g.done = append(g.done, s.path)
				g.spares = slices.Delete(g.spares, i, i+1)
				break
			}
		}
		delete(g.w.of, wd)
		g.poke()
	case watchJob:
		if name == "cgroup.kill" {
			g.killed[w.id] = true
		}
	case watchBase, watchGen:
		// cgroup.events and the like are the kernel's notices (a job's
		// start or end), and hive makes the cgroups in them.
		if mask&unix.IN_CREATE != 0 || strings.HasSuffix(name, ".events") || strings.HasSuffix(name, ".events.local") {
			return
		}
		if name == "cgroup.kill" {
			for id, slot := range g.slots {
				if strings.HasPrefix(slot, w.path+"/") {
					g.killed[id] = true
				}
			}
		}
		if w.kind == watchBase || w.path == g.gen {
			g.renewLocked()
		}
	}
}

// renewLocked drops the spares (a cgroup.kill written above them kills
// what is started into them, a cgroup.freeze freezes it) and starts a
// new generation for the next jobs, made now: what was written to the
// old one (a freeze, a limit) does not reach them. A base frozen is
// thawed.
func (g *JobCgroups) renewLocked() {
	for _, s := range g.spares {
		unix.Close(s.fd)
		delete(g.w.of, s.wd)
		g.done = append(g.done, s.path)
	}
	g.spares = nil
	g.epoch++
	if b, _ := readFile(filepath.Join(g.base, "cgroup.freeze")); bytes.HasPrefix(b, []byte("1")) {
		os.WriteFile(filepath.Join(g.base, "cgroup.freeze"), []byte("0"), 0)
	}
	gen := newGenPath(g.base)
	if err := os.MkdirAll(gen, 0o755); err == nil { // all: the base may have gone
		g.ctrl = enforcedBy(enableControllers(g.base, gen), g.v1)
		g.old = append(g.old, g.gen)
		g.gen = gen
		g.watchLocked(watched{kind: watchGen, path: gen})
	}
	g.poke()
}

// closeWatcher closes the watcher: no spares are made after it.
func (g *JobCgroups) closeWatcher() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		unix.Close(g.w.fd)
		g.w = nil
	}
}

// Killed reports whether job id's cgroup, or one above it, was written
// cgroup.kill while the job ran (not by hive: it writes only those of
// ended jobs). A job whose leader was killed by SIGKILL that hive did
// not send asks: the write is seen once it has returned, a moment after
// the kill it makes, so Killed waits up to wait for it. Call it before
// End.
func (g *JobCgroups) Killed(id string, wait time.Duration) bool {
	if g == nil {
		return false
	}
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 16*time.Millisecond) {
		g.mu.Lock()
		g.drainLocked()
		killed, watching := g.killed[id], g.w != nil
		g.mu.Unlock()
		if killed || !watching || !time.Now().Before(deadline) {
			return killed
		}
		time.Sleep(min(pause, time.Until(deadline)))
	}
}

func (g *JobCgroups) poke() {
	g.pokes.Add(1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *JobCgroups) newPathLocked() string {
	p := filepath.Join(g.gen, "s"+strconv.Itoa(g.next))
	g.next++
	return p
}

// makeSpare makes cgroup path and opens it.
func makeSpare(path string) (spare, error) {
	// One mkdir; all of the path only if its parent has gone (the base
	// or the generation removed from outside): os.MkdirAll would stat
	// the path first, a system call a job.
	if err := unix.Mkdir(path, 0o755); err != nil {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return spare{}, err
		}
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(path)
		return spare{}, err
	}
	return spare{path, fd, -1}, nil
}

// killGen ends what is left in generation dir and removes it.
func killGen(dir string, grace time.Duration) int {
	var slots []string
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			slots = append(slots, filepath.Join(dir, e.Name()))
		}
	}
	n := 0
	for _, k := range killDirs(slots, grace) {
		n += k
	}
	removeTree(dir)
	return n
}

// baseName is the name of owner's cgroup: hive-<hash of owner and of
// this PID namespace>. Two hives of one state dir path in two PID
// namespaces (containers, sandboxes) may share a cgroup: each would see
// the other's generations as made by processes that are gone (genGone).
func baseName(owner string) string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	sum := sha256.Sum256([]byte(owner + "\x00" + ns))
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

// EndCgroup ends what is in the cgroup dir and below it, as End does for
// a job's own (SIGTERM, up to grace, then SIGKILL): for a job whose
// cgroup another process's JobCgroups made and removes (a holder's, lent
// to the daemon that started the job). It returns how many processes
// there were.
func EndCgroup(dir string, grace time.Duration) int {
	if dir == "" || !populated(dir) {
		return 0
	}
	return killDirs([]string{dir}, grace)[0]
}

// KillJobCgroups ends what is left in the generations of owner's job
// cgroups that slots are in (what a holder said of each of its jobs, see
// SlotOf), all at once, and removes them: a holder that died, all of its
// jobs. A path that is not a job cgroup of owner's is skipped. It
// returns how many processes each slot had.
func KillJobCgroups(owner string, grace time.Duration, slots ...string) []int {
	mount := cgroup2Mount()
	counts := make([]int, len(slots))
	var dirs []string
	var idx []int
	gens := map[string]bool{}
	for i, slot := range slots {
		slot = filepath.Clean(slot)
		gen := filepath.Dir(slot)
		base := filepath.Dir(gen)
		if slot == "." || mount == "" || filepath.Base(base) != baseName(owner) || !strings.HasPrefix(filepath.Base(gen), "g-") || !strings.HasPrefix(base, mount+"/") {
			continue
		}
		dirs, idx = append(dirs, slot), append(idx, i)
		gens[gen] = true
	}
	for k, n := range killDirs(dirs, grace) {
		counts[idx[k]] = n
	}
	for gen := range gens { // the rest of it: spares, jobs whose start was in flight
		endGen(gen, grace)
	}
	return counts
}

// endGen ends what is left in generation gen, removes it and its jobs'
// v1 cgroups, and its base once empty.
func endGen(gen string, grace time.Duration) {
	killGen(gen, grace)
	os.Remove(filepath.Dir(gen))       // the base, once empty
	for _, v1 := range v1OfSlot(gen) { // its jobs' v1 cgroups (see cgroupV1), empty now
		removeTree(v1)
		os.Remove(filepath.Dir(v1))
	}
}

// EndLeftJobCgroups ends what is left in the generations of owner's job
// cgroups (below this process's cgroup) whose maker is gone, a holder or
// a daemon killed with -9, and removes them, and the base once empty:
// what the next hive of that state dir does at its start. For a state
// dir no hive will use again (a test's): else a killed maker's
// generation stays for good. The generation of a maker that runs is
// left alone.
func EndLeftJobCgroups(owner string, grace time.Duration) {
	own, _ := Cgroup2()
	if own == "" {
		return
	}
	base := filepath.Join(own, baseName(owner))
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && genGone(e.Name()) {
			endGen(filepath.Join(base, e.Name()), grace)
		}
	}
}

// LeaveJobCgroup moves the calling process out of a job's cgroup (one of
// a generation of a hive-<hash> cgroup, or below it) into the cgroup the
// hive-<hash> one is in: a hive daemon started by a job of another hive
// is not that job's process. from is "" when it is in no job's cgroup.
//
// It leaves the job's cgroup v1 ones too, if any (see cgroupV1), in
// the same way; an error says which it could not leave.
func LeaveJobCgroup() (from, to string, err error) {
	own, _ := Cgroup2()
	mount := cgroup2Mount()
	if own == "" || mount == "" {
		return "", "", nil
	}
	for dir := own; len(dir) > len(mount); dir = filepath.Dir(dir) {
		if up := aboveJobCgroup(dir); up != "" {
			to = up
			err = os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
			from = own
			break
		}
	}
	return from, to, errors.Join(err, leaveJobCgroupsV1())
}

// aboveJobCgroup is the cgroup that holds the hive-<hash> one when dir
// is a generation's job cgroup (<base>/g-.../s<k>), else "".
func aboveJobCgroup(dir string) string {
	gen := filepath.Dir(dir)
	if strings.HasPrefix(filepath.Base(gen), "g-") && isBaseName(filepath.Base(filepath.Dir(gen))) {
		return filepath.Dir(filepath.Dir(gen))
	}
	return ""
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

// try starts /bin/sh into a cgroup and waits for it.
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
	g.removeDone()
	return err
}

// Dir is the generation's cgroup ("" for nil): the one the next jobs'
// cgroups are made in (a new one after a write to it, see JobCgroups).
func (g *JobCgroups) Dir() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen
}

// Close stops the worker, removes the cgroups of ended jobs and the
// spares, then the generation and the base, those of them with no
// process left. Prepare still works after it (without spares).
func (g *JobCgroups) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.mu.Unlock()
	g.worker.Wait()
	g.closeWatcher()
	g.removeDone()
	g.mu.Lock()
	sp := g.spares
	g.spares = nil
	gens := append(g.old, g.gen)
	g.old = nil
	g.mu.Unlock()
	for _, s := range sp {
		unix.Close(s.fd)
	}
	for _, gen := range gens {
		removeTree(gen)
		for _, v1 := range g.v1Of(gen) {
			removeTree(v1)
		}
	}
	os.Remove(g.base)
	removeV1(g.v1Of(g.base))
}

// Lend takes up to n spares out of the pool for a daemon that starts
// jobs itself (into a cgroup it opens by its path, CLONE_INTO_CGROUP) and
// returns their paths. One becomes a job's by Adopt; those no job took
// come back by Unlend. A lent spare is not watched (a write to it while
// lent is not seen; once adopted it is watched as a job's).
func (g *JobCgroups) Lend(n int) []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	g.drainLocked() // the spares written to are dropped
	var out []string
	for len(out) < n && len(g.spares) > 0 {
		k := len(g.spares) - 1
		sp := g.spares[k]
		g.spares = g.spares[:k]
		unix.Close(sp.fd)
		if sp.wd >= 0 && g.w != nil {
			delete(g.w.of, sp.wd)
		}
		g.lent[sp.path] = true
		out = append(out, sp.path)
	}
	low := len(g.spares) < lowSpares
	g.mu.Unlock()
	if len(out) > 0 && low {
		g.poke() // more spares now; else with the next End
	}
	return out
}

// Epoch counts the times the spares were dropped for a write to the
// generation or the base (cgroup.kill, cgroup.freeze): spares lent before
// the last are not to be used (see Lend).
func (g *JobCgroups) Epoch() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drainLocked()
	return g.epoch
}

// Adopt makes the lent cgroup path job id's, as Prepare makes a spare:
// SlotOf, Killed and End know it from now on. It reports whether path
// was lent.
func (g *JobCgroups) Adopt(id, path string) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.lent[path] {
		return false
	}
	if _, dup := g.slots[id]; dup {
		return false
	}
	delete(g.lent, path)
	g.slots[id] = path
	if wd := g.watchLocked(watched{kind: watchJob, path: path, id: id}); wd >= 0 {
		g.wds[id] = wd
	}
	return true
}

// Unlend takes back lent spares no job took: they are removed, and what
// was started in one anyway (by a daemon that died before it told of
// the job) is ended first.
func (g *JobCgroups) Unlend(paths []string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	for _, p := range paths {
		if g.lent[p] {
			delete(g.lent, p)
			g.done = append(g.done, p)
		}
	}
	g.mu.Unlock()
	g.poke()
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

// Prepare sets cmd to start in a new cgroup, job id's until End: a
// spare, or one made now. release is to be called once cmd has started
// or failed to (it closes the cgroup's descriptor); End(id) once its
// leader is reaped, or if it failed to start. With an error cmd is left
// as it was.
func (g *JobCgroups) Prepare(id string, cmd *exec.Cmd) (release func(), err error) {
	if g == nil {
		return nil, errors.New("no cgroups")
	}
	g.mu.Lock()
	if _, dup := g.slots[id]; dup {
		g.mu.Unlock()
		return nil, fmt.Errorf("job %q has a cgroup already", id)
	}
	g.drainLocked() // the spares written to are dropped
	s := spare{wd: -1}
	n := len(g.spares)
	if n > 0 {
		s, g.spares = g.spares[n-1], g.spares[:n-1]
	} else {
		s.path = g.newPathLocked()
	}
	g.mu.Unlock()
	if n == 0 {
		if s, err = makeSpare(s.path); err != nil {
			return nil, err
		}
	}
	g.mu.Lock()
	g.slots[id] = s.path
	if n == 0 {
		s.wd = g.watchLocked(watched{kind: watchJob, path: s.path, id: id})
	} else if s.wd >= 0 {
		g.w.of[s.wd] = watched{kind: watchJob, path: s.path, id: id}
	}
	if s.wd >= 0 {
		g.wds[id] = s.wd
	}
	g.mu.Unlock()
	g.poke()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = s.fd
	return func() { unix.Close(s.fd) }, nil
}

// End ends what is left in job id's cgroup once its leader is reaped:
// each process in it or below it gets SIGTERM, up to grace to exit, then
// SIGKILL (cgroup.kill, and each by its pidfd). It returns how many
// processes there were; those a Reaper adopted are reaped. The cgroup
// is removed. With check false the caller knows nothing should be left
// (with a subreaper: no adopted process is alive, and whatever a job
// leaves is adopted): the cgroup is removed in the background, and what
// is found in it then is ended too, uncounted.
func (g *JobCgroups) End(id string, grace time.Duration, check bool) int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	slot, ok := g.slots[id]
	v1 := g.v1dirs[id]
	delete(g.slots, id)
	delete(g.v1dirs, id)
	if ok && !check {
		g.done = append(g.done, slot)
		g.doneV1 = append(g.doneV1, v1...)
	}
	if wd, ok := g.wds[id]; ok {
		if g.w != nil {
			delete(g.w.of, wd) // what hive writes to it now is not a kill from outside
		}
		delete(g.wds, id)
	}
	delete(g.killed, id)
	g.mu.Unlock()
	if !ok {
		return 0
	}
	n := 0
	if check {
		if populated(slot) {
			n = killDirs([]string{slot}, grace)[0]
		}
		removeTree(slot)
		if left := removeV1(v1); len(left) > 0 {
			g.mu.Lock()
			g.doneV1 = append(g.doneV1, left...)
			g.mu.Unlock()
		}
	}
	select {
	case <-g.stop: // no worker: and the generation goes too, once empty (Close ran)
		g.removeDone()
		g.mu.Lock()
		gen := g.gen
		g.mu.Unlock()
		os.Remove(gen)
		os.Remove(g.base)
		removeV1(g.v1Of(gen))
		removeV1(g.v1Of(g.base))
	default:
		if !check {
			g.poke()
		}
	}
	return n
}

// killDirs ends what is in the cgroups dirs and below them: SIGTERM to
// each process (pinned, and checked to be in its cgroup still), up to
// grace for all to exit, then SIGKILL, by cgroup.kill and by pidfd
// (cgroup.kill passes over a process whose main thread has exited while
// others run) until each is empty (2 s at most). It returns how many
// processes each had; those a Reaper adopted are reaped.
func killDirs(dirs []string, grace time.Duration) []int {
	counts := make([]int, len(dirs))
	var ps []Pinned
	var full, rels []string
	mount := cgroup2Mount()
	for i, dir := range dirs {
		if !populated(dir) {
			continue
		}
		rel := "0::" + strings.TrimPrefix(dir, mount)
		full, rels = append(full, dir), append(rels, rel)
		for _, pid := range procsUnder(dir) {
			if p, ok := pinMember(pid, rel); ok {
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
	for _, p := range WaitExit(ps, time.Now().Add(grace)) {
		p.Signal(syscall.SIGKILL)
	}
	// Each pass takes every cgroup still populated: one that will not
	// empty (a process in D state) does not keep the others from theirs.
	deadline := time.Now().Add(2 * time.Second)
	for wait := time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 50*time.Millisecond) {
		left := false
		for i, dir := range full {
			if !populated(dir) {
				continue
			}
			left = true
			os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
			for _, pid := range procsUnder(dir) { // what forked meanwhile, and what cgroup.kill passes over
				if p, ok := pinMember(pid, rels[i]); ok {
					p.Signal(syscall.SIGKILL)
					p.Close()
				}
			}
		}
		if !left {
			break
		}
		time.Sleep(wait)
	}
	WaitExit(ps, time.Now().Add(time.Second))
	reapExited(ps)
	for _, p := range ps {
		p.Close()
	}
	if r := active.Load(); r != nil {
		r.Reap()
	}
	return counts
}

// pinMember pins process pid by a pidfd, then checks that it is in
// cgroup rel ("0::/x") or below it: the pid read from cgroup.procs may
// have been reused since by another process. A process whose main
// thread has exited while others run is taken too (Pin takes it for a
// zombie).
func pinMember(pid int, rel string) (Pinned, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return Pinned{}, false // ESRCH: gone
		}
		fd = -1 // an old kernel: best effort, by pid
	}
	if !inCgroup(pid, rel) {
		if fd >= 0 {
			unix.Close(fd)
		}
		return Pinned{}, false
	}
	return Pinned{Pid: pid, fd: fd}, true
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
