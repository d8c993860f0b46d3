package job

import (
	"context"

	"github.com/hivetools/hive/internal/store"
)

// Page returns the jobs q selects, newest first, with live counters for
// the jobs held in memory (like List).
func (m *Manager) Page(ctx context.Context, q store.JobQuery) ([]Info, error) {
	m.records.flush()
	recs, err := m.o.Store.ListJobsPage(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(recs))
	for _, r := range recs {
		in := fromRecord(r)
		if j, err := m.Get(r.ID); err == nil {
			in = j.Info()
		}
		out = append(out, in)
	}
	return out, nil
}

// Recent returns the snapshots of the jobs held in memory: every pending
// and running job and the latest ended ones, in no particular order. It
// reads no store: a watcher may call it often.
func (m *Manager) Recent() []Info {
	m.mu.Lock()
	jobs := make([]*Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		jobs = append(jobs, j)
	}
	m.mu.Unlock()
	out := make([]Info, len(jobs))
	for i, j := range jobs {
		out[i] = j.Info()
	}
	return out
}
