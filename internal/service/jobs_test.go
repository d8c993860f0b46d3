package service

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/view"
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
	if err != nil || re.ID == v.ID || re.Cmd != v.Cmd || re.Source != "dashboard" || re.Name != "svc" {
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

// Job lists, waits and ends through the Service: each job in its view,
// a live job only while this daemon holds it.
func TestJobListsThroughTheService(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	a, err := s.RunJob(JobSpec{Cmd: "echo hi", Name: "a", Source: "run"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RunJob(JobSpec{Cmd: "sleep 60", Name: "b", Source: "cli", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := s.WaitJob(ctx, "a", time.Minute)
	if err != nil || ended.ID != a.ID || ended.State != "done" || !JobEnded(ended) || ended.StdoutBytes != 3 {
		t.Fatalf("WaitJob of a job that ends: %+v %v", ended, err)
	}
	if running, err := s.WaitJob(ctx, "b", 0); err != nil || running.State != "running" || JobEnded(running) {
		t.Errorf("WaitJob of a running job, no wait: %+v %v", running, err)
	}
	if _, err := s.WaitJob(ctx, "nosuchjob", time.Second); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("WaitJob of an unknown job: %v, want ErrJobNotFound", err)
	}

	ids := func(vs []view.Job) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	if l, err := s.ListJobs(ctx, 0, "", "running"); err != nil || !slices.Equal(ids(l), []string{b.ID}) {
		t.Errorf("ListJobs of the running: %v %v, want [%s]", ids(l), err, b.ID)
	}
	if l, err := s.ListJobs(ctx, 0, "a"); err != nil || !slices.Equal(ids(l), []string{a.ID}) {
		t.Errorf("ListJobs named a: %v %v, want [%s]", ids(l), err, a.ID)
	}
	if _, err := s.ListJobs(ctx, 0, "", "asleep"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("ListJobs of a state that is none: %v, want invalid", err)
	}
	if l, err := s.JobPage(ctx, JobQuery{Text: "SLEEP", Limit: 10}); err != nil || !slices.Equal(ids(l), []string{b.ID}) {
		t.Errorf("JobPage of the text SLEEP: %v %v, want [%s]", ids(l), err, b.ID)
	}
	if l, err := s.JobPage(ctx, JobQuery{Limit: 1}); err != nil || !slices.Equal(ids(l), []string{b.ID}) {
		t.Errorf("JobPage of 1: %v %v, want the newest, [%s]", ids(l), err, b.ID)
	}
	recent := ids(s.RecentJobs())
	if !slices.Contains(recent, a.ID) || !slices.Contains(recent, b.ID) {
		t.Errorf("RecentJobs: %v, want %s and %s", recent, a.ID, b.ID)
	}

	v, summary, ok := s.JobEnd(ctx, "a")
	if !ok || v.ID != a.ID || !strings.HasPrefix(summary, "task "+a.ID+" (a) done, exit 0") {
		t.Errorf("JobEnd of an ended job: %+v %q %v", v, summary, ok)
	}
	if _, _, ok := s.JobEnd(ctx, "b"); ok {
		t.Error("JobEnd of a running job: ok")
	}

	live, err := s.LiveJob(b.ID)
	if err != nil || live.ID() != b.ID {
		t.Fatalf("LiveJob of a running job: %v", err)
	}
	// Its streams exist once it has started (running comes a moment
	// before: the files are made off the start's path).
	<-live.Started()
	if live.Stdout() == nil {
		t.Fatal("LiveJob of a started job: no stdout stream")
	}
	if _, err := s.KillJob(b.ID, true); err != nil {
		t.Fatal(err)
	}
	if !live.Wait(ctx) {
		t.Fatal("Wait of a killed job: not ended")
	}
	if err := live.Detach(); !errors.Is(err, ErrJobEnded) {
		t.Errorf("Detach of an ended job: %v, want ErrJobEnded", err)
	}
	if k, err := s.Recorded(live); err != nil || k.State != "killed" {
		t.Errorf("Recorded of the killed job: %+v %v", k, err)
	}
}

// JobPage's Status keeps the jobs by what their end means: "error" finds
// every job that did not succeed (an error exit, a stop, a command that
// could not start), "ok" the ones that did (grep's exit 1 too), a page
// at a time.
func TestJobPageStatus(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	run := func(spec JobSpec) string {
		t.Helper()
		v, err := s.RunJob(spec)
		if err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	end := func(id string) {
		t.Helper()
		if v, err := s.WaitJob(ctx, id, time.Minute); err != nil || !JobEnded(v) {
			t.Fatalf("job %s did not end: %+v %v", id, v, err)
		}
	}
	exit3 := run(JobSpec{Cmd: "exit 3"})
	end(exit3)
	noMatch := run(JobSpec{Cmd: "grep -q needle /dev/null"})
	end(noMatch)
	cantStart := run(JobSpec{Cmd: "true", Dir: filepath.Join(t.TempDir(), "gone")})
	end(cantStart)
	var oks []string
	for range 5 {
		id := run(JobSpec{Cmd: "true"})
		end(id)
		oks = append([]string{id}, oks...)
	}
	stopped := run(JobSpec{Cmd: "sleep 60"})
	if _, err := s.KillJob(stopped, true); err != nil {
		t.Fatal(err)
	}
	end(stopped)
	running := run(JobSpec{Cmd: "sleep 60", Quiet: true})
	t.Cleanup(func() { s.KillJob(running, true); s.WaitJob(ctx, running, time.Minute) })

	ids := func(vs []view.Job) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q    JobQuery
		want []string
	}{
		{JobQuery{Status: "error"}, []string{stopped, cantStart, exit3}},
		{JobQuery{Status: "ok"}, append(oks, noMatch)},
		{JobQuery{Status: "error", States: []string{"done"}}, []string{exit3}},
		{JobQuery{Status: "ok", States: []string{"failed", "killed"}}, []string{}},
		{JobQuery{Status: "error", Text: "sleep"}, []string{stopped}},
	} {
		if l, err := s.JobPage(ctx, tc.q); err != nil || !slices.Equal(ids(l), tc.want) {
			t.Errorf("JobPage %+v: %v %v, want %v", tc.q, ids(l), err, tc.want)
		}
	}
	// Pages of one walk the jobs that did not succeed past the ones that did.
	var walked []string
	q := JobQuery{Status: "error", Limit: 1}
	for range 5 {
		l, err := s.JobPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 0 {
			break
		}
		walked = append(walked, l[0].ID)
		q.BeforeCreated, q.BeforeID = l[0].Created, l[0].ID
	}
	if want := []string{stopped, cantStart, exit3}; !slices.Equal(walked, want) {
		t.Errorf("pages of 1 of status error: %v, want %v", walked, want)
	}
	if _, err := s.JobPage(ctx, JobQuery{Status: "failed"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("JobPage of a status that is none: %v, want invalid", err)
	}
}

// Run again keeps the name: refused, saying so, while the job (or a
// newer one of its name) runs.
func TestRerunKeepsName(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	first, err := s.RunJob(JobSpec{Cmd: "sleep 60", Name: "sleeper", Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RerunJob(ctx, "sleeper", "dashboard"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "is still running") {
		t.Errorf("RerunJob of a running named job: %v, want a conflict saying it is still running", err)
	}
	s.KillJob(first.ID, true)
	if v, err := s.WaitJob(ctx, first.ID, time.Minute); err != nil || !JobEnded(v) {
		t.Fatalf("the first job did not end: %+v %v", v, err)
	}
	again, err := s.RerunJob(ctx, first.ID, "dashboard")
	if err != nil || again.Name != "sleeper" || again.ID == first.ID {
		t.Fatalf("RerunJob of the ended job: %+v %v, want a new job named sleeper", again, err)
	}
	t.Cleanup(func() { s.KillJob(again.ID, true); s.WaitJob(ctx, again.ID, time.Minute) })
	if _, err := s.RerunJob(ctx, first.ID, "dashboard"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "a newer job of that name is running") {
		t.Errorf("RerunJob while a newer job has the name: %v, want a conflict saying so", err)
	}
}
