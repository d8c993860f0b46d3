package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// newService runs the real engines on a store in a temp dir, with the
// loose-end policy wired as the daemon wires it.
func newService(t *testing.T) *Service {
	t.Helper()
	l := paths.Layout{Dir: t.TempDir()}
	if err := l.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ib, err := inbox.New(inbox.Options{Store: st, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ib.Close() })
	jobs, err := job.New(job.Options{Dir: l.Tasks(), Store: st, Todo: JobTodo,
		OnCommit: func(changed []store.Todo, of []job.Info) {
			for i, td := range changed {
				ib.Published(td, JobNews(of[i]))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jobs.Close(context.Background()) })
	return New(Service{Jobs: jobs, Inbox: ib, Layout: l})
}

func todoOf(t *testing.T, s *Service, id string) (store.Todo, bool) {
	t.Helper()
	todos, err := s.Inbox.Todos(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range todos {
		if td.Subsystem == TodoSubsystem && td.Key == id {
			return td, true
		}
	}
	return store.Todo{}, false
}

// A background job's loose end: raised with its record, worded by its
// end, cleared by removing the job; kill, rerun and lookups answer the
// one view.
func TestJobLifeThroughTheService(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	v, err := s.RunJob(JobSpec{Cmd: "echo hi; exit 1", Name: "svc", Source: "run"})
	if err != nil {
		t.Fatal(err)
	}
	if v.ID == "" || v.Name != "svc" || v.State == "" || v.Source != "run" {
		t.Fatalf("RunJob: %+v", v)
	}
	busy, err := s.RunJob(JobSpec{Cmd: "sleep 60", Name: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunJob(JobSpec{Cmd: "true", Name: "busy"}); !errors.Is(err, job.ErrNameBusy) || !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a second job named busy while it runs: %v, want a conflict", err)
	}
	if k, err := s.KillJob("busy", true); err != nil || k.ID != busy.ID {
		t.Errorf("KillJob of a running job: %+v %v", k, err)
	}
	j, err := s.LiveJob(v.ID)
	if err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	if _, err := s.Recorded(j); err != nil {
		t.Fatal(err)
	}
	ended, err := s.Job(ctx, v.ID)
	if err != nil || ended.State != "done" || ended.ExitCode == nil || *ended.ExitCode != 1 ||
		ended.SemanticStatus != "error" || ended.StdoutBytes != 3 {
		t.Fatalf("Job after the end: %+v %v", ended, err)
	}
	td, ok := todoOf(t, s, v.ID)
	if !ok || !strings.Contains(td.Summary, "task "+v.ID+" (svc) done, exit 1 (error: General error)") {
		t.Fatalf("the loose end of the ended job: %+v %v", td, ok)
	}

	k, err := s.KillJob("svc", false)
	if !errors.Is(err, job.ErrEnded) || !errors.Is(err, errdefs.ErrConflict) || k.ID != v.ID || k.State != "done" {
		t.Errorf("KillJob of an ended job: %+v %v, want its view and ErrEnded", k, err)
	}
	re, err := s.RerunJob(ctx, v.ID, "dashboard")
	if err != nil || re.ID == v.ID || re.Cmd != v.Cmd || re.Source != "dashboard" {
		t.Errorf("RerunJob: %+v %v", re, err)
	}

	gone, err := s.RemoveJob(ctx, v.ID)
	if err != nil || gone.ID != v.ID {
		t.Fatalf("RemoveJob: %+v %v", gone, err)
	}
	if _, ok := todoOf(t, s, v.ID); ok {
		t.Error("the removed job's loose end is still there")
	}
	if _, err := s.Job(ctx, v.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Job of a removed job: %v, want not found", err)
	}
	if _, err := s.KillJob("nosuchjob", false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("KillJob of an unknown job: %v, want not found", err)
	}
	if _, err := s.RunJob(JobSpec{Cmd: "true", Name: "Bad"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("RunJob with a bad name: %v, want invalid", err)
	}
	rj, err := s.LiveJob(re.ID)
	if err != nil {
		t.Fatal(err)
	}
	<-rj.Done()
	s.Recorded(rj)
}
