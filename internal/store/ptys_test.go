package store

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestPTYRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hive.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	code := 129
	open := PTY{ID: "pty_00000001", Name: "sh", Cmd: "bash --norc --noprofile", Cwd: "/tmp", Pid: 42, PidStart: 1 << 40,
		Cols: 120, Rows: 40, State: "open", Started: time.UnixMilli(1000), OutputPath: "/state/pty/pty_00000001.pty"}
	closed := PTY{ID: "pty_00000002", Name: "sh", Cmd: "python3", State: "closed", ExitCode: &code,
		Started: time.UnixMilli(2000), Exited: time.UnixMilli(2500), Ended: time.UnixMilli(3000), Bytes: 1 << 33}
	interrupted := PTY{ID: "pty_00000003", Cmd: "cat", State: "interrupted", Started: time.UnixMilli(1500), Ended: time.UnixMilli(9000)}
	for _, p := range []PTY{open, closed, interrupted} {
		if err := s.PutPTY(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = Open(path); err != nil { // the records survive a reopen
		t.Fatal(err)
	}
	defer s.Close()

	for _, want := range []PTY{open, closed, interrupted} {
		got, err := s.GetPTY(ctx, want.ID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GetPTY(%s) = %+v, %v\nwant %+v", want.ID, got, err, want)
		}
	}
	if _, err := s.GetPTY(ctx, "pty_ffffffff"); !IsNotFound(err) {
		t.Errorf("GetPTY(missing) = %v, want ErrNotFound", err)
	}
	if got, err := s.LastPTYNamed(ctx, "sh"); err != nil || got.ID != closed.ID {
		t.Errorf("LastPTYNamed(sh) = %s, %v; want the newer %s", got.ID, err, closed.ID)
	}
	if _, err := s.LastPTYNamed(ctx, "nope"); !IsNotFound(err) {
		t.Errorf("LastPTYNamed(missing) = %v, want ErrNotFound", err)
	}

	ids := func(ps []PTY) (out []string) {
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	all, err := s.ListPTYs(ctx)
	if got, want := ids(all), []string{closed.ID, interrupted.ID, open.ID}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ListPTYs() = %v, %v; want newest first %v", got, err, want)
	}
	some, err := s.ListPTYs(ctx, "open", "exited")
	if got, want := ids(some), []string{open.ID}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ListPTYs(open, exited) = %v, %v; want %v", got, err, want)
	}

	// Only ended records before the time go, oldest first, limit obeyed;
	// the open one (no end) stays whatever the time.
	gone, err := s.DeletePTYsEndedBefore(ctx, time.UnixMilli(10000), 1)
	if got, want := ids(gone), []string{closed.ID}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DeletePTYsEndedBefore(limit 1) = %v, %v; want %v", got, err, want)
	}
	gone, err = s.DeletePTYsEndedBefore(ctx, time.UnixMilli(9000), 10)
	if err != nil || len(gone) != 0 {
		t.Errorf("DeletePTYsEndedBefore(9000) = %v, %v; want nothing (ended at 9000, not before)", ids(gone), err)
	}
	gone, err = s.DeletePTYsEndedBefore(ctx, time.Now(), 10)
	if got, want := ids(gone), []string{interrupted.ID}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DeletePTYsEndedBefore(now) = %v, %v; want %v", got, err, want)
	}
	if all, _ := s.ListPTYs(ctx); !reflect.DeepEqual(ids(all), []string{open.ID}) {
		t.Errorf("left after the deletes: %v, want only %s", ids(all), open.ID)
	}
}
