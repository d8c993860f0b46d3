package job

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/store"
)

// A running record whose job a dead holder held gets the holder's death
// as its error (Options.LostReason, by its start), a pending one and one
// started after the death the daemon's stop.
func TestRecoverLostReason(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "hive.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	died := time.Now().Add(-time.Minute)
	ctx := context.Background()
	for _, r := range []store.Job{
		{ID: "held", Cmd: "sleep 3600", State: "running", Created: died.Add(-time.Hour), Started: died.Add(-time.Hour)},
		{ID: "after", Cmd: "sleep 3600", State: "running", Created: died.Add(time.Second), Started: died.Add(time.Second)},
		{ID: "queued", Cmd: "sleep 3600", State: "pending", Created: died.Add(-time.Hour)},
	} {
		if err := st.PutJob(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	const reason = "the holder of the jobs (pid 42) died"
	m, err := New(Options{Dir: filepath.Join(dir, "out"), Store: st, LostReason: func(started time.Time) string {
		if started.After(died) {
			return ""
		}
		return reason
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	for id, want := range map[string]string{
		"held":   reason,
		"after":  "the daemon stopped while the job was running",
		"queued": "the daemon stopped while the job was pending",
	} {
		in, err := m.Lookup(ctx, id)
		if err != nil || in.State != Interrupted || in.Error != want {
			t.Errorf("%s: %v, state %s, error %q: want interrupted, %q", id, err, in.State, in.Error, want)
		}
	}
}
