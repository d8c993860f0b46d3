package service

import (
	"context"
	"time"

	"github.com/hivetools/hive/internal/agent"
)

// AgentState is a snapshot of the agent's state.
type AgentState struct {
	Name        string
	StatusText  string
	StatusSetAt time.Time // zero if never set
	Turn        string
	TurnSince   time.Time
	// ContextUsage is the last reported share of the context window in
	// use (0-1); nil until a harness reports one.
	ContextUsage   *float64
	CompactPending bool
}

func agentState(st agent.State) AgentState {
	return AgentState{Name: st.Name, StatusText: st.StatusText, StatusSetAt: st.StatusSetAt, Turn: st.Turn,
		TurnSince: st.TurnSince, ContextUsage: st.ContextUsage, CompactPending: st.CompactPending}
}

// AgentState is the agent's state now; ok is false when the Service has
// no agent (then the state is zero).
func (s *Service) AgentState() (st AgentState, ok bool) {
	if s.Agent == nil {
		return AgentState{}, false
	}
	return agentState(s.Agent.State()), true
}

// SetStatus sets the agent's one-line status ("" clears it); a bad one is
// errdefs.ErrInvalid.
func (s *Service) SetStatus(ctx context.Context, text string) (AgentState, error) {
	st, err := s.Agent.SetStatus(ctx, text)
	if err == nil {
		s.Events.Emit(Event{Kind: EventStatus, At: st.StatusSetAt, Status: st.StatusText})
	}
	return agentState(st), err
}

// Compact asks for a compaction of the agent's context after its turn;
// refused (agent.ErrCompactRefused, class errdefs.ErrConflict) below the
// usage that grants it.
func (s *Service) Compact(ctx context.Context) (AgentState, error) {
	st, err := s.Agent.Compact(ctx)
	return agentState(st), err
}

// SetTurn records the harness's turn state (and context usage, if not
// nil) and reports whether a compaction is pending.
func (s *Service) SetTurn(ctx context.Context, state string, usage *float64) (compactPending bool, err error) {
	pending, err := s.Agent.SetTurn(ctx, state, usage)
	if err == nil {
		st := s.Agent.State()
		s.Events.Emit(Event{Kind: EventTurn, At: st.TurnSince, Turn: st.Turn})
	}
	return pending, err
}

// JobsRunning counts the jobs running now.
func (s *Service) JobsRunning() int { return s.Jobs.Running() }

// JobCounts counts the jobs kept, by state.
func (s *Service) JobCounts(ctx context.Context) (map[string]int, error) { return s.Jobs.Counts(ctx) }
