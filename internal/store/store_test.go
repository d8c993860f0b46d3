package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/paths"
)

func TestMigrationsAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hive.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, _ := s.SchemaVersion(ctx); v != len(migrations) {
		t.Errorf("schema version %d, want %d", v, len(migrations))
	}
	code := 3
	want := Job{ID: "j1", Cmd: "echo", Argv: []string{"echo", "a b"}, State: "done", ExitCode: &code,
		Created: time.UnixMilli(1000), Ended: time.UnixMilli(2000), StdoutBytes: 7}
	if err := s.PutJob(ctx, want); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path) // migrations are not applied twice
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetJob(ctx, "j1")
	if err != nil || got.Cmd != "echo" || len(got.Argv) != 2 || got.Argv[1] != "a b" || *got.ExitCode != 3 || got.StdoutBytes != 7 || !got.Ended.Equal(want.Ended) {
		t.Fatalf("reopened record %+v, %v", got, err)
	}
	if _, err := s.GetJob(ctx, "nope"); !IsNotFound(err) {
		t.Errorf("missing job: %v", err)
	}
}

func TestTodoUpsertSemantics(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	a, changed, _ := s.UpsertTodo(ctx, "bash", "k", "running")
	if !changed {
		t.Error("new todo not reported as changed")
	}
	b, changed, _ := s.UpsertTodo(ctx, "bash", "k", "running")
	if changed || b.ID != a.ID {
		t.Errorf("same summary: changed=%v id %d→%d", changed, a.ID, b.ID)
	}
	c, changed, _ := s.UpsertTodo(ctx, "bash", "k", "done")
	if !changed || c.ID != a.ID {
		t.Errorf("new summary: changed=%v id %d→%d", changed, a.ID, c.ID)
	}
	if n, _ := s.DeleteTodos(ctx, a.ID, 999); n != 1 {
		t.Errorf("deleted %d, want 1", n)
	}
	if _, deleted, _ := s.DeleteTodoKey(ctx, "bash", "k"); deleted {
		t.Error("deleted a todo twice")
	}
}

// The database and SQLite's -wal and -shm are 0600 while in use, also
// when an older hive left a 0644 database behind. The store Open makes
// (exclusive) has no -shm: its index is in memory; one OpenShared makes
// has one.
func TestFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes on Windows")
	}
	for _, shared := range []bool{false, true} {
		for _, old := range []bool{false, true} {
			dir := t.TempDir()
			path := filepath.Join(dir, "hive.db")
			if old {
				os.WriteFile(path, nil, 0o644)
				os.Chmod(path, 0o644)
			}
			open := Open
			if shared {
				open = OpenShared
			}
			for again := range 2 { // a new database, then one in WAL mode already
				s, err := open(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.PutJob(context.Background(), Job{ID: "j1", Cmd: "true", State: "done", Created: time.Now()}); err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					fi, err := os.Stat(p)
					if !shared && strings.HasSuffix(p, "-shm") {
						if !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("old db %v, open %d: exclusive: %s exists (%v), want none", old, again, filepath.Base(p), err)
						}
						continue
					}
					if err != nil || fi.Mode() != 0o600 {
						t.Errorf("old db %v, shared %v, open %d: %s: %v %v, want mode 0600", old, shared, again, filepath.Base(p), fi.Mode(), err)
					}
				}
				s.Close()
			}
		}
	}
}

// The store Open makes is its process's alone: another connection can
// neither read nor write the database while it is open, and can once it
// is closed; one OpenShared makes lets another connection in.
func TestStoreIsExclusive(t *testing.T) {
	for _, shared := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "hive.db")
		open := Open
		if shared {
			open = OpenShared
		}
		s, err := open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PutJob(context.Background(), Job{ID: "j1", Cmd: "true", State: "done", Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = other.QueryRow(`SELECT count(*) FROM jobs`).Scan(&n)
		switch {
		case shared && (err != nil || n != 1):
			t.Errorf("shared: another connection read %d jobs, err %v; want 1", n, err)
		case !shared && err == nil:
			t.Errorf("exclusive: another connection read the database (%d jobs) while the store was open", n)
		}
		s.Close()
		if err := other.QueryRow(`SELECT count(*) FROM jobs`).Scan(&n); err != nil || n != 1 {
			t.Errorf("shared %v: after the store's Close another connection read %d jobs, err %v; want 1", shared, n, err)
		}
		other.Close()
	}
}

// A symlink in place of the database or its companions is refused, and
// the file it points at is not touched.
func TestSymlinkRefused(t *testing.T) {
	for _, name := range []string{"hive.db", "hive.db-wal", "hive.db-shm"} {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "precious")
		os.WriteFile(target, []byte("precious"), 0o644)
		os.Symlink(target, filepath.Join(dir, name))
		s, err := Open(filepath.Join(dir, "hive.db"))
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, paths.ErrInsecure) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s a symlink: Open = %v, want a refusal naming it", name, err)
		}
		if b, _ := os.ReadFile(target); string(b) != "precious" {
			t.Errorf("%s a symlink: its target now holds %q", name, b)
		}
	}
}

// A job's later records update it in place but for its creation time and
// name, which stay those of its first (a job never changes them; leaving
// them out keeps their indexes unwritten): the newest-first order and
// the name's lookup see the first put's.
func TestPutJobKeepsCreatedAndName(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	first := Job{ID: "j1", Name: "build", Cmd: "make", State: "running", Created: time.UnixMilli(1000), Started: time.UnixMilli(1100)}
	if err := s.PutJob(ctx, first); err != nil {
		t.Fatal(err)
	}
	code := 0
	end := first
	end.State, end.ExitCode, end.Ended, end.StdoutBytes = "done", &code, time.UnixMilli(3000), 12
	end.Name, end.Created = "other", time.UnixMilli(5000)
	if err := s.PutJob(ctx, end); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetJob(ctx, "j1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "done" || got.ExitCode == nil || *got.ExitCode != 0 || !got.Ended.Equal(end.Ended) || got.StdoutBytes != 12 {
		t.Errorf("the later record was not written: %+v", got)
	}
	if got.Name != "build" || !got.Created.Equal(first.Created) {
		t.Errorf("name %q, created %v: want the first put's, build and %v", got.Name, got.Created, first.Created)
	}
	if j, err := s.NewestJobNamed(ctx, "build"); err != nil || j.ID != "j1" {
		t.Errorf("NewestJobNamed(build): %+v, %v", j, err)
	}
}
