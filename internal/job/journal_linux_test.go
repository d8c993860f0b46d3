package job_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/store"
)

// exitedAtFork has every kept job's leader exit before its fork is
// looked at (it often has on few processors), until restore.
func exitedAtFork() (restore func()) {
	return job.SetBeforeKeep(func(pid int) {
		var si unix.Siginfo
		unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil)
	})
}

// noRoom has the store of dir refuse every new job record, as a full
// disk does, until roomAgain.
func noRoom(t *testing.T, dir string) (roomAgain func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "hive.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TRIGGER no_room BEFORE INSERT ON jobs BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := db.Exec(`DROP TRIGGER no_room`); err != nil {
			t.Fatal(err)
		}
	}
}

// journalRecord is the record of id the journal at path holds (ok false:
// none).
func journalRecord(t *testing.T, path, id string) (store.Job, bool) {
	t.Helper()
	recs, err := job.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r, true
		}
	}
	return store.Job{}, false
}

// toldFromJournal waits for j's end, checks that its caller is told it
// (Durable: done, exit code) while the store refuses writes, and that
// the journal at path holds its record (done, exit code, out bytes of
// stdout); it returns j's id.
func toldFromJournal(t *testing.T, m *job.Manager, j *job.Job, path string, code int, out int64) string {
	t.Helper()
	id := j.ID()
	j.Wait(context.Background())
	told, err := m.Durable(j)
	if err != nil || told.State != job.Done || told.ExitCode == nil || *told.ExitCode != code {
		t.Fatalf("told: %+v %v, want done with exit %d while the store refuses writes", told, err, code)
	}
	if rec, ok := journalRecord(t, path, id); !ok || rec.State != string(job.Done) || rec.ExitCode == nil || *rec.ExitCode != code || rec.StdoutBytes != out {
		t.Fatalf("the journal holds %+v (%v) of %s once told, want done, exit %d, %d bytes out", rec, ok, id, code, out)
	}
	return id
}

// A job kept at its end by a manager with a journal (the daemon's way) is
// told to its caller once its record is in the journal, before anything
// of it is committed and before the holder hears of it; the holder gets
// its keep and end after that, as without a journal. Should daemon and
// holder both die before the commit, the next daemon (no holder now)
// finds the record in the journal and puts it in the store, as told;
// once it is committed the journal is emptied of it.
func TestJournaledEnd(t *testing.T) {
	var journal string
	dir, _, st, m1, c1 := keepingSetup(t, func(o *job.Options) {
		journal = filepath.Join(filepath.Dir(o.Dir), "jobs-journal")
		o.Journal = journal
	})
	ctx := context.Background()
	defer c1.Close()
	defer m1.Close(ctx)
	tasks := filepath.Join(dir, "tasks")
	defer job.SetKeepLater(time.Minute)()
	defer exitedAtFork()()
	roomAgain := noRoom(t, dir)
	j, err := m1.Start(job.Spec{Cmd: "echo ended; exit 3", Attached: true})
	if err != nil {
		t.Fatal(err)
	}
	id := toldFromJournal(t, m1, j, journal, 3, 6)
	if rec, err := st.GetJob(ctx, id); err == nil {
		t.Fatalf("recorded while the store refuses writes: %+v", rec)
	}
	hivetest.Eventually(t, 10*time.Second, "the holder told of the job, after its caller", func() error {
		held, err := c1.Held()
		if err != nil {
			return err
		}
		for _, h := range held {
			if h.ID == id && h.End != nil && h.End.ExitCode == 3 && len(h.Record) > 0 {
				return nil
			}
		}
		return fmt.Errorf("held %+v", held)
	})

	// Daemon and holder die (this manager's close leaves the journal as
	// a kill would: the store takes nothing). The next daemon has no
	// holder that knows the job: only the journal.
	m1.Close(ctx)
	c1.Close()
	m2, err := job.New(job.Options{Dir: tasks, Store: st, Owner: dir, Grace: time.Second, Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close(ctx)
	if _, ok := journalRecord(t, journal, id); !ok {
		t.Fatal("the journal lost the record while the store refuses writes")
	}
	roomAgain()
	hivetest.Eventually(t, 10*time.Second, "recorded as told, and out of the journal", func() error {
		rec, err := st.GetJob(ctx, id)
		if err != nil || rec.State != string(job.Done) || rec.ExitCode == nil || *rec.ExitCode != 3 || rec.StdoutBytes != 6 {
			return fmt.Errorf("record %+v %v", rec, err)
		}
		if rec, ok := journalRecord(t, journal, id); ok {
			return fmt.Errorf("still in the journal: %+v", rec)
		}
		return nil
	})
	if in, err := m2.Lookup(ctx, id); err != nil || in.State != job.Done || in.Cmd != "echo ended; exit 3" {
		t.Errorf("the next daemon's lookup: %+v %v", in, err)
	}
}

// At New, a journal's record is put in the store when the store lacks
// the job or has it running (the last daemon died between the job's
// commits: it is not taken for interrupted), never over an end the store
// has; lines that are not the record of an ended job are skipped. The
// journal is empty after.
func TestJournalReplay(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	at := time.UnixMilli(time.Now().UnixMilli()).UTC()
	code := func(n int) *int { return &n }
	running := store.Job{ID: "0000aaa1", Cmd: "sleep 1", State: string(job.Running), Created: at, Started: at, Pid: 1 << 22}
	ended := store.Job{ID: "0000aaa2", Cmd: "true", State: string(job.Done), ExitCode: code(0), Created: at, Ended: at}
	for _, r := range []store.Job{running, ended} {
		if err := st.PutJob(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	j1, j2, j3 := running, ended, store.Job{ID: "0000aaa3", Cmd: "echo x", State: string(job.Failed), Error: "x", ExitCode: code(1), Created: at, Ended: at.Add(time.Second)}
	j1.State, j1.ExitCode, j1.Ended = string(job.Done), code(5), at.Add(time.Second)
	j2.ExitCode = code(9) // an end the store has: not this one
	notEnded := store.Job{ID: "0000aaa4", State: string(job.Running)}
	journal := filepath.Join(dir, "jobs-journal")
	if ok, err := job.WriteJournal(journal, j1, j2, j3, notEnded); !ok || err != nil {
		t.Fatalf("write the journal: %v %v", ok, err)
	}
	m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Owner: dir, Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	for _, want := range []store.Job{j1, ended, j3} {
		rec, err := st.GetJob(ctx, want.ID)
		if err != nil || rec.State != want.State || rec.ExitCode == nil || *rec.ExitCode != *want.ExitCode || !rec.Ended.Equal(want.Ended) || rec.Error != want.Error {
			t.Errorf("%s: %+v %v, want %s exit %d", want.ID, rec, err, want.State, *want.ExitCode)
		}
	}
	if rec, err := st.GetJob(ctx, notEnded.ID); !store.IsNotFound(err) {
		t.Errorf("a journal line that is not an ended job's record was put: %+v %v", rec, err)
	}
	if recs, err := job.ReadJournal(journal); err != nil || len(recs) != 0 {
		t.Errorf("the journal after New: %d records (%v)", len(recs), err)
	}
}

// A job the holder starts itself (here: one with limits), waited for
// inline, is told to its caller once its record is in the journal too,
// not once its running record is committed: while the store takes no
// writes its caller is answered, and the next daemon records it from
// the journal.
func TestJournaledHeldEnd(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	journal := filepath.Join(dir, "jobs-journal")
	m1, c1 := heldManager(t, dir, sock, st, time.Second, func(o *job.Options) { o.Journal = journal })
	ctx := context.Background()
	defer c1.Close()
	defer m1.Close(ctx)
	roomAgain := noRoom(t, dir)
	j, err := m1.Start(job.Spec{Cmd: "echo held; exit 4", Attached: true, Limits: limits.Limits{Nofile: 512}})
	if err != nil {
		t.Fatal(err)
	}
	id := toldFromJournal(t, m1, j, journal, 4, 5)
	m1.Close(ctx)
	c1.Close()
	m2, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Owner: dir, Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close(ctx)
	roomAgain()
	hivetest.Eventually(t, 10*time.Second, "recorded as told", func() error {
		rec, err := st.GetJob(ctx, id)
		if err != nil || rec.State != string(job.Done) || rec.ExitCode == nil || *rec.ExitCode != 4 {
			return fmt.Errorf("record %+v %v", rec, err)
		}
		return nil
	})
}
