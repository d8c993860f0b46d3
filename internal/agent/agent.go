// Package agent keeps what the daemon knows of the agent it serves: its
// name, its one-line status (set_status), its turn state as a harness
// reports it (idle, thinking, compacting), the context usage of its last
// turn, and whether a compaction is pending. All of it is in the store,
// so it survives a restart.
package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// Turn states.
const (
	Idle       = "idle"
	Thinking   = "thinking"
	Compacting = "compacting"
)

// CompactOver is the context usage above which compact() is granted.
const CompactOver = 0.66

// MaxStatus bounds a status line, in characters.
const MaxStatus = 200

// ErrCompactRefused is compact()'s refusal: the last reported context
// usage is not above CompactOver (the error says the figure).
var ErrCompactRefused = errdefs.New(errdefs.ErrConflict, "compaction refused")

// State is a snapshot of the agent.
type State struct {
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

// Agent is safe for concurrent use.
type Agent struct {
	st *store.Store
	l  paths.Layout

	mu sync.Mutex
	s  State
}

// store keys
const (
	keyStatus   = "status_text"
	keyTurn     = "turn_state"
	keyUsage    = "context_usage"
	keyCompact  = "compact_pending"
	trueValue   = "true"
	falseValue  = "false"
	usageFormat = 'g'
)

// New loads the agent's state. name is how it is called ("" is the state
// dir's base name).
func New(ctx context.Context, st *store.Store, l paths.Layout, name string) (*Agent, error) {
	if name == "" {
		name = baseName(l.Dir)
	}
	a := &Agent{st: st, l: l, s: State{Name: name, Turn: Idle, TurnSince: time.Now()}}
	if v, at, ok, err := st.AgentValue(ctx, keyStatus); err != nil {
		return nil, err
	} else if ok {
		a.s.StatusText, a.s.StatusSetAt = v, at
	}
	if v, at, ok, err := st.AgentValue(ctx, keyTurn); err != nil {
		return nil, err
	} else if ok {
		a.s.Turn, a.s.TurnSince = v, at
	}
	if v, _, ok, err := st.AgentValue(ctx, keyUsage); err != nil {
		return nil, err
	} else if ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			a.s.ContextUsage = &f
		}
	}
	if v, _, ok, err := st.AgentValue(ctx, keyCompact); err != nil {
		return nil, err
	} else if ok {
		a.s.CompactPending = v == trueValue
	}
	return a, nil
}

func baseName(dir string) string {
	dir = strings.TrimRight(dir, "/")
	if i := strings.LastIndexAny(dir, `/\`); i >= 0 {
		return dir[i+1:]
	}
	return dir
}

// State returns a snapshot.
func (a *Agent) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.s
	if s.ContextUsage != nil {
		u := *s.ContextUsage
		s.ContextUsage = &u
	}
	return s
}

// CheckStatus validates a status line: one line, at most 200 characters.
func CheckStatus(text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return errdefs.New(errdefs.ErrInvalid, "text: must be a single line")
	}
	if n := utf8.RuneCountInString(text); n > MaxStatus {
		return fmt.Errorf("text: %d chars, at most %d", n, MaxStatus)
	}
	return nil
}

// SetStatus sets the status line ("" clears it): in the store and in the
// state dir's hyperhive-status file, which other programs read.
func (a *Agent) SetStatus(ctx context.Context, text string) (State, error) {
	if err := CheckStatus(text); err != nil {
		return State{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := paths.ReplaceFile(a.l.Status(), []byte(text)); err != nil {
		return State{}, fmt.Errorf("write status file: %w", err)
	}
	now := time.Now().Truncate(time.Millisecond)
	if err := a.st.SetAgentValues(ctx, now, map[string]string{keyStatus: text}); err != nil {
		return State{}, err
	}
	a.s.StatusText, a.s.StatusSetAt = text, now
	return a.s, nil
}

// CheckTurn validates a turn state and a context usage (nil: none).
func CheckTurn(state string, usage *float64) error {
	switch state {
	case Idle, Thinking, Compacting:
	default:
		return errdefs.Newf(errdefs.ErrInvalid, "state %q: must be %s, %s or %s", state, Idle, Thinking, Compacting)
	}
	if usage != nil && !(*usage >= 0 && *usage <= 1) {
		return errdefs.Newf(errdefs.ErrInvalid, "context_usage %v: must be 0..1 (the share of the context window in use)", *usage)
	}
	return nil
}

// SetTurn records a harness's turn state and, if given, the context usage
// it reports. Moving to idle consumes a pending compaction: the result says
// whether one was pending, for the harness to run it now.
func (a *Agent) SetTurn(ctx context.Context, state string, usage *float64) (compactPending bool, err error) {
	if err := CheckTurn(state, usage); err != nil {
		return false, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now().Truncate(time.Millisecond)
	kv := map[string]string{}
	since := a.s.TurnSince
	if state != a.s.Turn {
		kv[keyTurn], since = state, now
	}
	if usage != nil {
		kv[keyUsage] = strconv.FormatFloat(*usage, usageFormat, -1, 64)
	}
	pending := a.s.CompactPending
	if state == Idle && pending {
		kv[keyCompact] = falseValue
	}
	if len(kv) > 0 {
		if err := a.st.SetAgentValues(ctx, now, kv); err != nil {
			return false, err
		}
	}
	a.s.Turn, a.s.TurnSince = state, since
	if usage != nil {
		u := *usage
		a.s.ContextUsage = &u
	}
	if state == Idle {
		a.s.CompactPending = false
	}
	return state == Idle && pending, nil
}

// Compact asks for a compaction at the end of the current turn. It is
// refused (ErrCompactRefused, nothing changed) unless the last reported
// context usage is above CompactOver.
func (a *Agent) Compact(ctx context.Context) (State, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch u := a.s.ContextUsage; {
	case u == nil:
		return a.s, fmt.Errorf("%w: no context usage has been reported yet (a harness reports it with `hive turn ... --context-usage F`); compaction needs more than %.0f%% in use", ErrCompactRefused, CompactOver*100)
	case *u <= CompactOver:
		return a.s, fmt.Errorf("%w: the last turn used %.0f%% of the context window, compaction needs more than %.0f%%", ErrCompactRefused, *u*100, CompactOver*100)
	}
	if !a.s.CompactPending {
		if err := a.st.SetAgentValues(ctx, time.Now(), map[string]string{keyCompact: trueValue}); err != nil {
			return a.s, err
		}
		a.s.CompactPending = true
	}
	return a.s, nil
}

// SetCompactPending sets or clears the pending compaction directly (the
// operator's Compact button; no usage check).
func (a *Agent) SetCompactPending(ctx context.Context, pending bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := falseValue
	if pending {
		v = trueValue
	}
	if err := a.st.SetAgentValues(ctx, time.Now(), map[string]string{keyCompact: v}); err != nil {
		return err
	}
	a.s.CompactPending = pending
	return nil
}
