package service

import (
	"context"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
)

// SwarmAgent is one agent of a swarm as the swarm's directory holds it
// (docs/swarm.md): what its daemon last told of itself.
type SwarmAgent struct {
	Name string `json:"name"`
	// Hive is the host the agent's daemon runs on, or its --hive name.
	Hive        string    `json:"hive"`
	Swarm       string    `json:"swarm"`
	Version     string    `json:"version,omitempty"`
	StatusText  string    `json:"status_text"`
	StatusSetAt time.Time `json:"status_set_at,omitzero"`
	Turn        string    `json:"turn_state,omitempty"`
	TurnSince   time.Time `json:"turn_state_since,omitzero"`
	JobsRunning int       `json:"jobs_running"`
	// LooseEnds counts its open threads; nil when they could not be read.
	LooseEnds    *LooseEndCounts `json:"loose_ends,omitempty"`
	DashboardURL string          `json:"dashboard_url,omitempty"`
	Heartbeat    time.Time       `json:"heartbeat"`
	// LastNotice is the latest notice the agent published (or queued
	// while NATS was away); nil before its first.
	LastNotice *SwarmNotice `json:"last_notice,omitempty"`
}

// SwarmNotice is a notice of an agent told in short.
type SwarmNotice struct {
	// Agent is the agent that published it; "" in its own directory
	// entry (LastNotice).
	Agent string `json:"agent,omitempty"`
	// Kind is the notice's kind (docs/swarm.md: job_ended, status, ...).
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// Text tells it in one line ("job j3 ended: exit 0").
	Text string `json:"text"`
}

// Swarm is the swarm the agent's daemon joined (internal/swarm).
type Swarm interface {
	// Name is the swarm's name; Hive the name this daemon's host goes by.
	Name() string
	Hive() string
	// Agent is the directory's entry of the agent name, errdefs.ErrNotFound
	// if it has none (never joined, or silent past the entry's life).
	Agent(ctx context.Context, name string) (SwarmAgent, error)
	// Agents lists the directory, by name.
	Agents(ctx context.Context) ([]SwarmAgent, error)
	// Send sends body to the agent to, from this one; the message waits
	// for to if it is not running. seq is its number in the swarm's wake
	// stream.
	Send(ctx context.Context, to, body string) (seq uint64, err error)
	// Watch calls fn with each change of the directory and each notice
	// published, from now until ctx ends, then returns nil. fn is called
	// from Watch's goroutine, one change at a time, and must not block.
	Watch(ctx context.Context, fn func(SwarmChange)) error
}

// SwarmChange is one change of a swarm as Swarm.Watch tells it: one of
// its fields is set.
type SwarmChange struct {
	// Agent is an agent's directory entry, just written (a heartbeat, or
	// something in it changed).
	Agent *SwarmAgent
	// Gone is the name of an agent whose entry went: its daemon stopped,
	// or it was silent for the entry's life.
	Gone string
	// Notice is a notice an agent published.
	Notice *SwarmNotice
	// Reset says the watch of the directory started again (NATS was
	// away): changes meanwhile were not told; read the directory again.
	Reset bool
}

// ErrNoSwarm is the answer of the swarm methods of a daemon that joined
// none (it runs without --nats).
var ErrNoSwarm = errdefs.New(errdefs.ErrNotFound, "this daemon is in no swarm (it runs without --nats and --swarm)")

// InSwarm tells the swarm's and this host's names; ok is false when the
// daemon joined none.
func (s *Service) InSwarm() (swarm, hive string, ok bool) {
	if s.Swarm == nil {
		return "", "", false
	}
	return s.Swarm.Name(), s.Swarm.Hive(), true
}

// SwarmAgent is the swarm directory's entry of the agent name
// (errdefs.ErrNotFound without one, ErrNoSwarm outside a swarm).
func (s *Service) SwarmAgent(ctx context.Context, name string) (SwarmAgent, error) {
	if s.Swarm == nil {
		return SwarmAgent{}, ErrNoSwarm
	}
	return s.Swarm.Agent(ctx, name)
}

// SwarmAgents lists the swarm's directory (ErrNoSwarm outside a swarm).
func (s *Service) SwarmAgents(ctx context.Context) ([]SwarmAgent, error) {
	if s.Swarm == nil {
		return nil, ErrNoSwarm
	}
	return s.Swarm.Agents(ctx)
}

// SendTo sends body to the agent to of the swarm, labelled from this
// agent ("agent:<name>" in its inbox), and returns the message's number
// in the swarm's wake stream (ErrNoSwarm outside a swarm).
func (s *Service) SendTo(ctx context.Context, to, body string) (uint64, error) {
	if s.Swarm == nil {
		return 0, ErrNoSwarm
	}
	return s.Swarm.Send(ctx, to, body)
}

// WatchSwarm calls fn with the swarm's changes until ctx ends (see
// Swarm.Watch); ErrNoSwarm at once outside a swarm.
func (s *Service) WatchSwarm(ctx context.Context, fn func(SwarmChange)) error {
	if s.Swarm == nil {
		return ErrNoSwarm
	}
	return s.Swarm.Watch(ctx, fn)
}
