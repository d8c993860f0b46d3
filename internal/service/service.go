// Package service is the one API of hive's engines: jobs, PTY sessions,
// loose ends, the inbox, reminders and the agent's state. Every surface
// is an adapter in front of it: the MCP tools (internal/tools), the
// daemon's socket server behind the CLI (internal/sockapi) and the HTTP
// API and dashboard (internal/dashboard) decode a request, call a
// Service, and encode the answer in the one view of each record
// (internal/view). What a job means for the agent (when its loose end is
// raised, what it says, when it goes away) is decided here, once.
//
// A Service holds no lock of its own; each engine guards its own state.
// Its methods are safe for concurrent use.
package service

import (
	"log/slog"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/handles"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/policy"
	"github.com/hivetools/hive/internal/pty"
)

// Service is the daemon's engines behind one API. Make it with New; the
// fields are read-only afterwards. The engine fields (Jobs, Inbox, Agent,
// PTY) are the composition root's (internal/daemon): a surface calls the
// methods, never an engine (surfaces_test.go keeps it so).
type Service struct {
	Jobs  *job.Manager
	Inbox *inbox.Inbox
	Agent *agent.Agent
	// PTY runs the terminal_pty sessions. Nil: there are none (the
	// terminal group then has no PTY tools' engine).
	PTY    *pty.Manager
	Layout paths.Layout
	// Logger: if nil, New sets one that discards.
	Logger  *slog.Logger
	Version string
	// Handles keeps terminal_exec output handles. If nil, New makes one
	// with the defaults.
	Handles *handles.Store
	// Activity, if set, keeps the latest tool calls (the dashboard's
	// feed); nil records nothing.
	Activity *Activity
	// Policy refuses the commands its deny rules match and adds its warn
	// rules to warnings (policy.go). Nil: no rules.
	Policy *policy.Policy
	// Events, if set, hears of the agent's changes (Watch); nil tells
	// nobody.
	Events *Events
	// Swarm is the swarm the daemon joined; nil when none.
	Swarm Swarm
}

// New returns a Service of the engines in s, with the defaults of its
// nil fields filled in.
func New(s Service) *Service {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Handles == nil {
		s.Handles = handles.New(nil)
	}
	return &s
}
