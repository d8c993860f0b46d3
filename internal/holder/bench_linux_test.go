package holder_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/store"
)

// manager is a job manager on a fresh store, its jobs run by a `hive
// holder` process (held) or by the manager itself.
func manager(b *testing.B, held bool) *job.Manager {
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "hive.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	o := job.Options{Dir: filepath.Join(dir, "out"), Store: st}
	if held {
		c, err := holder.Open(holder.ClientOptions{Socket: filepath.Join(dir, "holder.sock"),
			Command: []string{hivetest.Bin(b).Path, "holder", "--state-dir", dir}, Log: filepath.Join(dir, "holder.log")})
		if err != nil {
			b.Fatal(err)
		}
		o.Holder = c
		// Quit once the manager is closed (cleanups run last first):
		// the holder exits, holding nothing.
		b.Cleanup(func() {
			if err := c.Quit(); err != nil {
				b.Errorf("the holder did not quit: %v", err)
			}
		})
	}
	m, err := job.New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// BenchmarkEngine is what the holder of the jobs adds to a job's round
// trip in the engine alone (no MCP, no daemon): per iteration a `bash -c
// true` job started and waited for on a manager whose holder runs it,
// the same on a manager that runs it itself, and `bash -c true` spawned
// directly, the order of the two managers alternating. held-over-ns/op
// and own-over-ns/op are each one's time beyond the direct spawn.
func BenchmarkEngine(b *testing.B) {
	ms := [2]*job.Manager{manager(b, true), manager(b, false)}
	var d [2]time.Duration
	var base time.Duration
	spec := job.Spec{Cmd: "true", Attached: true}
	for _, m := range ms { // warm both up
		j, err := m.Start(spec)
		if err != nil {
			b.Fatal(err)
		}
		j.Wait(context.Background())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			kk := (k + i) % 2
			t0 := time.Now()
			j, err := ms[kk].Start(spec)
			if err != nil {
				b.Fatal(err)
			}
			if in, _ := j.Wait(context.Background()); in.State != job.Done {
				b.Fatalf("state %s %s", in.State, in.Error)
			}
			if _, err := ms[kk].Durable(j); err != nil {
				b.Fatal(err)
			}
			d[kk] += time.Since(t0)
		}
		t0 := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		base += time.Since(t0)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(d[0])/n, "held-ns/op")
	b.ReportMetric(float64(d[1])/n, "own-ns/op")
	b.ReportMetric(float64(base)/n, "bash-ns/op")
	b.ReportMetric(float64(d[0]-base)/n, "held-over-ns/op")
	b.ReportMetric(float64(d[1]-base)/n, "own-over-ns/op")
	b.ReportMetric(float64(d[0])/float64(d[1]), "held/own")
}

// BenchmarkHop is one request to the holder and its answer (held, with
// nothing held): the floor of every call to it.
func BenchmarkHop(b *testing.B) {
	dir := b.TempDir()
	c, err := holder.Open(holder.ClientOptions{Socket: filepath.Join(dir, "holder.sock"),
		Command: []string{hivetest.Bin(b).Path, "holder", "--state-dir", dir}, Log: filepath.Join(dir, "holder.log")})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Quit()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Held(); err != nil {
			b.Fatal(err)
		}
	}
}
