package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// putEnded records n ended jobs, one a millisecond apart; job i has
// command "echo i" (and "%_" in every tenth, to test the escaping).
func putEnded(tb testing.TB, s *Store, n int) {
	tb.Helper()
	jobs := make([]Job, n)
	for i := range jobs {
		cmd := fmt.Sprintf("echo %d", i)
		if i%10 == 0 {
			cmd += " 100%_done"
		}
		jobs[i] = Job{ID: fmt.Sprintf("j%05d", i), Cmd: cmd, State: "done", Created: time.UnixMilli(int64(1e6 + i))}
	}
	for len(jobs) > 0 {
		k := min(len(jobs), 500)
		if _, err := s.PutJobs(context.Background(), jobs[:k], nil); err != nil {
			tb.Fatal(err)
		}
		jobs = jobs[k:]
	}
}

func TestListJobsPage(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	putEnded(t, s, 25)
	if err := s.PutJob(ctx, Job{ID: "live", Cmd: "sleep 9", State: "running", Created: time.UnixMilli(1e6 + 12)}); err != nil {
		t.Fatal(err)
	}
	// Pages of 10 walk every record once, newest first, whatever their
	// creation times share.
	var seen []string
	q := JobQuery{Limit: 10}
	for range 5 {
		page, err := s.ListJobsPage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			seen = append(seen, j.ID)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.BeforeCreated, q.BeforeID = last.Created, last.ID
	}
	if len(seen) != 26 || seen[0] != "j00024" || seen[25] != "j00000" {
		t.Fatalf("pages gave %d records %v", len(seen), seen)
	}
	for i, tc := range []struct {
		q    JobQuery
		want int
	}{
		{JobQuery{States: []string{"running"}}, 1},
		{JobQuery{States: []string{"running", "done"}}, 26},
		{JobQuery{Text: "SLEEP"}, 1},
		{JobQuery{Text: "%_"}, 3}, // escaped: only the commands with "%_"
		{JobQuery{Text: "j0002"}, 5},
		{JobQuery{Text: "echo 2", Limit: 2}, 2},
	} {
		page, err := s.ListJobsPage(ctx, tc.q)
		if err != nil || len(page) != tc.want {
			t.Errorf("%d: %+v: %d records (want %d), %v", i, tc.q, len(page), tc.want, err)
		}
	}
}

// BenchmarkJobsPage compares one page of 50 of 10 000 ended jobs (what
// the dashboard asks) with the whole list (what it would cost without
// paging); the ratio is reported as page/all.
func BenchmarkJobsPage(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "hive.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	putEnded(b, s, 10000)
	ctx := context.Background()
	run := func(f func()) time.Duration {
		t0 := time.Now()
		for range 3 {
			f()
		}
		return time.Since(t0)
	}
	var page, all time.Duration
	for b.Loop() {
		page += run(func() {
			s.ListJobsPage(ctx, JobQuery{Limit: 50, BeforeCreated: time.UnixMilli(1e6 + 5000), BeforeID: "j05000"})
		})
		all += run(func() { s.ListJobs(ctx, 0) })
	}
	b.ReportMetric(float64(page)/float64(all), "page/all")
}

// NotZero keeps the jobs that may not have succeeded; Name one name.
func TestListJobsPageNotZero(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	zero, one := 0, 1
	for i, j := range []Job{
		{ID: "ok", Name: "a", State: "done", ExitCode: &zero},
		{ID: "exit1", Name: "a", State: "done", ExitCode: &one},
		{ID: "noexit", State: "done"},
		{ID: "killed", State: "killed", ExitCode: &zero},
		{ID: "failed", Name: "a", State: "failed"},
		{ID: "running", State: "running"},
	} {
		j.Cmd, j.Created = "true", time.UnixMilli(int64(1e6+i))
		if err := s.PutJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		q    JobQuery
		want string
	}{
		{JobQuery{NotZero: true}, "failed killed noexit exit1"},
		{JobQuery{NotZero: true, Name: "a"}, "failed exit1"},
		{JobQuery{Name: "a"}, "failed exit1 ok"},
	} {
		page, err := s.ListJobsPage(ctx, tc.q)
		var ids []string
		for _, j := range page {
			ids = append(ids, j.ID)
		}
		if got := strings.Join(ids, " "); err != nil || got != tc.want {
			t.Errorf("%+v: %q %v, want %q", tc.q, got, err, tc.want)
		}
	}
}
