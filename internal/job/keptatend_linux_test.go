package job_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// A kept job whose leader has exited when its fork returns (as it often
// has on few processors: here a hook waits for that) is kept with its
// end, in one line (holder protocol 6), not with a keep at its start:
// its caller is told its end before anything of it is committed, the
// holder has that end and its running record until the ack, and should
// the daemon die first the next one adopts it as told, output and all;
// the next start's pipes, which its start took, are made again after its
// end; its output is read at once, and what a process it left writes
// later is read too. An attached job still running when its fork
// returns is kept once it ran for KeepLater, or when told as running,
// and with its end if it ends before; a detached one at once.
func TestKeptAtItsEnd(t *testing.T) {
	dir, sock, st, m1, c1 := keepingSetup(t)
	ctx := context.Background()
	defer m1.Close(ctx)

	// Still running when its fork returns: kept once it ran for
	// KeepLater (an attached job; a second here, so that the look right
	// after the start cannot be late), or at once when told as running
	// (Detach), or at its start (a detached job).
	restoreLater := job.SetKeepLater(time.Second)
	j, err := m1.Start(job.Spec{Cmd: "sleep 30", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	if job.Kept(j) {
		t.Error("an attached job kept at its start, want after KeepLater")
	}
	hivetest.Eventually(t, 10*time.Second, "the attached job kept once it ran for KeepLater", func() error {
		if !job.Kept(j) {
			return errors.New("not kept")
		}
		return nil
	})
	m1.Kill(j.ID(), true)
	if end, _ := j.Wait(ctx); end.State != job.Killed || job.KeptAtEnd(j) {
		t.Fatalf("a job killed while it ran: %s, kept at its end %v; want killed, kept while it ran", end.State, job.KeptAtEnd(j))
	}
	j, err = m1.Start(job.Spec{Cmd: "sleep 30", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Detach(); err != nil {
		t.Fatal(err)
	}
	if !job.Kept(j) {
		t.Error("a job told as running (Detach) before KeepLater: not kept")
	}
	m1.Kill(j.ID(), true)
	j.Wait(ctx)
	j, err = m1.Start(job.Spec{Cmd: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	if !job.Kept(j) {
		t.Error("a detached job: not kept at its start")
	}
	m1.Kill(j.ID(), true)
	j.Wait(ctx)
	// Ended within KeepLater (a minute here: no clock to race), though
	// not when its fork returned: kept with its end.
	restoreLater()
	defer job.SetKeepLater(time.Minute)()
	j, err = m1.Start(job.Spec{Cmd: "sleep 0.01; echo soon", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := j.Wait(ctx); end.State != job.Done || !job.KeptAtEnd(j) || string(j.Stdout().Tail(100)) != "soon\n" {
		t.Fatalf("a job that ended within KeepLater: %s, kept at its end %v, output %q", end.State, job.KeptAtEnd(j), j.Stdout().Tail(100))
	}

	hivetest.Eventually(t, 10*time.Second, "the killed job recorded and acked", func() error {
		if held, err := c1.Held(); err != nil || len(held) != 0 {
			return fmt.Errorf("held %+v %v", held, err)
		}
		return nil
	})

	// Its leader ended before its fork returned; the store refuses
	// writes meanwhile.
	defer exitedAtFork()()
	// What a process it left writes after its end is read too: its
	// pipe does not end with the leader (a pump reads on).
	j, err = m1.Start(job.Spec{Cmd: "(trap '' TERM; sleep 0.3; echo late) & echo early", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := j.Wait(ctx); end.State != job.Done || !job.KeptAtEnd(j) {
		t.Fatalf("a job that left a writer: %s, kept at its end %v", end.State, job.KeptAtEnd(j))
	}
	if out := string(j.Stdout().Tail(100)); out != "early\nlate\n" {
		t.Errorf("the output of a job that left a writer: %q, want early and late", out)
	}
	hivetest.Eventually(t, 10*time.Second, "that job recorded and acked", func() error {
		if held, err := c1.Held(); err != nil || len(held) != 0 {
			return fmt.Errorf("held %+v %v", held, err)
		}
		return nil
	})

	roomAgain := noRoom(t, dir)
	j, err = m1.Start(job.Spec{Cmd: "echo ended; exit 3", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	id := j.ID()
	j.Wait(ctx)
	if !job.KeptAtEnd(j) {
		t.Fatal("a job whose leader ended before its fork returned: not kept with its end")
	}
	if out := string(j.Stdout().Tail(100)); out != "ended\n" {
		t.Errorf("its output: %q", out)
	}
	// Its start took the pipes made ahead; the next ones are made once
	// it ended (not while it ran: it had ended already).
	hivetest.Eventually(t, 10*time.Second, "the next start's pipes made again", func() error {
		if !job.PipesMadeAhead(m1) {
			return errors.New("not made")
		}
		return nil
	})
	told, err := m1.Durable(j)
	if err != nil || told.State != job.Done || told.ExitCode == nil || *told.ExitCode != 3 {
		t.Fatalf("told: %+v %v, want done with exit 3 while the store refuses writes", told, err)
	}
	held, err := c1.Held()
	if err != nil || len(held) != 1 || held[0].ID != id || held[0].End == nil || held[0].End.ExitCode != 3 || len(held[0].Record) == 0 {
		t.Fatalf("the holder holds %+v (%v), want the end and the record of %s", held, err, id)
	}
	if rec, err := st.GetJob(ctx, id); err == nil {
		t.Fatalf("recorded while the store refuses writes: %+v", rec)
	}

	// The daemon "dies": it says nothing more to the holder. The next
	// one adopts the job as told.
	c1.Close()
	m2, c2 := heldManager(t, dir, sock, st, time.Second)
	defer c2.Close()
	defer m2.Close(ctx)
	j2, err := m2.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := j2.Wait(ctx)
	if got.State != job.Done || got.ExitCode == nil || *got.ExitCode != 3 {
		t.Errorf("adopted: %+v, told %+v", got, told)
	}
	if out := string(j2.Stdout().Tail(100)); out != "ended\n" {
		t.Errorf("the adopted job's output: %q", out)
	}
	roomAgain()
	hivetest.Eventually(t, 10*time.Second, "recorded done, then acked", func() error {
		rec, err := st.GetJob(ctx, id)
		if err != nil || rec.State != string(job.Done) || rec.ExitCode == nil || *rec.ExitCode != 3 {
			return fmt.Errorf("record %+v %v", rec, err)
		}
		if held, err := c2.Held(); err != nil || len(held) != 0 {
			return fmt.Errorf("held %+v %v", held, err)
		}
		return nil
	})
}

// keepingSetup is a holder that makes cgroups and a manager that keeps
// its jobs with it (a client of its own; opts change its options), once
// the holder lent its first spares; it skips where there are no cgroups.
// The caller closes both.
func keepingSetup(t *testing.T, opts ...func(*job.Options)) (dir, sock string, st *store.Store, m *job.Manager, c *holder.Client) {
	t.Helper()
	t.Setenv("HIVE_HOLDER_KEEP", "on")
	g, err := proc.OpenJobCgroups(t.TempDir())
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	t.Cleanup(g.Close) // after the holder's end
	dir, sock, st = heldSetup(t, 0, func(o *holder.ServerOptions) { o.Cgroups = g })
	m, c = heldManager(t, dir, sock, st, time.Second, opts...)
	if ok, _ := c.Keeps(); !ok || c.Info().Cgroups == "" {
		c.Close()
		m.Close(context.Background())
		t.Skip("this holder keeps no jobs here, or makes no cgroups")
	}
	if !c.KeepsEnded() {
		t.Fatal("a holder of this build keeps no ended job (protocol 6)")
	}
	hivetest.Eventually(t, 10*time.Second, "the holder's first spares", func() error {
		p, ok := c.Spare()
		if !ok {
			return errors.New("none lent yet")
		}
		c.Unspare(p)
		return nil
	})
	return dir, sock, st, m, c
}

// An attached job stopped while its put-off keep was made (the stop
// found it not kept) has the holder told of the stop after the keep:
// once the holder takes the job over (here after a release), it goes on
// with the stop, SIGKILL when the grace is over (the job ignores SIGINT).
func TestPutOffKeepStopGoesOn(t *testing.T) {
	dir, sock, st, m1, c1 := keepingSetup(t)
	ctx := context.Background()
	made, goOn := make(chan struct{}), make(chan struct{})
	restoreMade := job.SetLateKeepMade(func() {
		close(made)
		<-goOn
	})
	j, err := m1.Start(job.Spec{Cmd: "trap '' INT; while :; do sleep 0.01; done", Attached: true, Name: "stubborn"})
	if err != nil {
		t.Fatal(err)
	}
	<-made
	if _, err := m1.Kill(j.ID(), false); err != nil {
		t.Fatal(err)
	}
	close(goOn)
	restoreMade()
	hivetest.Eventually(t, 10*time.Second, "the job kept", func() error {
		if !job.Kept(j) {
			return errors.New("not kept")
		}
		return nil
	})
	if err := m1.Release(""); err != nil {
		t.Fatal(err)
	}
	c1.Close()
	m1.Close(ctx)
	m2, c2 := heldManager(t, dir, sock, st, time.Second)
	defer c2.Close()
	defer m2.Close(ctx)
	jr, err := m2.Get("stubborn")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	end, ok := jr.Wait(wctx)
	if !ok || end.State != job.Killed || end.Signal == nil || *end.Signal != 9 {
		t.Fatalf("stopped while its put-off keep was made, then let go: %+v (want killed by SIGKILL)", end)
	}
}
