package httpfront

import (
	"context"
	"os"
	"time"
)

// APIState is the answer of GET /api/state (docs/http-api.md).
type APIState struct {
	Name           string         `json:"name"`
	Version        string         `json:"version"`
	PID            int            `json:"pid"`
	UptimeSecs     int64          `json:"uptime_secs"`
	TurnState      string         `json:"turn_state"`
	TurnStateSince int64          `json:"turn_state_since"`
	Status         string         `json:"status"`
	StatusSetAt    int64          `json:"status_set_at,omitempty"`
	ContextUsage   *float64       `json:"context_usage"`
	CompactPending bool           `json:"compact_pending"`
	Jobs           map[string]int `json:"jobs"`
	LooseEnds      APILooseEnds   `json:"loose_ends"`
}

// APILooseEnds counts the loose ends.
type APILooseEnds struct {
	Reminders int `json:"reminders"`
	Todos     int `json:"todos"`
	Inbox     int `json:"inbox"`
}

// apiState answers GET /api/state.
func (f *Front) apiState(ctx context.Context) (any, error) {
	st := f.svc.Agent.State()
	out := APIState{Name: st.Name, Version: f.svc.Version, PID: os.Getpid(), UptimeSecs: int64(time.Since(f.started).Seconds()),
		TurnState: st.Turn, TurnStateSince: st.TurnSince.Unix(), Status: st.StatusText,
		ContextUsage: st.ContextUsage, CompactPending: st.CompactPending}
	if !st.StatusSetAt.IsZero() {
		out.StatusSetAt = st.StatusSetAt.Unix()
	}
	var err error
	if out.Jobs, err = f.svc.Jobs.Counts(ctx); err != nil {
		return nil, err
	}
	rs, err := f.svc.Inbox.Reminders(ctx)
	if err != nil {
		return nil, err
	}
	todos, err := f.svc.Inbox.Todos(ctx)
	if err != nil {
		return nil, err
	}
	n, err := f.svc.Inbox.Undelivered(ctx)
	if err != nil {
		return nil, err
	}
	out.LooseEnds = APILooseEnds{Reminders: len(rs), Todos: len(todos), Inbox: n}
	return out, nil
}
