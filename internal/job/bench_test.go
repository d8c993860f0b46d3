package job

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/store"
)

// BenchmarkStartWait measures a `bash -c true` job from Start to its end
// against spawning the same command directly, in one run: the ratio is
// the engine's overhead.
func BenchmarkStartWait(b *testing.B) {
	benchStartWait(b, Spec{Cmd: "true", Attached: true}, "bash", "-c", "true")
}

// BenchmarkStartWaitDirect is the same for a direct exec of `true` (no
// shell), against exec.Command("true").Run().
func BenchmarkStartWaitDirect(b *testing.B) {
	benchStartWait(b, Spec{Argv: []string{"true"}, Attached: true}, "true")
}

func benchStartWait(b *testing.B, spec Spec, baseline ...string) {
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "hive.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	m, err := New(Options{Dir: filepath.Join(dir, "out"), Store: st})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	var engine, direct time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		j, err := m.Start(spec)
		if err != nil {
			b.Fatal(err)
		}
		if in, _ := j.Wait(context.Background()); in.State != Done {
			b.Fatalf("state %s", in.State)
		}
		t1 := time.Now()
		if err := exec.Command(baseline[0], baseline[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		engine += t1.Sub(t0)
		direct += time.Since(t1)
	}
	b.ReportMetric(float64(engine.Nanoseconds())/float64(b.N), "engine-ns/op")
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/op")
	b.ReportMetric(float64(engine)/float64(direct), "ratio")
}
