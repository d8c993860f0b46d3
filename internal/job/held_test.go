//go:build unix

package job_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// A manager that lets its jobs go (Release) leaves them to the holder; the
// next manager adopts them: same id, pid and start; the output goes on
// from where it was; a stop and the end work as for its own jobs.
func TestHeldJobAdoptedByTheNextManager(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	open := func() (*job.Manager, *holder.Client) {
		c, err := holder.Open(holder.ClientOptions{Socket: sock})
		if err != nil {
			t.Fatal(err)
		}
		m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: c, Owner: dir, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return m, c
	}
	m1, c1 := open()
	j, err := m1.Start(job.Spec{Cmd: "i=0; while :; do i=$((i+1)); echo $i; sleep 0.01; done", Name: "counter"})
	if err != nil {
		t.Fatal(err)
	}
	before := j.Info()
	waitBytes := func(j *job.Job, n int64) {
		t.Helper()
		hivetest.Eventually(t, 10*time.Second, fmt.Sprintf("%d bytes of job %s", n, j.ID()), func() error {
			if got := j.Stdout().Stats().Total; got < n {
				return fmt.Errorf("job %s printed %d bytes, want %d", j.ID(), got, n)
			}
			return nil
		})
	}
	waitBytes(j, 20)
	if err := m1.Release(""); err != nil {
		t.Fatal(err)
	}
	c1.Close()

	m2, c2 := open()
	defer c2.Close()
	j2, err := m2.Get("counter")
	if err != nil {
		t.Fatal(err)
	}
	in := j2.Info()
	if in.ID != before.ID || in.State != job.Running || in.Pid != before.Pid || !in.Started.Equal(before.Started) || in.PidStart != before.PidStart {
		t.Fatalf("adopted: %+v, was %+v", in, before)
	}
	seen := j2.Stdout().Stats().Total
	waitBytes(j2, seen+20)
	if _, err := m2.Kill("counter", false); err != nil {
		t.Fatal(err)
	}
	end, ok := j2.Wait(context.Background())
	if !ok || end.State != job.Killed || end.Signal == nil {
		t.Fatalf("after kill: %+v", end)
	}
	b, _ := os.ReadFile(end.StdoutPath)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if l != itoa(i+1) {
			t.Fatalf("line %d of the output across the managers: %q", i+1, l)
		}
	}
	if int64(len(b)) != end.StdoutBytes {
		t.Errorf("recorded %d bytes, the file has %d", end.StdoutBytes, len(b))
	}
	// The end was acknowledged: the holder holds nothing.
	hivetest.Eventually(t, 5*time.Second, "the holder to hold nothing", func() error {
		if held, err := c2.Held(); err != nil || len(held) > 0 {
			return fmt.Errorf("the holder still holds %+v (%v)", held, err)
		}
		return nil
	})
	// The end is acked once recorded.
	rec, err := st.GetJob(context.Background(), end.ID)
	if err != nil || rec.State != string(job.Killed) {
		t.Errorf("record: %+v %v", rec, err)
	}
	if err := m2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// Starts, stops and output events of held jobs at once never wait on
// each other: calls to the holder are made with no job's lock held (they
// once were, and the events of other jobs waited for the manager's lock
// behind them), and their answers come while events are delivered.
func TestHeldCallsAndEventsDoNotDeadlock(t *testing.T) {
	dir, sock, st := heldSetup(t, time.Millisecond)
	c, err := holder.Open(holder.ClientOptions{Socket: sock, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: c, Owner: dir, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// Printers keep the events coming.
	for range 4 {
		if _, err := m.Start(job.Spec{Cmd: "while :; do echo x; done"}); err != nil {
			t.Fatal(err)
		}
	}
	// The workers race for 2 s.
	race, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			name := "n" + itoa(w%2) // two workers a name: starts and kills of one name race
			for race.Err() == nil {
				t0 := time.Now()
				if j, err := m.Start(job.Spec{Cmd: "sleep 5", Name: name}); err == nil {
					m.Kill(j.ID(), false)
				}
				m.Kill(name, false)
				if d := time.Since(t0); d > 10*time.Second {
					errs <- fmt.Errorf("a start and a kill took %v", d)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// heldSetup runs a holder in this process (its progress every
// progressEvery; 0: the default) and opens a store in a temp dir; both
// end with the test.
func heldSetup(t *testing.T, progressEvery time.Duration, opts ...func(*holder.ServerOptions)) (dir, sock string, st *store.Store) {
	t.Helper()
	dir = t.TempDir()
	sockDir, err := os.MkdirTemp("", "held") // short: a unix socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock = filepath.Join(sockDir, "holder.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	ready := make(chan struct{})
	o := holder.ServerOptions{Socket: sock, FirstWait: time.Minute, ProgressEvery: progressEvery, Ready: func() { close(ready) }}
	for _, f := range opts {
		f(&o)
	}
	go func() { served <- holder.Serve(ctx, o) }()
	<-ready
	t.Cleanup(func() { cancel(); <-served })
	// Shared: gatedRecorded makes it fail through a connection of its own.
	if st, err = store.OpenShared(filepath.Join(dir, "hive.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return dir, sock, st
}

// An attached held job's end is told without waiting for its record: its
// holder keeps the end until the record is committed, and hears the ack
// only then. With the store refusing writes, Durable still tells the end
// (its running record is in the store), and the holder still holds it;
// once the store takes writes, the end is recorded, and then acked.
func TestHeldEndKeptUntilRecorded(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	ctx := context.Background()
	c, err := holder.Open(holder.ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: c, Owner: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	j, gate, db := gatedRecorded(t, m, st, dir, job.Spec{Cmd: "exit 5"})
	id := j.Info().ID
	until := func(what string, ok func() bool) {
		t.Helper()
		hivetest.Eventually(t, 10*time.Second, what, func() error {
			if !ok() {
				return errors.New("not yet")
			}
			return nil
		})
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	in, err := m.Durable(j)
	if err != nil || in.State != job.Done || in.ExitCode == nil || *in.ExitCode != 5 {
		t.Fatalf("told: %+v %v, want done with exit 5", in, err)
	}
	held, err := c.Held()
	if err != nil || len(held) != 1 || held[0].ID != id || held[0].End == nil || held[0].End.ExitCode != 5 {
		t.Fatalf("the holder holds %+v (%v), want the end of %s kept", held, err, id)
	}
	if rec, err := st.GetJob(ctx, id); err != nil || rec.State != string(job.Running) {
		t.Fatalf("record while the store refuses writes: %+v %v", rec, err)
	}
	if _, err := db.Exec(`DROP TRIGGER no_room`); err != nil {
		t.Fatal(err)
	}
	until("recorded done, then acked", func() bool {
		rec, err := st.GetJob(ctx, id)
		if err != nil || rec.State != string(job.Done) || rec.ExitCode == nil || *rec.ExitCode != 5 {
			return false
		}
		held, err := c.Held()
		return err == nil && len(held) == 0
	})
}

// The end a daemon told without its record (see Durable) is the end the
// next daemon records from the holder: a job whose timeout has passed by
// then is not timed out again at its adoption.
func TestToldEndAdoptedAsTold(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	ctx := context.Background()
	m1, c1 := heldManager(t, dir, sock, st, 0)
	j, gate, db := gatedRecorded(t, m1, st, dir, job.Spec{Cmd: "exit 4", Timeout: 600 * time.Millisecond})
	id := j.Info().ID
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j.Wait(ctx)
	told, err := m1.Durable(j)
	if err != nil || told.State != job.Done || told.ExitCode == nil || *told.ExitCode != 4 {
		t.Fatalf("told: %+v %v", told, err)
	}
	// The daemon "dies": it says nothing more to the holder. Past the
	// timeout, the next one adopts the job from its running record.
	c1.Close()
	time.Sleep(700 * time.Millisecond)
	m2, c2 := heldManager(t, dir, sock, st, 0)
	defer c2.Close()
	j2, err := m2.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := j2.Wait(ctx)
	if got.State != told.State || got.ExitCode == nil || *got.ExitCode != 4 {
		t.Errorf("adopted end: %+v, told %+v", got, told)
	}
	if _, err := db.Exec(`DROP TRIGGER no_room`); err != nil {
		t.Fatal(err)
	}
	m2.Close(ctx)
	m1.Close(ctx)
}

// heldManager is a manager of the jobs in dir/tasks on st, its jobs held
// by the holder at sock through a client of its own (the caller closes
// both). grace is Options.Grace (0: the default).
func heldManager(t *testing.T, dir, sock string, st *store.Store, grace time.Duration, opts ...func(*job.Options)) (*job.Manager, *holder.Client) {
	t.Helper()
	c, err := holder.Open(holder.ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	o := job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: c, Owner: dir, Grace: grace}
	for _, f := range opts {
		f(&o)
	}
	m, err := job.New(o)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	return m, c
}

// goneHolder is a holder whose process is gone (Keeper.HolderGone), as
// its guard ends what it kept.
type goneHolder struct{ *holder.Client }

func (goneHolder) HolderGone() bool { return true }

// awaitRecordedRunning waits until the store has id's running record,
// and returns it.
func awaitRecordedRunning(t *testing.T, st *store.Store, id string) store.Job {
	t.Helper()
	var rec store.Job
	hivetest.Eventually(t, 10*time.Second, id+" recorded running", func() error {
		var err error
		if rec, err = st.GetJob(context.Background(), id); err != nil {
			return err
		}
		if rec.State != string(job.Running) {
			return fmt.Errorf("recorded %s", rec.State)
		}
		return nil
	})
	return rec
}

// gatedRecorded starts cmd (which waits for the file gate) as an attached
// job of m, waits until its running record is committed, then makes the
// store refuse writes; the returned db lets them again (DROP TRIGGER
// no_room).
func gatedRecorded(t *testing.T, m *job.Manager, st *store.Store, dir string, spec job.Spec) (j *job.Job, gate string, db *sql.DB) {
	t.Helper()
	gate = filepath.Join(dir, "gate")
	spec.Cmd = fmt.Sprintf("while [ ! -e %s ]; do sleep 0.01; done; %s", gate, spec.Cmd)
	spec.Attached = true
	j, err := m.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	awaitRecordedRunning(t, st, j.Info().ID)
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "hive.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TRIGGER no_room BEFORE INSERT ON jobs BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	return j, gate, db
}

// A job whose timeout kills at once (terminal_exec's) keeps that when a
// next manager adopts it: its timeout SIGKILLs a job that ignores
// SIGINT, at the timeout, not after the stop's grace.
func TestAdoptedJobKeepsKillOnTimeout(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	ctx := context.Background()
	m1, c1 := heldManager(t, dir, sock, st, 0)
	const timeout = 1500 * time.Millisecond
	j, err := m1.Start(job.Spec{Cmd: "trap '' INT; sleep 30", Timeout: timeout, KillOnTimeout: true, Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Info().ID
	if rec := awaitRecordedRunning(t, st, id); !rec.KillOnTimeout {
		t.Fatalf("running record %+v: kill_on_timeout not kept", rec)
	}
	// The daemon leaves before the timeout, its jobs left running.
	if err := m1.Release(""); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	// A grace far longer than the test: only a SIGKILL at the timeout
	// ends the job in time.
	m2, c2 := heldManager(t, dir, sock, st, time.Minute)
	defer c2.Close()
	j2, err := m2.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got, ended := j2.Wait(wctx)
	if !ended {
		t.Fatalf("the adopted job did not end at its timeout: %+v", got)
	}
	if got.State != job.TimedOut || got.Signal == nil || *got.Signal != 9 {
		t.Fatalf("adopted job ended %+v, want timed_out by signal 9", got)
	}
	if late := got.Ended.Sub(got.Started.Add(timeout)); late > 5*time.Second {
		t.Errorf("killed %v after its timeout, want at once", late)
	}
	m2.Close(ctx)
}

// With HIVE_HOLDER_KEEP=on the manager starts a held-mode job itself and
// the holder keeps it (holder protocol 3): the holder lists it not while
// it runs (it is the daemon's), and the held-mode guarantees hold that
// way too: adopted by the next manager after a release, its end told
// before its record and kept by the holder until the ack, and adopted as
// told.
func TestKeptJobs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the holder keeps jobs on Linux only")
	}
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	t.Run("kept", func(t *testing.T) {
		dir, sock, st := heldSetup(t, 0)
		m, c := heldManager(t, dir, sock, st, time.Second)
		defer c.Close()
		ctx := context.Background()
		defer m.Close(ctx)
		if ok, _ := c.Keeps(); !ok {
			t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
		}
		j, err := m.Start(job.Spec{Cmd: "sleep 30"})
		if err != nil {
			t.Fatal(err)
		}
		if held, err := c.Held(); err != nil || len(held) != 0 {
			t.Errorf("a kept job listed by its holder while it runs: %+v %v", held, err)
		}
		if in := j.Info(); in.State != job.Running || in.Pid <= 0 {
			t.Errorf("a kept job: %+v", in)
		}
		m.Kill(j.ID(), true)
		if end, _ := j.Wait(ctx); end.State != job.Killed {
			t.Errorf("a kept job killed: %+v", end)
		}
	})
	t.Run("a stop goes on after a release", func(t *testing.T) {
		// Killed with a grace, then let go mid-grace: the holder that
		// takes it over was told the stop, and ends it when the grace is
		// over (it ignores SIGINT: only the SIGKILL ends it).
		dir, sock, st := heldSetup(t, 0)
		m1, c1 := heldManager(t, dir, sock, st, 2*time.Second)
		if ok, _ := c1.Keeps(); !ok {
			c1.Close()
			t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
		}
		j, err := m1.Start(job.Spec{Cmd: "trap 'echo int' INT; echo up; while :; do sleep 0.01; done", Name: "stubborn"})
		if err != nil {
			t.Fatal(err)
		}
		hivetest.Eventually(t, 10*time.Second, "the job's trap set", func() error {
			if n := j.Stdout().Stats().Total; n < 3 {
				return fmt.Errorf("%d bytes", n)
			}
			return nil
		})
		if _, err := m1.Kill(j.ID(), false); err != nil {
			t.Fatal(err)
		}
		if err := m1.Release(""); err != nil {
			t.Fatal(err)
		}
		c1.Close()
		m2, c2 := heldManager(t, dir, sock, st, 2*time.Second)
		defer c2.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		defer m2.Close(context.Background())
		j2, err := m2.Get("stubborn")
		if err != nil {
			t.Fatal(err)
		}
		end, ok := j2.Wait(ctx)
		if !ok || end.State != job.Killed || end.Signal == nil || *end.Signal != 9 {
			t.Fatalf("a kept job killed, then let go mid-grace: %+v (want killed by SIGKILL)", end)
		}
	})
	t.Run("a spare of a job that did not start is given back", func(t *testing.T) {
		// The holder lends a few cgroups at a time, one more for each
		// kept job that took one: a start that fails must give its
		// spare back, or a few failures leave none and every job goes
		// through the holder's spawn.
		m, _, dir, kept := lentSetup(t)
		ctx := context.Background()
		for i := range 12 {
			j, err := m.Start(job.Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "no-such-dir")})
			if err == nil {
				if in, _ := j.Wait(ctx); in.State != job.Failed {
					t.Fatalf("start %d in no directory: %+v", i, in)
				}
			}
		}
		if err := kept(); err != nil {
			t.Fatalf("after 12 starts that failed: %v", err)
		}
	})
	t.Run("spares lent again half a loan at a time", func(t *testing.T) {
		// Each kept job takes a spare; the holder lends them again once
		// half its loan (sixteen) is taken, in one message: a daemon is
		// woken by a loan every eighth job, not every job, and never
		// runs out.
		_, c, _, kept := lentSetup(t)
		const jobs = 12
		lends := c.Lends()
		for i := range jobs {
			if err := kept(); err != nil {
				t.Fatalf("job %d: %v", i, err)
			}
		}
		if n := c.Lends() - lends; n > jobs/4 {
			t.Errorf("%d kept jobs had the holder lend spares %d times, want at most %d", jobs, n, jobs/4)
		}
	})
	t.Run("starts counted by who started them", func(t *testing.T) {
		// Kept jobs are the manager's own starts; with every lent spare
		// taken, a job is the holder's spawn for want of one; a job with
		// limits is the holder's (it sets them on the cgroup it makes).
		m, c, _, kept := lentSetup(t)
		before := m.Starts() // the setup's jobs: one kept at least (those before the first spares, the holder's)
		if before.Own == 0 {
			t.Fatalf("after the setup's jobs: %+v, want one own at least", before)
		}
		if err := kept(); err != nil {
			t.Fatal(err)
		}
		if got := m.Starts(); got.Own != before.Own+1 || got.Holder != before.Holder || got.NoSpare != before.NoSpare {
			t.Fatalf("after a kept job: %+v, before it %+v: want one more own", got, before)
		}
		ctx := context.Background()
		run := func(spec job.Spec) {
			t.Helper()
			j, err := m.Start(spec)
			if err != nil {
				t.Fatal(err)
			}
			if end, _ := j.Wait(ctx); end.State != job.Done {
				t.Fatalf("%q: %s %q", spec.Cmd, end.State, end.Error)
			}
		}
		// Every spare taken, then a job: the holder's spawn for want of
		// one; unless the holder lent more meanwhile (its worker made
		// spares), then kept: taken again.
		var taken []string
		prev := m.Starts()
		for try := 0; ; try++ {
			for {
				p, ok := c.Spare()
				if !ok {
					break
				}
				taken = append(taken, p)
			}
			if len(taken) == 0 {
				t.Fatal("no spare lent")
			}
			run(job.Spec{Cmd: "true"})
			got := m.Starts()
			if got.NoSpare == prev.NoSpare+1 && got.Holder == prev.Holder+1 && got.Own == prev.Own {
				prev = got
				break
			}
			if got.Own != prev.Own+1 || got.Holder != prev.Holder || got.NoSpare != prev.NoSpare || try == 4 {
				t.Fatalf("try %d: after a job with every spare taken: %+v, before it %+v", try, got, prev)
			}
			prev = got
		}
		for _, p := range taken {
			c.Unspare(p)
		}
		run(job.Spec{Cmd: "true", Limits: limits.Limits{Nofile: 512}})
		if got := m.Starts(); got.Own != prev.Own || got.Holder != prev.Holder+1 || got.NoSpare != prev.NoSpare {
			t.Fatalf("after a job with limits: %+v, before it %+v: want one more of the holder's, not for want of a spare", got, prev)
		}
		prev = m.Starts()
		run(job.Spec{Cmd: "true"})
		if got := m.Starts(); got.Own != prev.Own+1 || got.Holder != prev.Holder {
			t.Fatalf("after a job with the spares back: %+v, before it %+v: want one more own", got, prev)
		}
	})
	t.Run("a lent spare removed before its job starts", func(t *testing.T) {
		// Should a lent spare's cgroup be gone by the start of the job
		// that takes it (the holder voided the spares, and the daemon
		// had not heard yet), the job starts all the same, without a
		// cgroup of its own.
		m, c, _, _ := lentSetup(t)
		p, ok := c.Spare()
		if !ok {
			t.Fatal("no spare lent")
		}
		c.Unspare(p) // the next job's
		if err := syscall.Rmdir(p); err != nil {
			t.Fatalf("remove the spare %s: %v", p, err)
		}
		ctx := context.Background()
		j, err := m.Start(job.Spec{Cmd: "echo started"})
		if err != nil {
			t.Fatal(err)
		}
		end, _ := j.Wait(ctx)
		if end.State != job.Done || end.ExitCode == nil || *end.ExitCode != 0 {
			t.Fatalf("the job whose spare was removed: %s, %q", end.State, end.Error)
		}
		if out := string(j.Stdout().Tail(100)); out != "started\n" {
			t.Errorf("its output: %q", out)
		}
	})
	t.Run("spares lent again after the holder had none", func(t *testing.T) {
		// The holder's own spawns take spares too: a daemon's loan that
		// ran short while the holder had none is topped up once its
		// worker has made some (it was only on a keep, and a daemon with
		// no spare keeps none: every job went through the holder's
		// spawn from then on).
		g, err := proc.OpenJobCgroups(t.TempDir())
		if err != nil {
			t.Skipf("no cgroups here: %v", err)
		}
		m, c, _, kept := lentSetupWith(t, g)
		ctx := context.Background()
		for range 18 { // past the loan of sixteen
			j, err := m.Start(job.Spec{Cmd: "sleep 30"})
			if err != nil {
				t.Fatal(err)
			}
			g.Lend(100)                         // the holder's spares are gone
			if _, err := c.Held(); err != nil { // its keep is taken in: nothing to lend
				t.Fatal(err)
			}
			m.Kill(j.ID(), true)
			j.Wait(ctx)
		}
		hivetest.Eventually(t, 10*time.Second, "a job kept again", kept)
	})
	t.Run("killed while its holder is gone", func(t *testing.T) {
		// The holder's guard ends what the holder kept, marked process by
		// marked process: a job dies of its signal, or its shell sees its
		// child die first and exits 128+n. Either is interrupted, as a
		// held job of a dead holder is; a plain end is not.
		dir, sock, st := heldSetup(t, 0)
		c, err := holder.Open(holder.ClientOptions{Socket: sock})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if ok, _ := c.Keeps(); !ok {
			t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
		}
		m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: goneHolder{c}, Owner: dir, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		defer m.Close(ctx)
		for _, tc := range []struct {
			cmd  string
			want job.State
		}{
			{"kill -TERM $$", job.Interrupted},
			{"exit 143", job.Interrupted},
			{"exit 3", job.Done},
		} {
			j, err := m.Start(job.Spec{Cmd: tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if end, _ := j.Wait(ctx); end.State != tc.want {
				t.Errorf("%q, its holder gone: %+v, want %s", tc.cmd, end, tc.want)
			}
		}
	})
	t.Run("at most maxKept at once", func(t *testing.T) {
		// A job the manager starts is in its session, and shares its
		// part of the CPU where the scheduler shares it by session: past
		// maxKept running ones, a job is the holder's spawn (in the
		// holder's session). Once a kept one is reaped, the next start
		// is kept again.
		dir, sock, st := heldSetup(t, 0)
		m, c := heldManager(t, dir, sock, st, time.Second)
		defer c.Close()
		ctx := context.Background()
		defer m.Close(ctx)
		if ok, _ := c.Keeps(); !ok {
			t.Skip("this holder keeps no jobs here (a kernel before 6.15)")
		}
		var jobs []*job.Job
		defer func() {
			for _, j := range jobs {
				m.Kill(j.ID(), true)
				j.Wait(ctx)
			}
		}()
		start := func() *job.Job {
			t.Helper()
			j, err := m.Start(job.Spec{Cmd: "sleep 30"})
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
			return j
		}
		// Kept: not listed by its holder while it runs (a spawn is).
		kept := func(j *job.Job) bool {
			held, err := c.Held()
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range held {
				if h.ID == j.ID() {
					return false
				}
			}
			return true
		}
		n := int(job.MaxKept())
		var first *job.Job
		for i := range n + 2 {
			j := start()
			if want := i < n; kept(j) != want {
				t.Fatalf("job %d of %d started (at most %d kept): kept %v, want %v", i+1, n+2, n, !want, want)
			}
			if first == nil {
				first = j
			}
		}
		if held, err := c.Held(); err != nil || len(held) != 2 {
			t.Errorf("the holder's spawns past %d kept: %d %v, want 2", n, len(held), err)
		}
		m.Kill(first.ID(), true)
		if end, _ := first.Wait(ctx); end.State != job.Killed {
			t.Fatalf("a kept job killed: %+v", end)
		}
		if j := start(); !kept(j) {
			t.Errorf("a job started after a kept one ended: the holder's spawn, want kept")
		}
	})
	t.Run("adopted after a release", TestHeldJobAdoptedByTheNextManager)
	t.Run("end kept until recorded", TestHeldEndKeptUntilRecorded)
	t.Run("told end adopted as told", TestToldEndAdoptedAsTold)
	t.Run("calls and events do not deadlock", TestHeldCallsAndEventsDoNotDeadlock)
}

// lentSetup is a manager that keeps its jobs in cgroups its holder lends
// (it skips where there are none), its holder's client and state dir, and
// kept: a job started, checked kept (not the holder's spawn) and ended.
// It returns once the holder's first spares have come.
func lentSetup(t *testing.T) (m *job.Manager, c *holder.Client, dir string, kept func() error) {
	t.Helper()
	g, err := proc.OpenJobCgroups(t.TempDir())
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	return lentSetupWith(t, g)
}

// lentSetupWith is lentSetup with the holder's cgroups g.
func lentSetupWith(t *testing.T, g *proc.JobCgroups) (m *job.Manager, c *holder.Client, dir string, kept func() error) {
	t.Helper()
	t.Cleanup(g.Close) // after the holder's end
	dir, sock, st := heldSetup(t, 0, func(o *holder.ServerOptions) { o.Cgroups = g })
	m, c = heldManager(t, dir, sock, st, time.Second)
	ctx := context.Background()
	t.Cleanup(func() {
		m.Close(ctx)
		c.Close()
	})
	if ok, _ := c.Keeps(); !ok || c.Info().Cgroups == "" {
		t.Skip("this holder keeps no jobs here, or makes no cgroups")
	}
	kept = func() error {
		j, err := m.Start(job.Spec{Cmd: "sleep 30"})
		if err != nil {
			return err
		}
		defer func() {
			m.Kill(j.ID(), true)
			j.Wait(ctx)
		}()
		// The holder lists a kept job only once it ended (until the
		// ack of its end's record: the job before this one may be
		// there still); one it started, from its start on.
		held, err := c.Held()
		if err != nil {
			return err
		}
		for _, x := range held {
			if x.ID == j.ID() {
				return fmt.Errorf("started through the holder's spawn, not kept in a lent cgroup: %+v", x)
			}
		}
		return nil
	}
	hivetest.Eventually(t, 10*time.Second, "the holder's first spares", kept)
	return m, c, dir, kept
}
