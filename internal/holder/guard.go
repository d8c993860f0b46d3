//go:build unix

package holder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
)

// The guard of a holder: a second, tiny process (`hive holder-guard`)
// that the holder starts when it starts, and that ends what is left of
// the holder's jobs and PTY sessions once the holder is gone, whether a
// daemon runs or not (a daemon that runs does the same from its side:
// HolderLost). It idles on one read of a pipe whose write end only the
// holder holds (close-on-exec: no job inherits it), so the read ends
// (EOF) exactly when the holder has exited, however it exited.
//
// What it ends is proven by a mark: every job's and session's
// environment carries EnvHolder=<the holder's instance> (its pid and
// start time, see Instance), so the processes of a new holder that a
// daemon started meanwhile are never touched; and, where the holder
// gives jobs cgroups, what is left in the holder's generation (which no
// other holder uses) is ended too, marks or not.

// EnvHolder is the variable that marks the environment of every job and
// PTY session a holder runs with the holder's instance (see Instance):
// HIVE_HOLDER=<pid>-<start time>.
const EnvHolder = "HIVE_HOLDER"

// GuardGrace is how long the guard gives the processes it ends between
// SIGTERM and SIGKILL: everything of a dead holder is gone within 2 s
// of its death.
const GuardGrace = time.Second

// Instance names the process pid across pid reuse: "<pid>-<start time
// in clock ticks after boot>"; "" where the process table cannot be read
// (then no guard can prove anything, and none runs).
func Instance(pid int) string {
	st, ok := proc.Read(pid)
	if !ok {
		return ""
	}
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(st.Start, 10)
}

// withMark is env with the holder's mark kv ("HIVE_HOLDER=..."), any
// other value of it dropped (a job of a hive started inside a job).
func withMark(env []string, kv string) []string {
	if kv == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, EnvHolder+"=") {
			out = append(out, e)
		}
	}
	return append(out, kv)
}

// GuardOptions configures Guard.
type GuardOptions struct {
	// Owner is the state directory: the jobs' owner mark, what the
	// cgroups are named for, where the note goes. Required.
	Owner string
	// Instance is the holder's (see Instance). Required.
	Instance string
	// Cgroups is the holder's generation of job cgroups
	// (proc.JobCgroups.Dir), "" if it has none.
	Cgroups string
	// Grace is the time between SIGTERM and SIGKILL. If zero, GuardGrace.
	Grace  time.Duration
	Logger *slog.Logger
}

// Lost is the note a guard leaves in the state directory (LostNote) when
// its holder died (rather than ended by itself): the next daemon reads
// it (ReadLost), so that the jobs it finds recorded running that the
// dead holder held read interrupted by the holder's death.
type Lost struct {
	Pid      int       `json:"pid"`
	Instance string    `json:"instance"`
	Died     time.Time `json:"died"`
}

// Reason is the error of a job the holder held when it died.
func (l Lost) Reason() string {
	return fmt.Sprintf("the holder of the jobs (pid %d) died at %s, and the job with it: the holder's guard ended what was left of it",
		l.Pid, l.Died.Format(time.RFC3339))
}

// LostNote is the path of the note in state dir dir.
func LostNote(dir string) string { return filepath.Join(dir, "holder.lost") }

// ReadLost reads the note of dir; ok is false when there is none.
func ReadLost(dir string) (l Lost, ok bool) {
	b, err := os.ReadFile(LostNote(dir))
	if err != nil || json.Unmarshal(b, &l) != nil || l.Pid <= 0 {
		return Lost{}, false
	}
	return l, true
}

// Guard waits until r ends, then ends what is left of the holder's jobs
// and sessions (Sweep) and returns how many processes that was. r is the
// read end of the holder's pipe: EOF means the holder is gone. A byte
// read before it says that the holder ends by itself (its jobs are
// stopped, or there were none): what is left with its mark is ended all
// the same (its cgroups are the holder's to remove), but no note is
// left. A holder that died leaves the note (LostNote).
func Guard(r io.Reader, o GuardOptions) (int, error) {
	if o.Owner == "" || o.Instance == "" {
		return 0, errors.New("guard: owner and instance are required")
	}
	if o.Grace <= 0 {
		o.Grace = GuardGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return 0, fmt.Errorf("guard: read the holder's pipe: %w", err)
	}
	if n > 0 { // the holder said goodbye
		// Its cgroups are its own to remove (it does, after this).
		ended := Sweep(o.Owner, o.Instance, "", o.Grace)
		if ended > 0 {
			o.Logger.Warn("the holder ended leaving processes of its jobs: its guard ended them", "holder", o.Instance, "processes", ended)
		}
		return ended, nil
	}
	// The note first: a daemon that starts while the sweep runs reads
	// it (and ends the same processes by their job marks).
	died := time.Now()
	pid, _ := strconv.Atoi(strings.SplitN(o.Instance, "-", 2)[0])
	b, _ := json.Marshal(Lost{Pid: pid, Instance: o.Instance, Died: died})
	noteErr := paths.ReplaceFile(LostNote(o.Owner), b)
	ended := Sweep(o.Owner, o.Instance, o.Cgroups, o.Grace)
	o.Logger.Error("the holder of the jobs died: its guard ended what was left of its jobs and sessions", "holder", o.Instance, "processes", ended, "took", time.Since(died).Round(time.Millisecond))
	if noteErr != nil {
		return ended, fmt.Errorf("guard: leave the note for the next daemon: %w", noteErr)
	}
	return ended, nil
}

// Sweep ends every process marked EnvHolder=instance and, at the same
// time, what is left in the cgroups of generation gen (if not ""; only a
// generation of owner's is taken, see proc.KillJobCgroups): SIGTERM, up
// to grace, SIGKILL, and SIGKILL again to what is marked until two
// looks in a row find nothing (what forked meanwhile; 2 s at most). It
// returns how many marked processes there were (those in the cgroups
// are mostly the same ones, and are not counted again).
func Sweep(owner, instance, gen string, grace time.Duration) int {
	var slots []string
	if gen != "" {
		ents, _ := os.ReadDir(gen)
		for _, e := range ents {
			if e.IsDir() {
				slots = append(slots, filepath.Join(gen, e.Name()))
			}
		}
	}
	done := make(chan struct{})
	go func() { // the grace runs once for both
		defer close(done)
		if len(slots) > 0 {
			proc.KillJobCgroups(owner, grace, slots...)
		}
	}()
	defer func() { <-done }()
	kv := EnvHolder + "=" + instance
	// Only a process started since the holder can be its job's: the
	// environment (a read each) of older ones is not looked at. On a
	// loaded machine the scan is most of the sweep.
	var since uint64
	if _, start, ok := strings.Cut(instance, "-"); ok {
		since, _ = strconv.ParseUint(start, 10, 64)
	}
	seen := map[int]bool{}
	ps := marked(kv, since, seen, syscall.SIGTERM)
	proc.WaitExit(ps, time.Now().Add(grace))
	closeAll(ps)
	// Until two looks in a row find none: a process in the middle of an
	// exec shows no environment for a moment.
	for deadline, none := time.Now().Add(2*time.Second), 0; none < 2 && time.Now().Before(deadline); {
		ps = marked(kv, since, seen, syscall.SIGKILL)
		if len(ps) == 0 {
			none++
			continue
		}
		none = 0
		proc.WaitExit(ps, time.Now().Add(100*time.Millisecond))
		closeAll(ps)
	}
	return len(seen)
}

// marked pins the live processes started at or after since (clock
// ticks after boot) whose environment holds kv, sends each sig as it is
// found (not after the whole scan), and adds their pids to seen.
func marked(kv string, since uint64, seen map[int]bool, sig syscall.Signal) []proc.Pinned {
	self := os.Getpid()
	var ps []proc.Pinned
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self && s.Start >= since }) {
		// Pinned, then read again: the pid is still the marked process.
		pid := st.Pid
		if p, ok := proc.Pin(pid, func(proc.Stat) bool { return proc.HasEnv(pid, kv) }); ok {
			p.Signal(sig)
			ps = append(ps, p)
			seen[pid] = true
		}
	}
	return ps
}

func closeAll(ps []proc.Pinned) {
	for _, p := range ps {
		p.Close()
	}
}

// IsGuard reports whether process pid is a holder's guard (`hive
// holder-guard`, by its command line): the one child of the holder that
// is no job's.
func IsGuard(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == "holder-guard"
}

// guardArgs are the flags of `hive holder-guard` for this holder.
func guardArgs(owner, instance, cgroups string) []string {
	a := []string{"--state-dir", owner, "--instance", instance}
	if cgroups != "" {
		a = append(a, "--cgroups", cgroups)
	}
	return a
}

// startGuard starts the holder's guard (argv, then guardArgs; the pipe's
// read end is its fd 3) and keeps one running until the returned func is
// called: a guard that ends meanwhile (killed) is started again a second
// later. The func tells the guard that the holder ends by itself, and
// returns once it has exited (or, stuck, been killed).
func startGuard(argv []string, owner, instance, cgroups string, log *slog.Logger) (end func()) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			g, err := spawnGuard(argv, owner, instance, cgroups)
			if err != nil {
				log.Error("the holder runs without a guard: its jobs would outlive it should it die with the daemon", "err", err)
				return
			}
			select {
			case <-stop:
				g.w.Write([]byte{'q'})
				g.w.Close()
				select {
				case <-g.exited:
				case <-time.After(GuardGrace + 5*time.Second):
					log.Warn("the guard of the jobs did not end (stopped, or stuck): killed", "pid", g.cmd.Process.Pid)
					g.cmd.Process.Kill()
					<-g.exited
				}
				return
			case err := <-g.exited:
				g.w.Close()
				log.Warn("the guard of the jobs ended: it is started again", "err", err)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// runningGuard is a guard started: the pipe's write end, its command
// and its end.
type runningGuard struct {
	w      *os.File
	cmd    *exec.Cmd
	exited chan error
}

// spawnGuard starts one guard.
func spawnGuard(argv []string, owner, instance, cgroups string) (*runningGuard, error) {
	r, w, err := os.Pipe() // both ends close-on-exec: no job inherits them
	if err != nil {
		return nil, fmt.Errorf("start the guard: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(argv[0], append(append([]string(nil), argv[1:]...), guardArgs(owner, instance, cgroups)...)...)
	cmd.Args[0] = os.Args[0] // as ps shows the holder (argv[0] may be /proc/self/exe)
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // the holder's log
	// Its own session: a signal to the holder's group or session does
	// not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := proc.Start(cmd); err != nil {
		w.Close()
		return nil, fmt.Errorf("start the guard: %w", err)
	}
	g := &runningGuard{w: w, cmd: cmd, exited: make(chan error, 1)}
	go func() { g.exited <- proc.Wait(cmd) }()
	return g, nil
}
