package reliability

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// emfile reports whether s speaks of running out of file descriptors.
func emfile(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "too many open files") || strings.Contains(l, "emfile")
}

// Row 5: many jobs at once, each printing 1 MiB: every exit code and
// byte count is right, no file descriptor runs out anywhere, and the
// daemon settles back to its baseline.
//
// The jobs really run at once: each first waits for a shared lock on a
// file the test holds exclusively (flock), and the test lets go only once
// the daemon runs them all.
func TestRow05ConcurrentJobs(t *testing.T) {
	n := count(100, 1000)
	const size = 1 << 20
	dir := newStateDir(t)
	d := startDaemon(t, dir, "--max-running", fmt.Sprint(n))
	base := d.Settled()

	gate := filepath.Join(dir, "gate")
	unlock := lockGate(t, gate)
	defer unlock()

	// Start them all, from a few sessions at once.
	const sessions = 4
	ids := make([]string, n)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	starters := make([]*hivetest.Session, sessions)
	for w := range sessions {
		s := d.MCP()
		starters[w] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += sessions {
				var st task
				cmd := fmt.Sprintf("flock -s %s true; head -c %d /dev/zero; exit %d", gate, size, i%7)
				text, isErr, err := s.TryCall("run", map[string]any{"cmd": cmd, "wait_seconds": 0}, &st)
				switch {
				case err != nil:
					errs[w] = fmt.Errorf("job %d: %v", i, err)
				case isErr || st.ID == "":
					errs[w] = fmt.Errorf("job %d: %s", i, text)
				}
				if errs[w] != nil {
					return
				}
				ids[i] = st.ID
			}
		}()
	}
	wg.Wait()
	for _, s := range starters {
		s.Close()
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every job is running (waiting at the gate): open the gate.
	var atGate int
	hivetest.Eventually(t, 60*time.Second, "every job to run", func() error {
		st := d.Stats()
		if st.JobsRunning != n {
			return fmt.Errorf("%d of %d jobs running", st.JobsRunning, n)
		}
		atGate = st.FDs
		return nil
	})
	t0 := time.Now()
	unlock()

	s := d.MCP()
	bad := 0
	for i, id := range ids {
		var st task
		s.MustCall("status", map[string]any{"id": id, "wait_seconds": 30}, &st)
		ok := st.Status == "done" && st.ExitCode != nil && *st.ExitCode == i%7 && st.StdoutB == size && st.StderrB == 0 && st.Error == ""
		if emfile(st.Error) {
			t.Errorf("job %d: %s", i, st.Error)
		}
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("job %d: %+v", i, st)
			}
		}
	}
	all := time.Since(t0)
	s.Close()
	end := d.Settled()
	emLog := 0
	for _, l := range strings.Split(d.Log(), "\n") {
		if emfile(l) {
			emLog++
			if emLog <= 3 {
				t.Errorf("daemon log: %s", l)
			}
		}
	}
	figure(t, 5, "%d jobs × 1 MiB at once (--max-running %d): %d wrong exit codes or byte counts, %d EMFILE in results and log; %d fds in the daemon with all at the gate, all done %v after it opened; settled with %d children",
		n, n, bad, emLog, atGate, all.Round(time.Millisecond), end.Children)
	d.CheckBaseline(base)
}
