//go:build !windows

package service

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/pty"
	"github.com/hivetools/hive/internal/store"
)

// withPTY gives s a PTY engine of its own (a store and a directory in
// temp dirs), closed when the test ends.
func withPTY(t *testing.T, s *Service) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "pty.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s.PTY = pty.NewManager(pty.Options{Dir: t.TempDir(), Store: st})
	t.Cleanup(func() { s.PTY.Close() })
}

// A PTY session through the Service: opened, typed into, read, its
// screen, resized, listed, closed, and read again from its file once it
// has ended; each answer the session's view or its output.
func TestPTYThroughTheService(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if s.HasPTY() {
		t.Fatal("HasPTY without a PTY engine")
	}
	if _, err := s.PTYSession("nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("PTYSession without a PTY engine: %v, want not found", err)
	}
	withPTY(t, s)

	v, err := s.OpenPTY(PTYOpen{Cmd: "cat", Name: "p1", Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.ID, "pty_") || v.Name != "p1" || v.Cols != 80 || !v.Running {
		t.Fatalf("OpenPTY: %+v", v)
	}
	out, err := s.SendPTY(ctx, PTYSend{Session: "p1", Input: "hello", Keys: []string{"Enter"}, WaitFor: regexp.MustCompile(`hello\s+hello`)})
	if err != nil || !out.Matched || out.Busy || !strings.Contains(out.Data, "hello") {
		t.Fatalf("SendPTY waiting for the echo: %+v %v", out, err)
	}
	noWait := time.Duration(0)
	sent, err := s.SendPTY(ctx, PTYSend{Session: v.ID, Input: "x", Wait: &noWait})
	if err != nil || sent.Data != "" || sent.Offset != sent.Next {
		t.Errorf("SendPTY without a wait: %+v %v, want no output", sent, err)
	}
	if _, err := s.SendPTY(ctx, PTYSend{Session: v.ID}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("SendPTY of nothing: %v, want invalid", err)
	}
	r, err := s.ReadPTY("p1", 0, false, 1<<10)
	if err != nil || r.Offset != 0 || !strings.Contains(r.Data, "hello") || r.Ended != nil {
		t.Errorf("ReadPTY: %+v %v", r, err)
	}
	sv, sc, err := s.PTYScreen("p1")
	if err != nil || sv.ID != v.ID || !strings.Contains(sc.Text, "hello") {
		t.Errorf("PTYScreen: %+v %+v %v", sv, sc, err)
	}
	if rv, err := s.ResizePTY("p1", 100, 30); err != nil || rv.Cols != 100 || rv.Rows != 30 {
		t.Errorf("ResizePTY: %+v %v", rv, err)
	}
	if l := s.PTYs(); len(l) != 1 || l[0].ID != v.ID {
		t.Errorf("PTYs: %+v", l)
	}
	if cv, err := s.ClosePTY("p1"); err != nil || cv.ID != v.ID {
		t.Fatalf("ClosePTY: %+v %v", cv, err)
	}
	ended, err := s.ReadPTY(v.ID, 0, false, 1<<10)
	if err != nil || !errors.Is(ended.Ended, ErrPTYEnded) || !strings.Contains(ended.Data, "hello") {
		t.Errorf("ReadPTY of a closed session: %+v %v, want its output from its file and Ended", ended, err)
	}
}
