//go:build unix

package supervise_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/supervise"
)

// jobs is a Kind of held jobs over a real holder's client: a manager
// that holds the ids of standing Held, and records nothing (its records
// are committed at once).
type jobs struct {
	h        *holder.Client
	mu       sync.Mutex
	standing map[string]supervise.Standing
	ends     map[string]wire.JobEnd // told, of jobs it holds
	strays   map[string]wire.JobEnd // told, of jobs it does not
}

func (k *jobs) List() ([]wire.Job, error) { return k.h.Held() }
func (k *jobs) ID(x wire.Job) string      { return x.ID }
func (k *jobs) End(x wire.Job) (wire.JobEnd, bool) {
	if x.End == nil {
		return wire.JobEnd{}, false
	}
	return *x.End, true
}
func (k *jobs) Standing(id string) supervise.Standing {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.standing[id]
}
func (k *jobs) Progress(wire.Job) {}
func (k *jobs) Tell(id string, e wire.JobEnd) supervise.Told {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.standing[id] != supervise.Held {
		k.strays[id] = e
		return supervise.NotOurs
	}
	k.ends[id] = e
	return supervise.Taken
}
func (k *jobs) Stop(id string) error                { return k.h.Stop(id, true, 0) }
func (k *jobs) Drop(string)                         {}
func (k *jobs) Recorded(_ string, then func())      { then() }
func (k *jobs) Ack(id string) error                 { return k.h.Ack(id) }
func (k *jobs) Supervised() (held, flight []string) { return nil, nil }
func (k *jobs) Terminate(held, flight []string) int { return 0 }
func (k *jobs) Interrupt(string)                    {}

// sink hands the client's events to the Core (job.HeldSink), and keeps
// every end it was told.
type sink struct {
	c    *supervise.Core[string, wire.Job, wire.JobEnd]
	mu   sync.Mutex
	ends map[string]wire.JobEnd
}

func (s *sink) HeldProgress(string, wire.Counts, wire.Counts) {}
func (s *sink) HolderLost()                                   {}
func (s *sink) HeldEnded(e wire.JobEnd) {
	s.mu.Lock()
	s.ends[e.ID] = e
	s.mu.Unlock()
	s.c.Ended(e.ID, e)
}

// serve runs a holder in this process on a socket in a temp dir, and
// returns a client of it.
func serve(t *testing.T) *holder.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "sup") // short: a socket path is bounded
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "holder.sock")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- holder.Serve(ctx, holder.ServerOptions{Socket: sock, FirstWait: time.Minute, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	c, err := holder.Open(holder.ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		<-done
		os.RemoveAll(dir)
	})
	return c
}

func spawn(t *testing.T, c *holder.Client, id string, argv ...string) {
	t.Helper()
	dir := t.TempDir()
	_, err := c.Spawn(wire.JobSpec{ID: id, Path: argv[0], Argv: argv, Env: []string{"PATH=/usr/bin:/bin"},
		Stdout: filepath.Join(dir, id+".out"), Stderr: filepath.Join(dir, id+".err")})
	if err != nil {
		t.Fatalf("spawn %s: %v", id, err)
	}
}

// held is what the holder holds: "run" or "end" by id.
func held(c *holder.Client) (map[string]string, error) {
	hs, err := c.Held()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, x := range hs {
		m[x.ID] = "run"
		if x.End != nil {
			m[x.ID] = "end"
		}
	}
	return m, nil
}

func want(c *holder.Client, w map[string]string) func() error {
	return func() error {
		got, err := held(c)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			return fmt.Errorf("the holder holds %v, want %v", got, w)
		}
		return nil
	}
}

// A manager's start against a real holder: the running job with a record
// and the ended one with a record are adopted (the end given to adopt);
// the running one with no record is stopped with SIGKILL, and its end,
// no one's, acked; the ended one with no record acked. After the
// adoption, a resync stops a job the manager neither holds nor starts,
// and leaves the others.
func TestAdoptAndResyncAgainstAHolder(t *testing.T) {
	c := serve(t)
	spawn(t, c, "run-rec", "/bin/sleep", "3600")
	spawn(t, c, "run-norec", "/bin/sleep", "3600")
	spawn(t, c, "end-rec", "/bin/sh", "-c", "exit 5")
	spawn(t, c, "end-norec", "/bin/sh", "-c", "exit 4")
	hivetest.Eventually(t, 10*time.Second, "both short jobs ended in the holder", want(c,
		map[string]string{"run-rec": "run", "run-norec": "run", "end-rec": "end", "end-norec": "end"}))

	k := &jobs{h: c, standing: map[string]supervise.Standing{}, ends: map[string]wire.JobEnd{}, strays: map[string]wire.JobEnd{}}
	core := supervise.New(k, supervise.Options{What: "job"})
	events := &sink{c: core, ends: map[string]wire.JobEnd{}}
	c.Listen(events)
	records := map[string]bool{"run-rec": true, "end-rec": true}
	var adoptedEnd *wire.JobEnd
	err := core.Adopt(func(x wire.Job, early *wire.JobEnd) bool {
		if !records[x.ID] {
			return false
		}
		k.mu.Lock()
		k.standing[x.ID] = supervise.Held
		k.mu.Unlock()
		if x.End != nil {
			adoptedEnd = x.End
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if adoptedEnd == nil || adoptedEnd.ID != "end-rec" || adoptedEnd.ExitCode != 5 {
		t.Errorf("the end given to the adoption: %+v, want end-rec's exit 5", adoptedEnd)
	}
	// end-rec stays until its manager records and acks it.
	hivetest.Eventually(t, 10*time.Second, "what has no record gone from the holder", want(c,
		map[string]string{"run-rec": "run", "end-rec": "end"}))
	// Its end may come while adopting: then it is acked without being
	// told to the manager.
	events.mu.Lock()
	e, ok := events.ends["run-norec"]
	events.mu.Unlock()
	if !ok || !e.Stopped || e.Signal == nil || *e.Signal != int(syscall.SIGKILL) {
		t.Errorf("the end of the job with no record: %+v (told %v), want stopped by SIGKILL", e, ok)
	}

	// A spawn the manager gave up on (Other), one it is starting, and
	// one unknown to it.
	spawn(t, c, "given-up", "/bin/sleep", "3600")
	spawn(t, c, "starting", "/bin/sleep", "3600")
	spawn(t, c, "unknown", "/bin/sleep", "3600")
	k.mu.Lock()
	k.standing["given-up"] = supervise.Other
	k.standing["starting"] = supervise.Starting
	k.mu.Unlock()
	core.Resync()
	hivetest.Eventually(t, 10*time.Second, "the strays stopped and acked", want(c,
		map[string]string{"run-rec": "run", "end-rec": "end", "starting": "run"}))

	for _, id := range []string{"run-rec", "starting"} {
		if err := c.Stop(id, true, 0); err != nil {
			t.Error(err)
		}
	}
	hivetest.Eventually(t, 10*time.Second, "the test's jobs ended", func() error {
		k.mu.Lock()
		defer k.mu.Unlock()
		if _, ok := k.ends["run-rec"]; !ok {
			return fmt.Errorf("run-rec's end not told: %v", k.ends)
		}
		if _, ok := k.strays["starting"]; !ok {
			return fmt.Errorf("starting's end not told: %v", k.strays)
		}
		return nil
	})
}
