package job

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Jobs quiet for longer than pumpIdle hold no goroutine for their
// output: their pumps park (parkRead) and go on when the pipe has
// something, so what a job writes after a silence is kept whole and in
// order, and the parker's goroutine ends once nothing is parked.
func TestIdlePumpsPark(t *testing.T) {
	h := newHarness(t, Options{})
	gate := filepath.Join(t.TempDir(), "gate")
	const n = 20
	base := runtime.NumGoroutine()
	var jobs []*Job
	for i := 0; i < n; i++ {
		// Silent until the gate opens, then a line on each stream.
		jobs = append(jobs, h.start(Spec{Cmd: fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done; echo out%d; echo err%d >&2`, gate, i, i)}))
	}
	// Each running job keeps its waiter (and the manager's own of it);
	// its two pumps park after pumpIdle of silence.
	hivetest.Eventually(t, 10*time.Second, "the idle jobs' pumps to park", func() error {
		parker.mu.Lock()
		parked := len(parker.parked)
		parker.mu.Unlock()
		if g := runtime.NumGoroutine() - base; parked < 2*n || g > 2*n {
			return fmt.Errorf("%d reads parked, want %d (two a job); %d goroutines for %d idle jobs, want at most %d", parked, 2*n, g, n, 2*n)
		}
		return nil
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		in := h.wait(j)
		c, _ := j.Stdout().Read(0, 1<<10)
		e, _ := j.Stderr().Read(0, 1<<10)
		if in.State != Done || string(c.Data) != fmt.Sprintf("out%d\n", i) || string(e.Data) != fmt.Sprintf("err%d\n", i) {
			t.Errorf("job %d: %s, stdout %q, stderr %q", i, in.State, c.Data, e.Data)
		}
	}
	hivetest.Eventually(t, 5*time.Second, "the parker to end", func() error {
		parker.mu.Lock()
		defer parker.mu.Unlock()
		if parker.running || len(parker.parked) > 0 || parker.epfd >= 0 || parker.wake >= 0 {
			return fmt.Errorf("parker running %v with %d parked, descriptors %d %d", parker.running, len(parker.parked), parker.epfd, parker.wake)
		}
		return nil
	})
}

// A job that writes, falls silent past pumpIdle, then writes again: all
// of it is kept, in order, through the park and the resume.
func TestParkedPumpResumes(t *testing.T) {
	h := newHarness(t, Options{})
	j := h.start(Spec{Cmd: `echo one; sleep 0.3; echo two; sleep 0.3; seq 1 20000; sleep 0.3; echo end`})
	in := h.wait(j)
	var got []byte
	for off := int64(0); ; { // a read gives a chunk at most
		c, err := j.Stdout().Read(off, 1<<20)
		if err != nil || len(c.Data) == 0 {
			break
		}
		got = append(got, c.Data...)
		off += int64(len(c.Data))
	}
	out := string(got)
	var want strings.Builder
	want.WriteString("one\ntwo\n")
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("end\n")
	if in.State != Done || out != want.String() {
		t.Errorf("job %s, %d bytes of stdout, want %d: %.60q...", in.State, len(out), want.Len(), out)
	}
}

// A writer that escaped the group holds the pipes of a job whose pumps
// are parked: at the leader's end the drain stops them anyway.
func TestEscapedWriterOfAParkedPump(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	h := newHarness(t, Options{})
	j := h.start(Spec{Cmd: `setsid sleep 30 & echo $!; sleep 0.4`})
	in := h.wait(j)
	killEscapee(t, j)
	if in.State != Done {
		t.Fatalf("state %s", in.State)
	}
	if in.Duration() > 5*time.Second {
		t.Errorf("took %v: the escaped writer held the job", in.Duration())
	}
}

// A stop ends a parked pump while a writer holds the pipe open and
// writes nothing (the escapee drain), whether it comes after the park or
// just before it (between the pump's last look at its stop and its park):
// the stop's deadline is not lost to the park.
func TestStopAroundThePark(t *testing.T) {
	for _, before := range []bool{false, true} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		done := make(chan struct{})
		w.Write([]byte("x"))
		if before {
			stop := func(q *pumper) { q.stop() }
			testBeforePark.Store(&stop)
		}
		p := pump(r, &got, func() { close(done) })
		if !before {
			hivetest.Eventually(t, 5*time.Second, "the pump to park", func() error {
				if p.parked.Load() == 0 {
					return fmt.Errorf("not parked")
				}
				return nil
			})
			p.stop()
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("stop before the park %v: the pump did not finish", before)
		}
		testBeforePark.Store(nil)
		if got.String() != "x" {
			t.Errorf("stop before the park %v: the pump wrote %q, want x", before, got.String())
		}
		r.Close()
		w.Close()
	}
}
