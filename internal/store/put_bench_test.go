package store

import (
	"context"
	"database/sql"
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
		putLife(b, s, i)
	}
	b.StopTimer()
	b.ReportMetric(float64(wal()-w0)/4120/float64(b.N), "frames/job")
}

// BenchmarkPutJobTodo puts a detached job's record with its loose end (a
// todo) in one commit, as the daemon does for each record of a `run`
// job: PutJobs, whose todo statements are prepared once at the Open,
// against the same transaction with the todo's statements prepared at
// each use (as before), interleaved. Metrics: put-us, unprepared-us (the
// means) and ratio (put / unprepared).
func BenchmarkPutJobTodo(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "hive.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	job := func(i int) Job {
		now := time.Now()
		return Job{ID: fmt.Sprintf("%08x", uint32(i)*2654435761), Cmd: "sleep 1", State: "running", Created: now, Started: now, StdoutPath: "/x/a.out"}
	}
	todo := func(i int) Todo {
		return Todo{Subsystem: "job", Key: fmt.Sprintf("%08x", uint32(i)*2654435761), Summary: "job running: sleep 1"}
	}
	unprepared := func(j Job, t Todo) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := s.execPut(ctx, tx.StmtContext(ctx, s.putJob), j); err != nil {
			return err
		}
		var id, created int64
		var old string
		err = tx.QueryRowContext(ctx, `SELECT id, summary, created_at FROM todos WHERE subsystem = ? AND key = ?`, t.Subsystem, t.Key).Scan(&id, &old, &created)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		now := time.Now().UnixMilli()
		if err == sql.ErrNoRows {
			_, err = tx.ExecContext(ctx, `INSERT INTO todos (subsystem, key, summary, created_at, updated_at, news) VALUES (?,?,?,?,?,?)`, t.Subsystem, t.Key, t.Summary, now, now, false)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE todos SET summary = ?, updated_at = ?, news = (news OR ?) WHERE id = ?`, t.Summary, now, false, id)
		}
		if err != nil {
			return err
		}
		return tx.Commit()
	}
	var put, unp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := 2 * i
		t0 := time.Now()
		if _, err := s.PutJobs(ctx, []Job{job(k)}, []Todo{todo(k)}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := unprepared(job(k+1), todo(k+1)); err != nil {
			b.Fatal(err)
		}
		put, unp = put+t1.Sub(t0), unp+time.Since(t1)
	}
	b.ReportMetric(float64(put.Microseconds())/float64(b.N), "put-us")
	b.ReportMetric(float64(unp.Microseconds())/float64(b.N), "unprepared-us")
	b.ReportMetric(float64(put)/float64(unp), "ratio")
}

// BenchmarkExclusiveStore puts a short job's two records (running, then
// ended; each its own commit) in a store Open made (exclusive locking:
// the WAL index in this process's memory) and in one OpenShared made
// (SQLite's normal locking, the index in a shared -shm file), taking
// turns, each on a database of its own with some history. Metrics:
// exclusive-us, shared-us (the means) and ratio (exclusive / shared).
func BenchmarkExclusiveStore(b *testing.B) {
	ctx := context.Background()
	var stores [2]*Store
	for k, open := range []func(string) (*Store, error){Open, OpenShared} {
		s, err := open(filepath.Join(b.TempDir(), "hive.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for i := range 2000 {
			j := Job{ID: fmt.Sprintf("%08x", i*7919+1), Cmd: "true", State: "done", Created: time.Now(), Started: time.Now(), Ended: time.Now(), StdoutPath: "/x/y.out"}
			if err := s.PutJob(ctx, j); err != nil {
				b.Fatal(err)
			}
		}
		stores[k] = s
	}
	var took [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for n := range 2 {
			k := (i + n) % 2
			t0 := time.Now()
			putLife(b, stores[k], i)
			took[k] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "exclusive-us")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "shared-us")
	b.ReportMetric(float64(took[0])/float64(took[1]), "ratio")
}

// putLife puts the i-th short job's running record, then its end: two
// commits, as the daemon makes for a short job.
func putLife(b *testing.B, s *Store, i int) {
	ctx := context.Background()
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
