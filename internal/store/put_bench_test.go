package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPutJobLife puts a job's running record and then its end, each
// its own commit, as the daemon does for a short job; it reports the WAL
// frames written per job.
func BenchmarkPutJobLife(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "hive.db")
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// some history, as a daemon has
	for i := 0; i < 2000; i++ {
		j := Job{ID: fmt.Sprintf("%08x", i*7919+1), Cmd: "true", State: "done", Created: time.Now(), Started: time.Now(), Ended: time.Now(), StdoutPath: "/x/y.out"}
		if err := s.PutJob(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	wal := func() int64 { st, _ := os.Stat(path + "-wal"); return st.Size() }
	if _, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	s.db.Exec(`PRAGMA wal_autocheckpoint=1000000`)
	w0 := wal()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now := time.Now()
		j := Job{ID: fmt.Sprintf("%08x", uint32(i)*2654435761), Cmd: "true", Argv: []string{"true"}, ShellKind: "direct", Cwd: "/tmp", Source: "terminal",
			State: "running", Created: now, Started: now, Pid: 1234, PidStart: 5678, StdoutPath: "/x/a.out", StderrPath: "/x/a.err"}
		if err := s.PutJob(ctx, j); err != nil {
			b.Fatal(err)
		}
		j.State, j.Ended = "done", time.Now()
		code := 0
		j.ExitCode = &code
		if err := s.PutJob(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(wal()-w0)/4120/float64(b.N), "frames/job")
}
