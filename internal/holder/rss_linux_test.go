package holder_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/proc"
)

// endSink hands on the ends a holder tells until stop is closed.
type endSink struct {
	ends chan wire.JobEnd
	stop chan struct{}
}

func (s endSink) HeldProgress(id string, stdout, stderr wire.Counts) {}
func (s endSink) HeldEnded(e wire.JobEnd) {
	select {
	case s.ends <- e:
	case <-s.stop:
	}
}
func (s endSink) HolderLost() {}

// shortJobs runs `true` jobs on a `hive holder` process, par at a time
// (a daemon's detached jobs: each started without waiting for the last
// to end), each acked once its end is told, as a daemon does. After the
// job counts in at (ascending), once every job so far has ended, it reads
// the holder's RSS (proc.ReadUsage) and returns those figures.
func shortJobs(tb testing.TB, par int, at ...int) []int64 {
	tb.Helper()
	dir := tb.TempDir()
	c, err := holder.Open(holder.ClientOptions{Socket: filepath.Join(dir, "holder.sock"),
		Command: []string{hivetest.Bin(tb).Path, "holder", "--state-dir", dir}, Log: filepath.Join(dir, "holder.log")})
	if err != nil {
		tb.Fatal(err)
	}
	pid := c.Info().Pid
	tb.Cleanup(func() {
		if err := c.Quit(); err != nil {
			// It holds what a failed test left: SIGTERM stops that, and it.
			tb.Errorf("the holder did not quit: %v", err)
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	s := endSink{ends: make(chan wire.JobEnd, par), stop: make(chan struct{})}
	c.Listen(s)
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		tb.Fatal(err)
	}
	spec := func(id string) wire.JobSpec {
		return wire.JobSpec{ID: id, Path: "/bin/true", Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"},
			Stdout: filepath.Join(out, id+".out"), Stderr: filepath.Join(out, id+".err"), Index: filepath.Join(out, id+".idx")}
	}
	slots := make(chan struct{}, par) // one a job running
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // acks each end and frees its slot
		for {
			var e wire.JobEnd
			select {
			case e = <-s.ends:
			case <-s.stop:
				return
			}
			if !e.Exited || e.ExitCode != 0 {
				tb.Errorf("job %s ended %+v, want exit 0", e.ID, e)
			}
			if err := c.Ack(e.ID); err != nil {
				tb.Errorf("ack %s: %v", e.ID, err)
			}
			sp := spec(e.ID)
			for _, p := range []string{sp.Stdout, sp.Stderr, sp.Index} {
				os.Remove(p)
			}
			<-slots
		}
	})
	defer close(s.stop) // before wg.Wait: the acker returns
	var rss []int64
	for i := 1; len(rss) < len(at); i++ {
		slots <- struct{}{}
		id := fmt.Sprintf("j%d", i)
		if _, err := c.Spawn(spec(id)); err != nil {
			tb.Fatalf("spawn %s: %v", id, err)
		}
		if i != at[len(rss)] {
			continue
		}
		for range par { // every job so far has ended
			slots <- struct{}{}
		}
		u, ok := proc.ReadUsage(pid)
		if !ok {
			tb.Fatalf("read the holder's usage (pid %d)", pid)
		}
		rss = append(rss, u.RSS)
		for range par {
			<-slots
		}
	}
	return rss
}

// The holder's RSS stays flat over many short jobs: after 20 000 it is
// within 32 MiB of what it was after 1 000 (BenchmarkHolderRSS reports
// the figure; the target is 10 MiB). Before the fix the output pumps'
// 256 KiB buffers of the jobs running at once, kept in their pool, and
// the heap the collector lets grow on top of them grew it by 60-100 MiB.
func TestHolderRSSFlat(t *testing.T) {
	if testing.Short() || race {
		t.Skip("20 000 jobs, 1-2 minutes on 2 loaded cores: not with -short or -race (BenchmarkHolderRSS runs them too)")
	}
	r := shortJobs(t, 32, 1000, 20000)
	t.Logf("holder RSS after 1k and 20k jobs: %.1f and %.1f MiB", mib(r[0]), mib(r[1]))
	if d := r[1] - r[0]; d > 32<<20 {
		t.Errorf("the holder's RSS grew by %.1f MiB from 1 000 to 20 000 short jobs (%.1f to %.1f MiB), want at most 32", mib(d), mib(r[0]), mib(r[1]))
	}
}

// BenchmarkHolderRSS runs 20 000 short `true` jobs on a holder, 32 at a
// time, and reports its RSS after 1 000 and after 20 000 jobs, and the
// growth between them (growth-MiB, target at most 10). One iteration
// takes a minute or more: -benchtime=1x.
func BenchmarkHolderRSS(b *testing.B) {
	var r1k, r20k int64
	for range b.N {
		r := shortJobs(b, 32, 1000, 5000, 10000, 20000)
		b.Logf("holder RSS after 1k, 5k, 10k, 20k jobs: %.1f %.1f %.1f %.1f MiB", mib(r[0]), mib(r[1]), mib(r[2]), mib(r[3]))
		r1k += r[0]
		r20k += r[3]
	}
	n := float64(b.N)
	b.ReportMetric(mib(r1k)/n, "rss-1k-MiB")
	b.ReportMetric(mib(r20k)/n, "rss-20k-MiB")
	b.ReportMetric(mib(r20k-r1k)/n, "growth-MiB")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
