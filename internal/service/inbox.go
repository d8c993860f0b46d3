package service

import (
	"context"

	"github.com/hivetools/hive/internal/view"
)

// LooseEnds are the agent's open threads, each record in its one view.
type LooseEnds struct {
	Todos     []view.Todo     `json:"todos"`
	Reminders []view.Reminder `json:"reminders"`
	// Messages are the oldest undelivered (and in-flight) messages, at
	// most the asked number; Undelivered counts all that wait.
	Messages    []view.Message `json:"messages"`
	Undelivered int            `json:"undelivered"`
}

// LooseEndCounts counts the agent's open threads (get_agent_meta, GET
// /api/state).
type LooseEndCounts struct {
	Reminders int `json:"reminders"`
	Todos     int `json:"todos"`
	// Inbox counts the undelivered messages.
	Inbox int `json:"inbox"`
}

// LooseEndCounts counts the pending reminders, the open todos and the
// undelivered messages.
func (s *Service) LooseEndCounts(ctx context.Context) (LooseEndCounts, error) {
	le, err := s.LooseEnds(ctx, 0)
	if err != nil {
		return LooseEndCounts{}, err
	}
	return LooseEndCounts{Reminders: len(le.Reminders), Todos: len(le.Todos), Inbox: le.Undelivered}, nil
}

// LooseEnds reads the pending reminders, the open todos and the inbox:
// its oldest maxMessages messages and how many wait in all. The lists are
// never nil.
func (s *Service) LooseEnds(ctx context.Context, maxMessages int) (LooseEnds, error) {
	out := LooseEnds{Todos: []view.Todo{}, Reminders: []view.Reminder{}, Messages: []view.Message{}}
	todos, err := s.Inbox.Todos(ctx)
	if err != nil {
		return LooseEnds{}, err
	}
	for _, t := range todos {
		out.Todos = append(out.Todos, t.View())
	}
	rs, err := s.Inbox.Reminders(ctx)
	if err != nil {
		return LooseEnds{}, err
	}
	for _, r := range rs {
		out.Reminders = append(out.Reminders, r.View())
	}
	if maxMessages > 0 {
		ms, err := s.Inbox.Messages(ctx, maxMessages)
		if err != nil {
			return LooseEnds{}, err
		}
		for _, m := range ms {
			out.Messages = append(out.Messages, m.View())
		}
	}
	if out.Undelivered, err = s.Inbox.Undelivered(ctx); err != nil {
		return LooseEnds{}, err
	}
	return out, nil
}
