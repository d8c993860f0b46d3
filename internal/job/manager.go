package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/ident"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/shell"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/supervise"
)

// Options configures a Manager.
type Options struct {
	// Dir receives each job's output files, <id>.out and <id>.err. Required.
	Dir string
	// Store keeps job records. Required.
	Store *store.Store
	// MaxRunning bounds concurrently running jobs; the rest wait pending in
	// FIFO order. If zero, 64.
	MaxRunning int
	// Grace is how long a stopped job's group has after SIGINT before
	// SIGKILL. If zero, 10 s.
	Grace time.Duration
	// LeftoverGrace is how long processes left in a group after its leader
	// exited have between SIGTERM and SIGKILL. If zero, 2 s.
	LeftoverGrace time.Duration
	// FileCap caps each stream file; past it bytes are counted as dropped.
	// If zero, 1 GiB; negative means no cap.
	FileCap int64
	// RingSize is the per-stream in-memory window. If zero, 4 MiB.
	RingSize int
	// Todo, if set, gives the loose end of a detached job in the state of
	// its snapshot: it is written with the job's record, in the same
	// transaction, whenever a detached job's record is (and once when a
	// job is detached). It runs on whichever goroutine commits, without
	// locks held; it must be quick and must not call into the Manager.
	Todo func(Info) store.Todo
	// OnCommit, if set, hears of the todos a commit changed (new, or a
	// new summary), after the commit and before anyone waiting for it goes
	// on. It runs without locks held and must not call into the Manager.
	// of[i] is the snapshot of the job whose record carried changed[i].
	OnCommit func(changed []store.Todo, of []Info)
	// OnRecord, if set, hears of each job record committed (every job's,
	// detached or not), after the commit, in the order of the commits. A
	// short job's start and end may share one commit: it then hears of
	// the end only. It runs without locks held and must not block nor
	// call into the Manager.
	OnRecord func(Info)
	// Logger, if nil, discards.
	Logger *slog.Logger
	// Shell is the argv prefix that runs Spec.Cmd. If nil, the policy
	// shell's (shell.Default: /bin/bash -c on POSIX). Whatever it is, every
	// job's environment goes through the policy (shell.Shell.Env: no
	// ZDOTDIR or ZSH_*, SHELL is the policy shell).
	Shell []string
	// Owner, if set, marks every job's environment with HIVE_JOB_OWNER=Owner
	// (and HIVE_JOB_ID=<id>). At New, any process still carrying the mark
	// belongs to a job of a daemon that died and is terminated, even one
	// that left its group or whose record never reached the store. Use
	// the state directory.
	Owner string
	// Reaper, if set, is the process's child subreaper: a process that
	// leaves a job's tree is then reparented to this process, and when a
	// job ends, any such process carrying its marks (see sweepEscapes) is
	// terminated, counted in Info.Leftover and reaped. If nil, escaped
	// processes are looked for only when the job was stopped or left
	// processes in its group.
	Reaper *proc.Reaper
	// Cgroups, if set, gives each job the manager runs itself a cgroup
	// of its own, and what is left in it ends with the job (see
	// proc.JobCgroups). A Holder makes its own; what is left in them
	// ends with their jobs if it dies (wire.JobStart.Cgroup).
	Cgroups *proc.JobCgroups
	// Limits are the operator's defaults and ceilings of the jobs'
	// resource limits (Spec.Limits). The zero value limits nothing.
	Limits limits.Policy
	// Holder, if set, runs the jobs in a process that outlives the
	// daemon (see Holder); its events come through HeldProgress,
	// HeldEnded and HolderLost. At New the jobs it holds are adopted.
	Holder Holder
	// LostReason, if set, is asked at New for each job the store
	// records running that no holder holds: a reason other than "" is
	// its error instead of the daemon's stop (the daemon gives the death
	// of the holder that held it, by the job's start: see
	// holder.ReadLost).
	LostReason func(started time.Time) string
	// Journal, if set, is where the records of ended jobs that callers
	// are told of before their commit go first (a file in the state
	// directory, mapped: see journal): an attached job kept at its end
	// (see beginKept) is answered for once its record is written there,
	// and its holder is told after its callers. At New what the file
	// holds and the store lacks is put in the store. If "", such a job's
	// holder is told before its callers, as the keeper of its end.
	Journal string
}

// Environment variables set in every job.
const (
	EnvJobID    = "HIVE_JOB_ID"
	EnvJobOwner = "HIVE_JOB_OWNER"
)

// Manager owns every job of one daemon. Its methods are safe for
// concurrent use.
type Manager struct {
	o      Options
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the manager starts

	records *recordWriter
	devNull *os.File    // the stdin of jobs without one
	pipes   *pipeSpare  // the next start's output pipes, made ahead
	sh      shell.Shell // the policy shell: its kind, and the SHELL of every job's environment
	shErr   error       // no policy shell: why (command lines fail with it)
	paths   *pathCache

	firsts firstCommits // the first records of detached jobs

	mu   sync.Mutex
	jobs map[string]*Job // jobs started by this daemon, by id
	// names maps a name to the id of the newest job of this daemon with
	// that name, while that job is held in jobs; older jobs of the name
	// keep their records and ids.
	names map[string]string
	// hexIDs holds every id of the form of a random id (8 hex digits) that
	// the store has, so a new random id is checked without a query.
	hexIDs map[uint32]struct{}
	// lastCreated is the last job's creation time in Unix milliseconds
	// (createdLocked).
	lastCreated int64
	order       []string // ids in start order, for trimming
	queue       []*Job   // pending, FIFO
	recent      []*Job   // the jobs that ended last, oldest first (see keepWhole)
	running     int
	closed      bool
	// sup decides about what the holder holds (see internal/supervise).
	sup *supervise.Core[*Job, wire.Job, wire.JobEnd]
	// released is closed by Release: held jobs' watchers stop waiting.
	released chan struct{}
	// kept counts the jobs it started itself and its holder keeps, from
	// their start (keeper) until their leader is reaped or let go
	// (child.waited): at most maxKept.
	kept atomic.Int32
	// starts counts the starts by who made them (Starts).
	starts struct{ own, holder, noSpare atomic.Int64 }
	// journal: see Options.Journal (nil without).
	journal     *journal
	journalWarn sync.Once
}

// maxEndedInMemory is how many ended jobs keep their Job in memory; older
// ones are answered from the store.
const maxEndedInMemory = 512

// New opens a Manager. Jobs that the store records as pending or running
// were left by a daemon that died: they become interrupted, and a process
// group that is still alive (and whose leader's start time matches the
// record, so a reused pid is never touched) is terminated.
func New(o Options) (*Manager, error) {
	if o.Dir == "" || o.Store == nil {
		return nil, errors.New("job manager: Dir and Store are required")
	}
	if o.MaxRunning <= 0 {
		o.MaxRunning = 64
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.LeftoverGrace <= 0 {
		o.LeftoverGrace = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// The one shell policy (shell.Default): never the first bash on
	// PATH, never $SHELL. Without a shell, jobs of a command line fail
	// with the reason; argv jobs still run.
	sh, shErr := shell.Default()
	if o.Shell == nil && shErr == nil {
		o.Shell = sh.Prefix()
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create output dir %q: %w", o.Dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{o: o, ctx: ctx, cancel: cancel, jobs: map[string]*Job{}, names: map[string]string{}, hexIDs: map[uint32]struct{}{}, sh: sh, shErr: shErr,
		released: make(chan struct{})}
	m.sup = supervise.New(heldKind{m}, supervise.Options{What: "job", Logger: o.Logger})
	m.records = newRecordWriter(o.Store, o.Logger, o.Todo, o.OnCommit, o.OnRecord)
	fail := func(err error) (*Manager, error) {
		m.records.close()
		if m.journal != nil {
			m.journal.close()
		}
		cancel()
		return nil, err
	}
	var journaled map[string]bool
	if o.Journal != "" {
		var err error
		if journaled, err = m.replayJournal(ctx); err != nil {
			return fail(err)
		}
	}
	ids, err := o.Store.JobIDs(ctx)
	if err != nil {
		return fail(err)
	}
	known := make(map[string]bool, len(ids)+len(journaled))
	for _, id := range ids {
		known[id] = true
	}
	for id := range journaled {
		known[id] = true
	}
	for id := range known {
		if n, ok := parseHexID(id); ok {
			m.hexIDs[n] = struct{}{}
		}
	}
	if err := m.recover(known, journaled); err != nil {
		return fail(err)
	}
	if f, err := os.Open(os.DevNull); err == nil {
		m.devNull = f // else exec opens it for each job
	}
	m.pipes = newPipeSpare()
	m.paths = newPathCache()
	return m, nil
}

// recover ends the jobs the last daemon left pending or running, and
// adopts those its holder holds. journaled are the jobs whose end the
// journal had (replayJournal): their end stands, whatever the store read.
func (m *Manager) recover(known, journaled map[string]bool) error {
	ctx := context.Background()
	left, err := m.o.Store.ListJobs(ctx, 0, string(Pending), string(Running))
	if err != nil {
		return fmt.Errorf("recover jobs: %w", err)
	}
	if len(journaled) > 0 {
		left = slices.DeleteFunc(left, func(rec store.Job) bool { return journaled[rec.ID] })
	}
	if m.o.Holder != nil {
		if left, err = m.adoptHeld(left, known); err != nil {
			return fmt.Errorf("recover jobs: %w", err)
		}
	}
	// What the jobs left running is ended first, all at once, then the
	// records say so.
	targets, jobOf := findOrphans(left, known, m.o.Owner, proc.BootID())
	count := map[string]int{}
	for _, id := range jobOf {
		count[id]++
	}
	if n := proc.Terminate(targets, m.o.LeftoverGrace); n > 0 {
		m.o.Logger.Info("terminated processes of jobs of a previous daemon", "count", n, "jobs", len(count))
	}
	var last uint64
	for _, rec := range left {
		in := fromRecord(rec)
		in.Leftover = count[in.ID]
		in.State = Interrupted
		in.Error = "the daemon stopped while the job was " + string(fromRecord(rec).State)
		if m.o.LostReason != nil && State(rec.State) == Running {
			if r := m.o.LostReason(rec.Started); r != "" {
				in.Error = r
			}
		}
		if in.Ended.IsZero() {
			in.Ended = time.Now()
		}
		for _, s := range []struct {
			path           string
			bytes, dropped *int64
		}{{in.StdoutPath, &in.StdoutBytes, &in.StdoutDropped}, {in.StderrPath, &in.StderrBytes, &in.StderrDropped}} {
			if fi, err := os.Stat(s.path); err == nil && fi.Size() > *s.bytes {
				*s.bytes = fi.Size()
			}
		}
		last = m.records.put(nil, in, !in.Quiet)
	}
	// A store that cannot be written (disk full) must not keep the daemon
	// from starting: the records stay queued and are retried.
	if err := m.records.sync(last); err != nil {
		m.o.Logger.Error("could not record the jobs interrupted by the last daemon's end; retrying", "jobs", len(left), "err", err)
	}
	return nil
}

// Start creates a job. It starts at once, or waits pending when
// MaxRunning jobs are running. A command that cannot be started gives a
// job in state failed, not an error; errors are for bad specs.
func (m *Manager) Start(spec Spec) (*Job, error) {
	if spec.Cmd == "" && len(spec.Argv) == 0 {
		return nil, errdefs.New(errdefs.ErrInvalid, "cmd: must not be empty")
	}
	if spec.Timeout < 0 {
		return nil, errdefs.Newf(errdefs.ErrInvalid, "timeout %v: must be >= 0", spec.Timeout)
	}
	if err := checkSpecNUL(spec); err != nil {
		return nil, err
	}
	if spec.Name != "" {
		if err := ident.CheckName("name", spec.Name); err != nil {
			return nil, err
		}
	}
	if _, ok := parseHexID(spec.Name); ok {
		return nil, errdefs.Newf(errdefs.ErrInvalid, "name %q: must not be 8 hex digits, the form of a job id", spec.Name)
	}
	lim, err := m.o.Limits.Resolve(spec.Limits)
	if err != nil {
		return nil, err
	}
	spec.Limits = lim
	if spec.ShellFallback && len(spec.Argv) > 0 && spec.Cmd != "" {
		env := spec.Env
		if env == nil {
			env = os.Environ()
		}
		if _, err := m.paths.lookPath(spec.Argv[0], env, spec.Dir); err != nil {
			spec.Argv, spec.ShellKind = nil, ""
		}
	}
	if spec.ShellKind == "" {
		spec.ShellKind = shell.KindBash
		if m.sh.Kind != "" {
			spec.ShellKind = m.sh.Kind
		}
		if len(spec.Argv) > 0 {
			spec.ShellKind = "direct"
		}
	}
	if spec.Cmd == "" {
		spec.Cmd = joinArgv(spec.Argv)
	}
	// No process starts whose record could not be kept: a store that
	// failed, or a disk too full for the next commit, refuses new work
	// until it takes writes again.
	if err := m.records.health(); err != nil {
		return nil, fmt.Errorf("%w: the store cannot be written (%v): no new work until it can (tried again every %v)", ErrNotRecorded, err, retryEvery)
	}
	if err := diskFull(m.o.Dir); err != nil {
		return nil, fmt.Errorf("%w: %v: no new work until space is freed", ErrNotRecorded, err)
	}
	noteStart()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	// Every job gets an id of its own; a name points to the newest job
	// that has it, and the earlier ones keep their records and ids.
	prevID, hadName := "", false
	if spec.Name != "" {
		if prevID, hadName = m.names[spec.Name]; hadName {
			if old, ok := m.jobs[prevID]; ok && !old.Info().State.Terminal() {
				m.mu.Unlock()
				return nil, fmt.Errorf("name %q: %w (reusable once job %s has ended)", spec.Name, ErrNameBusy, prevID)
			}
		}
	}
	var id string
	for {
		n := rand.Uint32()
		if _, ok := m.hexIDs[n]; !ok {
			id = formatHexID(n)
			m.hexIDs[n] = struct{}{}
			break
		}
	}
	// A slot is taken now, or the job waits in the queue.
	now := m.running < m.o.MaxRunning
	j := &Job{m: m, spec: spec, detached: !spec.Attached, inline: now, done: make(chan struct{}), started: make(chan struct{})}
	if m.o.Holder != nil {
		j.heldEnd = make(chan wire.JobEnd, 1)
	}
	j.info = Info{
		ID: id, Name: spec.Name, Cmd: spec.Cmd, Argv: spec.Argv, ShellKind: spec.ShellKind,
		Cwd: spec.Dir, Source: spec.Source, State: Pending, Timeout: spec.Timeout, Created: m.createdLocked(), Quiet: spec.Quiet, KillOnTimeout: spec.KillOnTimeout,
		Limits: spec.Limits, StdoutPath: filepath.Join(m.o.Dir, id+".out"), StderrPath: filepath.Join(m.o.Dir, id+".err"),
	}
	m.jobs[id] = j
	if spec.Name != "" {
		m.names[spec.Name] = id
	}
	m.order = append(m.order, id)
	m.trimLocked()
	if now {
		m.running++
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if j.detached {
		// Its id is handed out: its record must be in the store before
		// any process starts, so that a store that cannot be written
		// starts nothing. It is written here, on its own, so that a
		// failure leaves nothing queued behind (the record of an older
		// job of the same name stays as it was). A job about to start
		// gets its loose end with its running record; a queued one now.
		if err := m.commitFirst(j, !now && !spec.Quiet); err != nil {
			m.forget(j, prevID, hadName)
			if now {
				m.wg.Done()
				m.slotFreed(nil)
			}
			return nil, fmt.Errorf("job %s: %w: nothing was started", id, err)
		}
	}
	if !now {
		m.mu.Lock()
		defer m.mu.Unlock()
		j.mu.Lock()
		switch {
		case j.info.State.Terminal():
		case j.reason != "": // stopped while its record was written
			j.info.Error = "cancelled before it started"
			j.finishLocked(j.reason)
		case m.closed:
			j.info.Error = "the daemon shut down before the job started"
			j.finishLocked(Interrupted)
		default:
			j.mu.Unlock()
			m.queue = append(m.queue, j)
			m.dispatchLocked()
			return j, nil
		}
		j.mu.Unlock()
		return j, nil
	}
	// Start it now, outside m.mu, so the caller gets a running (or
	// failed) job with its pid.
	run := j.begin()
	go func() {
		defer m.wg.Done()
		if run != nil {
			run()
		}
		m.slotFreed(j)
	}()
	j.mu.Lock()
	notAnswered := j.startErr
	j.mu.Unlock()
	if notAnswered != nil {
		// The holder did not answer: no job to hand out. Its record
		// says failed, and why.
		if err := m.Sync(j); err != nil {
			m.o.Logger.Warn("the failed start of a job could not be recorded", "job", id, "err", err)
		}
		return nil, fmt.Errorf("job %s was not started: %w", id, notAnswered)
	}
	j.mu.Lock()
	inHolder := j.inHolderLocked()
	j.mu.Unlock()
	switch {
	case j.detached && inHolder:
		// Its holder has it: should this daemon die before its running
		// record is committed (at once, not waited for), the next one
		// adopts it from its first record and what the holder tells of
		// it (pid, start; see adoptHeld).
		m.records.hurry()
	case j.detached:
		// The running record (pid, start time) is what a restarted
		// daemon needs to find the job's processes.
		if err := m.Sync(j); err != nil {
			j.mu.Lock()
			if j.info.Error == "" {
				j.info.Error = "its start could not be recorded: " + err.Error()
			}
			j.mu.Unlock()
			j.stop(Killed, true)
			return nil, fmt.Errorf("job %s: its start could not be recorded, so it was killed: %w", id, err)
		}
	}
	return j, nil
}

// commitFirst writes the first record of a detached job (pending), with
// its loose end if notify, in a transaction of first records only (see
// firstCommits): a failure leaves nothing queued behind.
func (m *Manager) commitFirst(j *Job, notify bool) error {
	in := j.Info()
	f := &firstRecord{info: in, notify: notify, done: make(chan error, 1)}
	fc := &m.firsts
	fc.mu.Lock()
	fc.queue = append(fc.queue, f)
	if fc.busy {
		fc.mu.Unlock()
		if err := <-f.done; err != errLead {
			return err
		}
		fc.mu.Lock() // it leads now: busy stays set, f is queued
	}
	fc.busy = true
	batch := fc.queue
	fc.queue = nil
	fc.mu.Unlock()
	err := m.putFirsts(batch)
	fc.mu.Lock()
	for _, x := range batch {
		if x != f {
			x.done <- err
		}
	}
	if len(fc.queue) > 0 {
		fc.queue[0].done <- errLead
	} else {
		fc.busy = false
	}
	fc.mu.Unlock()
	return err
}

// firstCommits groups the first records of detached jobs started at the
// same time into one transaction: a caller that finds no commit under way
// commits its record and those queued meanwhile; then the first of those
// queued during that commit leads the next one. A burst of starts is a
// few commits, not one each, one after the other, and no caller commits
// for others after its own.
type firstCommits struct {
	mu    sync.Mutex
	busy  bool // a commit is under way, or its leader is told
	queue []*firstRecord
}

// firstRecord is a first record waiting for its commit.
type firstRecord struct {
	info   Info
	notify bool       // with its loose end
	done   chan error // its batch's outcome, or errLead: commit the queue
}

// errLead tells a queued first record that its caller commits the queue.
var errLead = errors.New("lead the next commit of first records")

// putFirsts commits batch in one transaction.
func (m *Manager) putFirsts(batch []*firstRecord) error {
	recs := make([]store.Job, len(batch))
	var todos []store.Todo
	var of map[string]Info // by todo key
	for i, f := range batch {
		recs[i] = toRecord(f.info)
		if f.notify && m.o.Todo != nil {
			t := m.o.Todo(f.info)
			todos = append(todos, t)
			if of == nil {
				of = map[string]Info{}
			}
			of[t.Subsystem+"\x00"+t.Key] = f.info
		}
	}
	changed, err := m.o.Store.PutJobs(context.Background(), recs, todos)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotRecorded, err)
	}
	if len(changed) > 0 && m.o.OnCommit != nil {
		ins := make([]Info, len(changed))
		for i, t := range changed {
			ins[i] = of[t.Subsystem+"\x00"+t.Key]
		}
		m.o.OnCommit(changed, ins)
	}
	return nil
}

// forget drops a job whose first record could not be written: it never
// existed for anyone outside the call that started it, and its name
// points again to the job it pointed to before (prevID, if hadName).
// Nothing of j is recorded.
func (m *Manager) forget(j *Job, prevID string, hadName bool) {
	m.mu.Lock()
	if m.jobs[j.info.ID] == j {
		delete(m.jobs, j.info.ID)
		m.removeOrder(j.info.ID)
		if n, ok := parseHexID(j.info.ID); ok {
			delete(m.hexIDs, n)
		}
		if name := j.info.Name; name != "" && m.names[name] == j.info.ID {
			if hadName {
				m.names[name] = prevID
			} else {
				delete(m.names, name)
			}
		}
	}
	m.mu.Unlock()
	j.mu.Lock()
	j.detached = false
	j.info.State, j.info.Ended = Failed, time.Now()
	j.info.Error = "its record could not be written: nothing was started"
	close(j.done)
	j.markStarted()
	j.mu.Unlock()
}

// Durable returns j's snapshot once it is committed (see Sync): the
// snapshot to tell a client.
//
// An ended job whose record is in the journal (journalLocked: an
// attached one kept at its end, with Options.Journal) needs nothing
// committed: the next daemon puts the journal's records in the store.
//
// An attached held job whose holder keeps its end until the end is
// recorded (and acked: see endHeld) needs only its running record
// committed: should this daemon die before the end's record is, the next
// one adopts the job from that record and records the end the holder
// tells it. A kept job whose holder keeps its running record too (see
// keptRecord) needs nothing committed: the next daemon adopts it from
// the holder's copy. Its end is committed at once, without being
// waited for. A detached one waits for its end's record: its loose end
// goes with it, and must be written before a caller that has the end
// clears it; told running, it waits for nothing more than a kept
// attached one.
func (m *Manager) Durable(j *Job) (Info, error) {
	j.mu.Lock()
	in := j.snapshotLocked()
	if seq := j.seq.Load(); seq != 0 && j.journaled.Load() == seq {
		// Its latest record is in the journal (see journalLocked).
		j.mu.Unlock()
		return in, nil
	}
	kept := j.endKept && j.runSeq > 0 && !j.detached
	runSeq, recordKept := j.runSeq, j.recordKept
	toldRunning := j.detached && in.State == Running && j.inHolderLocked()
	j.mu.Unlock()
	if toldRunning {
		// Told running: its holder has it (see Start).
		m.records.hurry()
		return in, nil
	}
	if kept && recordKept {
		// Its holder keeps its running record too: nothing to wait
		// for. Both records go in one commit, at once (what a crash of
		// daemon and holder together may take is the moment it takes).
		m.records.hurry()
		return in, nil
	}
	if kept {
		m.records.hurry()
		if err := m.records.sync(runSeq); err != nil {
			return Info{}, fmt.Errorf("job %s: %w", j.info.ID, err)
		}
		return in, nil
	}
	if err := m.Sync(j); err != nil {
		return Info{}, fmt.Errorf("job %s: %w", j.info.ID, err)
	}
	return in, nil
}

// inHolderLocked reports whether the job's holder has it: started by
// the holder (held), or started here and kept by it. j.mu is held.
func (j *Job) inHolderLocked() bool { return j.held || j.kept }

// Sync returns once j's latest state is committed to the store: what a
// caller tells a client of the job must not be contradicted after a
// crash. The error wraps ErrNotRecorded when the store failed.
func (m *Manager) Sync(j *Job) error {
	seq := j.seq.Load()
	if seq != 0 && j.journaled.Load() == seq {
		return nil // in the journal: see journalLocked
	}
	return m.records.sync(seq)
}

// keepWhole is how many of the jobs that ended last keep every output
// byte their files lack (past the cap) in memory, for the callers and
// output handles that read them right after the end; older ones keep
// 64 KiB of those (output.Stream.Compact), so hundreds of ended jobs in
// memory cost little whatever they printed.
const keepWhole = 16

// slotFreed gives back the running slot of j (nil: a job that never ran)
// and starts what waits.
func (m *Manager) slotFreed(j *Job) {
	m.mu.Lock()
	m.running--
	if j != nil {
		m.recent = append(m.recent, j)
		if len(m.recent) > keepWhole {
			m.recent[0].compact()
			m.recent[0] = nil
			m.recent = m.recent[1:]
		}
	}
	m.dispatchLocked()
	m.mu.Unlock()
}

func (m *Manager) removeOrder(id string) {
	for i, o := range m.order {
		if o == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			return
		}
	}
}

// trimLocked forgets the oldest ended jobs past maxEndedInMemory.
func (m *Manager) trimLocked() {
	if len(m.order) <= maxEndedInMemory+m.o.MaxRunning {
		return
	}
	keep := m.order[:0]
	excess := len(m.order) - maxEndedInMemory
	for _, id := range m.order {
		j := m.jobs[id]
		if excess > 0 && j.Info().State.Terminal() {
			delete(m.jobs, id)
			m.dropNameLocked(j.info.Name, id)
			excess--
			continue
		}
		keep = append(keep, id)
	}
	m.order = keep
}

// dropNameLocked forgets that name points to id (the store answers for
// it from now on). m.mu is held.
func (m *Manager) dropNameLocked(name, id string) {
	if name != "" && m.names[name] == id {
		delete(m.names, name)
	}
}

// launchLocked starts a queued job on its own goroutine. m.mu is held.
func (m *Manager) launchLocked(j *Job) {
	m.running++
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if run := j.begin(); run != nil {
			run()
		}
		m.slotFreed(j)
	}()
}

func (m *Manager) dispatchLocked() {
	for !m.closed && m.running < m.o.MaxRunning && len(m.queue) > 0 {
		j := m.queue[0]
		m.queue = m.queue[1:]
		m.launchLocked(j)
	}
}

// Counts counts the jobs by state, as recorded (the writer is flushed
// first; should that fail, what is recorded).
func (m *Manager) Counts(ctx context.Context) (map[string]int, error) {
	m.records.flush()
	return m.o.Store.CountJobs(ctx)
}

// Starts counts the jobs started since the manager was made, by who
// started them.
type Starts struct {
	// Own: forked by the manager (the short path), kept by its holder
	// if it has one; Holder: spawned by the holder.
	Own, Holder int64
	// NoSpare: of Holder's, those the manager would have started had
	// the holder had a cgroup lent to it at hand (Keeper.Spare).
	NoSpare int64
}

// Starts is how many jobs it started, by who started them.
func (m *Manager) Starts() Starts {
	return Starts{Own: m.starts.own.Load(), Holder: m.starts.holder.Load(), NoSpare: m.starts.noSpare.Load()}
}

// Running is how many jobs are running now.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

// MakeAhead makes what the next start takes ready made, if a start took
// it and it is not made yet (see pipeSpare; a job that ended before its
// fork returned makes it again only once its callers have its end). The
// daemon's own figures (Stats) call it first: the descriptors they count
// include the next start's pipes whenever they are asked.
func (m *Manager) MakeAhead() { m.pipes.refill() }

// Pending is how many jobs wait for a slot now.
func (m *Manager) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue)
}

// Get returns a job started by this daemon and still held in memory, by
// id or by name (the newest job of that name).
func (m *Manager) Get(id string) (*Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j, ok := m.getLocked(id); ok {
		return j, nil
	}
	return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
}

// getLocked is Get under m.mu. A name is looked up first: a job id
// never has the form of a name and a name never the form of a random id,
// but a record of an older hive may have its name as its id.
func (m *Manager) getLocked(ref string) (*Job, bool) {
	if id, ok := m.names[ref]; ok {
		if j, ok := m.jobs[id]; ok {
			return j, true
		}
	}
	j, ok := m.jobs[ref]
	return j, ok
}

// Lookup returns the snapshot of any job: live, or recorded in the store.
// A live job's snapshot is returned once it is committed (see Sync); if
// it cannot be, the error wraps ErrNotRecorded.
func (m *Manager) Lookup(ctx context.Context, id string) (Info, error) {
	if j, err := m.Get(id); err == nil {
		in := j.Info()
		if err := m.Sync(j); err != nil {
			return Info{}, fmt.Errorf("job %s: %w", id, err)
		}
		return in, nil
	}
	m.records.flush() // a job trimmed from memory may still have a record queued
	rec, err := m.o.Store.NewestJobNamed(ctx, id)
	if store.IsNotFound(err) {
		rec, err = m.o.Store.GetJob(ctx, id)
	}
	if store.IsNotFound(err) {
		return Info{}, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Info{}, err
	}
	return fromRecord(rec), nil
}

// List returns jobs, newest first, optionally only those in the given
// states; limit <= 0 means all.
func (m *Manager) List(ctx context.Context, limit int, states ...State) ([]Info, error) {
	return m.ListNamed(ctx, limit, "", states...)
}

// ListNamed is List of the jobs named name only ("": any).
func (m *Manager) ListNamed(ctx context.Context, limit int, name string, states ...State) ([]Info, error) {
	ss := make([]string, len(states))
	for i, s := range states {
		ss[i] = string(s)
	}
	// The store is the index: bring it up to date. Should it fail (disk
	// full), the list shows what is recorded, live states only where they
	// are the recorded ones.
	failing := m.records.flush() != nil
	recs, err := m.o.Store.ListJobsNamed(ctx, limit, name, ss...)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(recs))
	for _, r := range recs {
		in := fromRecord(r)
		m.mu.Lock()
		j, live := m.jobs[r.ID] // by id only: a legacy id may be a newer job's name
		m.mu.Unlock()
		if live {
			if live := j.Info(); !failing || live.State == in.State {
				in = live // live counters
			}
		}
		out = append(out, in)
	}
	if !failing {
		// Live states newer than the flush (a job that ended since) are
		// committed before they are shown.
		if err := m.records.flush(); err != nil {
			return m.ListNamed(ctx, limit, name, states...)
		}
	}
	return out, nil
}

// Kill stops a job: a pending one is cancelled before it starts, a running
// one gets SIGINT to its group (SIGKILL with force) and SIGKILL after the
// grace period. It does not wait. It returns ErrEnded (with the snapshot)
// for a job that had already ended. A job whose start is in flight is
// stopped once it has started. A held job whose holder does not answer
// the stop gives an error wrapping ErrHolderNotAnswering (the holder
// takes the stop once it runs again). No lock is held while it waits.
func (m *Manager) Kill(id string, force bool) (Info, error) {
	m.mu.Lock()
	j, ok := m.getLocked(id)
	if !ok {
		m.mu.Unlock()
		in, err := m.Lookup(context.Background(), id)
		if err != nil {
			return Info{}, err
		}
		return in, ErrEnded // not live in this daemon: it has ended
	}
	// A pending job is cancelled under m.mu so the dispatcher cannot start it.
	for i, q := range m.queue {
		if q == j {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			j.mu.Lock()
			j.reason = Killed
			j.info.Error = "cancelled before it started"
			j.finishLocked(Killed)
			in := j.snapshotLocked()
			j.mu.Unlock()
			m.mu.Unlock()
			if err := m.Sync(j); err != nil {
				return Info{}, fmt.Errorf("job %s: cancelled, but %w", id, err)
			}
			return in, nil
		}
	}
	m.mu.Unlock()
	in, err := j.stop(Killed, force)
	if serr := m.Sync(j); serr != nil {
		if errors.Is(err, ErrEnded) {
			return Info{}, fmt.Errorf("job %s: it has ended, but %w", id, serr)
		}
		return Info{}, fmt.Errorf("job %s: signalled, but %w", id, serr)
	}
	return in, err
}

// Remove deletes an ended job, by id or name: its record, its output and
// index files, and what this daemon held of it. A pending or running job
// is refused with an error wrapping ErrNotEnded, and nothing changes. It
// returns the removed job's last snapshot.
func (m *Manager) Remove(ctx context.Context, ref string) (Info, error) {
	in, err := m.Lookup(ctx, ref)
	if err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	j, live := m.jobs[in.ID]
	m.mu.Unlock()
	if live {
		in = j.Info()
	}
	if !in.State.Terminal() {
		return in, fmt.Errorf("job %s is %s: %w (stop it first with kill, or wait for it)", in.ID, in.State, ErrNotEnded)
	}
	// The commit is made with no lock held. The id stays taken
	// (hexIDs) until the files are gone, so no new job gets it meanwhile.
	// Its record first, if queued, and out of the journal: a record
	// deleted from the store must not come back from either.
	if err := m.records.flush(); err != nil {
		return in, err
	}
	m.journalSettled()
	if _, err := m.o.Store.DeleteJob(ctx, in.ID); err != nil {
		return in, err
	}
	m.journalForget(in.ID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if live && m.jobs[in.ID] == j {
		delete(m.jobs, in.ID)
		m.removeOrder(in.ID)
		m.dropNameLocked(in.Name, in.ID)
		j.release()
	}
	if n, ok := parseHexID(in.ID); ok {
		delete(m.hexIDs, n)
	}
	for _, p := range []string{in.StdoutPath, in.StderrPath, in.IndexPath()} {
		if p != "" && filepath.Dir(p) == filepath.Clean(m.o.Dir) { // only files of this manager's
			os.Remove(p)
		}
	}
	return in, nil
}

// Close stops the manager: pending jobs are cancelled, running jobs are
// stopped like Kill (SIGINT, grace, SIGKILL) and end as interrupted. It
// returns when every goroutine the manager started has ended, or ctx is
// done (then running groups get SIGKILL at once and Close still waits).
func (m *Manager) Close(ctx context.Context) error {
	return m.Shutdown(ctx, 0, "")
}

// Shutdown is Close whose running jobs have grace (if > 0, else the
// manager's Grace) between SIGINT and SIGKILL, and whose jobs not yet ended
// carry note in Info.Error (when they have no error of their own): why the
// daemon stopped, as their loose ends then say. ctx still bounds the wait.
func (m *Manager) Shutdown(ctx context.Context, grace time.Duration, note string) error {
	if grace <= 0 {
		grace = m.o.Grace
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return nil
	}
	m.closed = true
	queue := m.queue
	m.queue = nil
	var live []*Job
	for _, j := range m.jobs {
		live = append(live, j)
	}
	m.mu.Unlock()
	interruptQueued(queue, note)
	for _, j := range live {
		j.stopWithin(Interrupted, false, grace, note)
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, j := range live {
			j.stop(Interrupted, true)
		}
		<-done
	}
	m.cancel()
	for _, j := range live {
		j.release()
	}
	m.records.close()
	if m.journal != nil {
		m.journalSettled() // what close committed leaves the journal
		m.journal.close()
	}
	if m.devNull != nil {
		m.devNull.Close() // every job has ended: no start can use it now
	}
	m.pipes.close()
	m.paths.close()
	return nil
}

// createdLocked is a new job's creation time: now, or a millisecond
// after the last job's if now is not later. Records keep milliseconds:
// jobs started within one would tie, and lists of the newest first
// would order them by their random ids. A burst of starts runs ahead of
// the clock by as many milliseconds as it has starts in one, at most.
func (m *Manager) createdLocked() time.Time {
	now := time.Now()
	if ms := now.UnixMilli(); ms > m.lastCreated {
		m.lastCreated = ms
		return now
	}
	m.lastCreated++
	return time.UnixMilli(m.lastCreated)
}

// putLocked queues j's record (its current snapshot), with its loose
// end if it is detached. It never waits; Sync does. j.mu is held.
//
// The end of a job whose loose end is pushed is committed at once, not
// after the linger: its push waits for the commit, and the linger is
// there for a short job's start and end to share one write, which an end
// has no more use for (what is queued with it goes along).
func (m *Manager) putLocked(j *Job) {
	notify := j.detached && !j.spec.Quiet
	j.seq.Store(m.records.put(j, j.snapshotLocked(), notify))
	if notify && j.info.State.Terminal() {
		m.records.hurry()
	}
}

// fillPidStart gives the record of a running job its leader's start time
// (what lets a restarted daemon stop the group without touching a process
// that reused the pid), read now, when the record is written: most
// attached jobs have ended by then and never need it. The value counts
// only if the leader is still unreaped after the read, so the pid was
// still its own. Called by the record writer, without locks.
func fillPidStart(j *Job, rec *store.Job) {
	if j == nil || rec.State != string(Running) || rec.Pid <= 0 || rec.PidStart != 0 {
		return
	}
	if st := j.pidStart.Load(); st != 0 {
		rec.PidStart = st
		return
	}
	st := procStartTime(rec.Pid)
	if st == 0 || j.reaped.Load() {
		return
	}
	j.pidStart.Store(st)
	rec.PidStart = st
}

// A random job id is 8 lowercase hex digits.
func formatHexID(n uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	for i := 7; i >= 0; i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
	return string(b[:])
}

// parseHexID reports whether id has the form of a random id, and its value.
func parseHexID(id string) (uint32, bool) {
	if len(id) != 8 {
		return 0, false
	}
	var n uint32
	for i := range 8 {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

func joinArgv(argv []string) string {
	s := ""
	for i, a := range argv {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

func toRecord(in Info) store.Job {
	return store.Job{
		ID: in.ID, Name: in.Name, Cmd: in.Cmd, Argv: in.Argv, ShellKind: in.ShellKind, Cwd: in.Cwd,
		Source: in.Source, State: string(in.State), ExitCode: in.ExitCode, Signal: in.Signal, Error: in.Error,
		Timeout: in.Timeout, Created: in.Created, Started: in.Started, Ended: in.Ended, Pid: in.Pid,
		PidStart: in.PidStart, StdoutPath: in.StdoutPath, StderrPath: in.StderrPath,
		StdoutBytes: in.StdoutBytes, StderrBytes: in.StderrBytes, StdoutDropped: in.StdoutDropped,
		StderrDropped: in.StderrDropped, Leftover: in.Leftover, Quiet: in.Quiet, KillOnTimeout: in.KillOnTimeout,
		Limits: in.Limits, LimitsBy: in.LimitsBy, Usage: in.Usage, LimitHit: in.LimitHit,
		BootID: proc.BootID(), // every record is written by a daemon of this boot
	}
}

func fromRecord(r store.Job) Info {
	return Info{
		ID: r.ID, Name: r.Name, Cmd: r.Cmd, Argv: r.Argv, ShellKind: r.ShellKind, Cwd: r.Cwd,
		Source: r.Source, State: State(r.State), ExitCode: r.ExitCode, Signal: r.Signal, Error: r.Error,
		Timeout: r.Timeout, Created: r.Created, Started: r.Started, Ended: r.Ended, Pid: r.Pid,
		PidStart: r.PidStart, StdoutPath: r.StdoutPath, StderrPath: r.StderrPath,
		StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes, StdoutDropped: r.StdoutDropped,
		StderrDropped: r.StderrDropped, Leftover: r.Leftover, Quiet: r.Quiet, KillOnTimeout: r.KillOnTimeout,
		Limits: r.Limits, LimitsBy: r.LimitsBy, Usage: r.Usage, LimitHit: r.LimitHit,
	}
}

// Prune forgets jobs that ended before t: their records, their output
// files, and the Job objects this daemon still held for them. It returns
// how many were removed. A file is removed only if its record was
// deleted, and while no job of the same id is live: the removal happens
// under the manager's lock, which a Start of that id needs.
func (m *Manager) Prune(ctx context.Context, before time.Time) (int, error) {
	const batch = 64 // files are removed under m.mu: keep each hold short
	m.records.flush()
	m.journalSettled()
	n := 0
	for {
		old, err := m.o.Store.DeleteJobsEndedBefore(ctx, before, batch)
		if err != nil {
			return n, err
		}
		for _, rec := range old {
			m.journalForget(rec.ID)
		}
		m.mu.Lock()
		for _, rec := range old {
			j, live := m.jobs[rec.ID]
			if live && !j.Created().Equal(rec.Created) {
				continue // a newer job of this name: its files are not the old ones
			}
			if live {
				delete(m.jobs, rec.ID)
				m.removeOrder(rec.ID)
				m.dropNameLocked(rec.Name, rec.ID)
			}
			if id, ok := parseHexID(rec.ID); ok {
				delete(m.hexIDs, id)
			}
			for _, p := range []string{rec.StdoutPath, rec.StderrPath, fromRecord(rec).IndexPath()} {
				// Only a file of this manager's: a record copied from
				// elsewhere names files that are not its to remove.
				if p != "" && filepath.Dir(p) == filepath.Clean(m.o.Dir) {
					os.Remove(p)
				}
			}
		}
		m.mu.Unlock()
		n += len(old)
		if len(old) < batch {
			return n, nil
		}
	}
}

// interruptQueued ends jobs that waited for a slot when the manager
// closed or let its jobs go: they never started.
func interruptQueued(queue []*Job, note string) {
	for _, j := range queue {
		j.mu.Lock()
		j.reason = Interrupted
		j.info.Error = "the daemon shut down before the job started"
		if note != "" {
			j.info.Error += ": " + note
		}
		j.finishLocked(Interrupted)
		j.mu.Unlock()
	}
}

// replayJournal opens the journal (Options.Journal) and puts in the
// store the records it holds that the store lacks, or has as not ended
// (a daemon told its callers of their end and died before their commit),
// and returns the ids of all it holds. Once they are committed the files
// are emptied; a store that fails keeps them queued (as recover's are)
// and the files as they are until they are.
func (m *Manager) replayJournal(ctx context.Context) (map[string]bool, error) {
	jl, recs, bad, err := openJournal(m.o.Journal)
	if err != nil || jl == nil {
		return nil, err
	}
	m.journal = jl
	m.records.journal = jl
	if bad > 0 {
		m.o.Logger.Warn("job journal: lines that are not the record of an ended job were skipped", "lines", bad)
	}
	ids := make(map[string]bool, len(recs))
	var last uint64
	put := 0
	for _, rec := range recs {
		ids[rec.ID] = true
		old, err := m.o.Store.GetJob(ctx, rec.ID)
		if err == nil && State(old.State).Terminal() {
			continue // committed before the daemon died
		}
		if err != nil && !store.IsNotFound(err) {
			m.o.Logger.Error("job journal: the store could not be read; its record is put again", "job", rec.ID, "err", err)
		}
		last = m.records.put(nil, fromRecord(rec), false)
		put++
	}
	if put > 0 {
		m.o.Logger.Info("job journal: records of ended jobs put in the store", "jobs", put)
	}
	if err := m.records.sync(last); err != nil {
		// Emptied once they are (see journal.committed).
		jl.held(last)
		m.o.Logger.Error("job journal: its records could not be committed; retrying", "jobs", put, "err", err)
		return ids, nil
	}
	jl.emptyAll() // every line of the files is in the store now
	return ids, nil
}

// journalSettled empties the journal of what is committed (see
// journal.committed): after a flush, all it holds.
func (m *Manager) journalSettled() {
	if m.journal != nil {
		m.journal.committed(m.records.committedSeq())
	}
}

// journalForget notes in the journal that id's record was removed from
// the store (see journal.forget).
func (m *Manager) journalForget(id string) {
	if m.journal != nil {
		// Numbered past every put so far: it outranks any entry of id.
		m.journal.forget(id, m.records.last()+1)
	}
}

// journalFailed notes a record the journal did not take: its callers
// wait for its commit. One full of records not committed yet (a store
// that fails, or a burst of ends within a linger) takes records again
// once they are; said once, as any other failure.
func (m *Manager) journalFailed(err error) {
	if errors.Is(err, errJournalFull) {
		return
	}
	m.journalWarn.Do(func() {
		m.o.Logger.Error("job journal: a record could not be written; its callers wait for its commit", "err", err)
	})
}
