//go:build unix

package job_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hivetools/hive/internal/hivetest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
)

// gatedHolder is a real holder's client whose spawns of a command that
// names gatedMark wait for gate before they go to the holder: a spawn
// whose answer is slow to come, as a stopped holder's is.
type gatedHolder struct {
	*holder.Client
	entered chan string // the spec's id, once a gated spawn waits
	gate    chan struct{}
}

// Keeps: no, every job of this test goes through the gated Spawn.
func (g *gatedHolder) Keeps() (bool, string) { return false, "" }

const gatedMark = "gated-spawn"

func (g *gatedHolder) Spawn(spec wire.JobSpec) (wire.JobStart, error) {
	if strings.Contains(strings.Join(spec.Argv, " "), gatedMark) {
		g.entered <- spec.ID
		<-g.gate
	}
	return g.Client.Spawn(spec)
}

// within runs f and fails the test if it has not returned within d:
// what f does must not wait for the gated spawn.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s waited for another job's spawn (no answer within %v)", what, d)
	}
}

// While one job's spawn waits for its holder's answer, nothing else
// waits for it: the job is listed (pending), looked up and killed; other
// jobs are listed, looked up, started and killed. Once the spawn answers,
// the kill that came meanwhile ends the job: its process does not run on.
func TestHeldSpawnHoldsNoLock(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	c, err := holder.Open(holder.ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := &gatedHolder{Client: c, entered: make(chan string, 1), gate: make(chan struct{})}
	opened := false
	open := func() {
		if !opened {
			opened = true
			close(g.gate)
		}
	}
	m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: g, Owner: dir, Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer m.Close(ctx)
	defer open() // first: a failing test never leaves the spawn waiting
	sleeper, err := m.Start(job.Spec{Cmd: "sleep 30", Name: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := m.Start(job.Spec{Cmd: "exit 3", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	ended.Wait(ctx)

	type started struct {
		j   *job.Job
		err error
	}
	gated := make(chan started, 1)
	go func() {
		j, err := m.Start(job.Spec{Cmd: "sleep 3600 # " + gatedMark, Name: "gated"})
		gated <- started{j, err}
	}()
	id := <-g.entered // its spawn waits, its record committed
	const d = 10 * time.Second
	within(t, d, "Get and Info of the job being spawned", func() error {
		j, err := m.Get("gated")
		if err != nil {
			return err
		}
		if in := j.Info(); in.ID != id || in.State != job.Pending {
			return errors.New("snapshot " + string(in.State) + ", want pending")
		}
		return nil
	})
	within(t, d, "List", func() error {
		l, err := m.List(ctx, 0)
		if err != nil {
			return err
		}
		states := map[string]job.State{}
		for _, in := range l {
			states[in.ID] = in.State
		}
		if states[id] != job.Pending || states[sleeper.ID()] != job.Running || states[ended.ID()] != job.Done {
			return errors.New("states " + strings.Join([]string{string(states[id]), string(states[sleeper.ID()]), string(states[ended.ID()])}, ","))
		}
		return nil
	})
	within(t, d, "Lookup of a running job", func() error {
		in, err := m.Lookup(ctx, "sleeper")
		if err == nil && in.State != job.Running {
			err = errors.New("not running: " + string(in.State))
		}
		return err
	})
	within(t, d, "Start and end of another job", func() error {
		j, err := m.Start(job.Spec{Cmd: "echo other", Attached: true})
		if err != nil {
			return err
		}
		if in, _ := j.Wait(ctx); in.State != job.Done {
			return errors.New("other job: " + string(in.State))
		}
		return nil
	})
	within(t, d, "Kill of a running job", func() error {
		_, err := m.Kill("sleeper", true)
		return err
	})
	within(t, d, "Kill of the job being spawned", func() error {
		in, err := m.Kill("gated", false)
		if err == nil && in.State != job.Pending {
			err = errors.New("killed while pending: " + string(in.State))
		}
		return err
	})
	if in, _ := sleeper.Wait(ctx); in.State != job.Killed {
		t.Errorf("the killed sleeper: %+v", in)
	}

	open()
	s := <-gated
	if s.err != nil {
		t.Fatalf("the gated start: %v", s.err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	in, ok := s.j.Wait(wctx)
	if !ok || in.State != job.Killed || in.Pid <= 0 {
		t.Fatalf("the job killed while its spawn was in flight: %+v (ended %v)", in, ok)
	}
	if err := syscall.Kill(in.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("its process %d after its end: %v", in.Pid, err)
	}
}

// A job the holder runs that its manager does not (the answer to its
// spawn came after the manager had given up, with the connection it
// came on) is stopped when the manager catches up with the holder
// (HeldResync); the manager's own running job is left alone.
func TestResyncStopsAStrayHeldJob(t *testing.T) {
	t.Setenv("HIVE_HOLDER_KEEP", "off") // the manager's job is the holder's: listed with the stray
	dir, sock, st := heldSetup(t, 0)
	m, c := heldManager(t, dir, sock, st, time.Second)
	defer c.Close()
	ctx := context.Background()
	defer m.Close(ctx)
	own, err := m.Start(job.Spec{Cmd: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "tasks")
	stray, err := c.Spawn(wire.JobSpec{ID: "stray", Path: "/bin/sleep", Argv: []string{"sleep", "3600"}, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: filepath.Join(tasks, "stray.out"), Stderr: filepath.Join(tasks, "stray.err")})
	if err != nil {
		t.Fatal(err)
	}
	m.HeldResync()
	hivetest.Eventually(t, 10*time.Second, "the stray ended and its end acked", func() error {
		held, err := c.Held()
		if err != nil {
			return hivetest.Abort(err)
		}
		ids := []string{}
		for _, x := range held {
			ids = append(ids, x.ID)
		}
		if len(held) == 1 && held[0].ID == own.ID() && held[0].End == nil {
			return nil
		}
		return fmt.Errorf("the holder holds %v, want only %s running", ids, own.ID())
	})
	if err := syscall.Kill(stray.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the stray's process %d: %v", stray.Pid, err)
	}
	if in := own.Info(); in.State != job.Running {
		t.Errorf("the manager's own job after the resync: %+v", in)
	}
}
