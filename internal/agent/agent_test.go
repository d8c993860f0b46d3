package agent

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

func open(t *testing.T) (*store.Store, paths.Layout) {
	t.Helper()
	l := paths.Layout{Dir: t.TempDir()}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, l
}

// Status, turn state, context usage and a pending compaction survive a
// restart; moving to idle consumes the compaction; compact is refused at
// or under 66% and granted above.
func TestAgentState(t *testing.T) {
	st, l := open(t)
	ctx := context.Background()
	a, err := New(ctx, st, l, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := a.State(); s.Name == "" || s.Turn != Idle || s.StatusText != "" || s.ContextUsage != nil {
		t.Fatalf("fresh state %+v", s)
	}
	if _, err := a.SetStatus(ctx, "building"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(l.Status()); string(b) != "building" {
		t.Errorf("status file %q", b)
	}
	for _, bad := range []string{"two\nlines", strings.Repeat("é", MaxStatus+1)} {
		if _, err := a.SetStatus(ctx, bad); err == nil || !strings.HasPrefix(err.Error(), "text: ") {
			t.Errorf("status %.10q: %v", bad, err)
		}
	}
	if _, err := a.Compact(ctx); !errors.Is(err, ErrCompactRefused) || !strings.Contains(err.Error(), "no context usage") {
		t.Errorf("compact with no usage: %v", err)
	}
	low := 0.5
	if _, err := a.SetTurn(ctx, Thinking, &low); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Compact(ctx); !errors.Is(err, ErrCompactRefused) || !strings.Contains(err.Error(), "50%") || a.State().CompactPending {
		t.Errorf("compact at 50%%: %v, pending %v", err, a.State().CompactPending)
	}
	high := 0.8
	if _, err := a.SetTurn(ctx, Thinking, &high); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Compact(ctx); err != nil || !s.CompactPending {
		t.Fatalf("compact at 80%%: %+v %v", s, err)
	}
	for _, bad := range []struct {
		state string
		usage float64
		want  string
	}{{"sleeping", 0, `state "sleeping"`}, {Idle, 1.5, "context_usage 1.5: must be 0..1"}} {
		u := bad.usage
		if _, err := a.SetTurn(ctx, bad.state, &u); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SetTurn(%q, %v): %v", bad.state, bad.usage, err)
		}
	}
	// A restart keeps it all.
	b, err := New(ctx, st, l, "")
	if err != nil {
		t.Fatal(err)
	}
	s := b.State()
	if s.StatusText != "building" || s.StatusSetAt.IsZero() || s.Turn != Thinking || s.ContextUsage == nil || *s.ContextUsage != 0.8 || !s.CompactPending {
		t.Fatalf("after a restart: %+v", s)
	}
	if pending, err := b.SetTurn(ctx, Idle, nil); err != nil || !pending {
		t.Errorf("to idle with a compaction pending: %v %v, want it handed over", pending, err)
	}
	if pending, _ := b.SetTurn(ctx, Idle, nil); pending || b.State().CompactPending {
		t.Error("the compaction was handed over twice")
	}
}
