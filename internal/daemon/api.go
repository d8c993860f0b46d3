package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// api serves a JSON GET endpoint behind the same checks as /mcp (Host,
// Origin, bearer token). get makes the answer; an error is a 500 with its
// text.
func (f *httpFront) api(get func(ctx context.Context) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Now().Add(f.writeTimeout))
		rc.SetReadDeadline(time.Now().Add(f.readTimeout))
		if !f.admit(w, r) {
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			refuse(w, "method "+r.Method+": this endpoint answers GET only", http.StatusMethodNotAllowed)
			return
		}
		v, err := get(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(v)
	})
}

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

func (d *daemon) apiState(ctx context.Context) (any, error) {
	st := d.deps.Agent.State()
	out := APIState{Name: st.Name, Version: d.cfg.Version, PID: pid, UptimeSecs: int64(time.Since(d.started).Seconds()),
		TurnState: st.Turn, TurnStateSince: st.TurnSince.Unix(), Status: st.StatusText,
		ContextUsage: st.ContextUsage, CompactPending: st.CompactPending}
	if !st.StatusSetAt.IsZero() {
		out.StatusSetAt = st.StatusSetAt.Unix()
	}
	var err error
	if out.Jobs, err = d.jobs.Counts(ctx); err != nil {
		return nil, err
	}
	rs, err := d.inbox.Reminders(ctx)
	if err != nil {
		return nil, err
	}
	todos, err := d.inbox.Todos(ctx)
	if err != nil {
		return nil, err
	}
	n, err := d.inbox.Undelivered(ctx)
	if err != nil {
		return nil, err
	}
	out.LooseEnds = APILooseEnds{Reminders: len(rs), Todos: len(todos), Inbox: n}
	return out, nil
}
