package httpfront

import (
	"context"
	"github.com/hivetools/hive/internal/service"
	"os"
	"time"
)

// APIState is the answer of GET /api/state (docs/http-api.md).
type APIState struct {
	Name           string                 `json:"name"`
	Version        string                 `json:"version"`
	PID            int                    `json:"pid"`
	UptimeSecs     int64                  `json:"uptime_secs"`
	TurnState      string                 `json:"turn_state"`
	TurnStateSince int64                  `json:"turn_state_since"`
	Status         string                 `json:"status"`
	StatusSetAt    int64                  `json:"status_set_at,omitempty"`
	ContextUsage   *float64               `json:"context_usage"`
	CompactPending bool                   `json:"compact_pending"`
	Jobs           map[string]int         `json:"jobs"`
	LooseEnds      service.LooseEndCounts `json:"loose_ends"`
}

// apiState answers GET /api/state.
func (f *Front) apiState(ctx context.Context) (any, error) {
	st, _ := f.svc.AgentState()
	out := APIState{Name: st.Name, Version: f.svc.Version, PID: os.Getpid(), UptimeSecs: int64(time.Since(f.started).Seconds()),
		TurnState: st.Turn, TurnStateSince: st.TurnSince.Unix(), Status: st.StatusText,
		ContextUsage: st.ContextUsage, CompactPending: st.CompactPending}
	if !st.StatusSetAt.IsZero() {
		out.StatusSetAt = st.StatusSetAt.Unix()
	}
	var err error
	if out.Jobs, err = f.svc.JobCounts(ctx); err != nil {
		return nil, err
	}
	if out.LooseEnds, err = f.svc.LooseEndCounts(ctx); err != nil {
		return nil, err
	}
	return out, nil
}
