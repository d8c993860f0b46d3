package service

import (
	"sync"
	"time"

	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/view"
)

// Kinds of an Event.
const (
	EventJob    = "job"    // a job's record was committed (Event.Job)
	EventStatus = "status" // the status line was set (Event.Status)
	EventTurn   = "turn"   // the turn state was reported (Event.Turn)
)

// Event is a change of the agent that others may be told of (the
// swarm's notices, internal/swarm). Kind says which of Job, Status and
// Turn is set.
type Event struct {
	Kind   string
	At     time.Time
	Job    view.Job
	Status string
	Turn   string
}

// JobEvent is the event of a committed job record (for
// job.Options.OnRecord).
func JobEvent(in job.Info) Event {
	return Event{Kind: EventJob, At: time.Now(), Job: in.View()}
}

// Events hands each Event to its watchers. The zero value is ready to
// use; a nil *Events drops every event. Safe for concurrent use.
type Events struct {
	mu       sync.Mutex
	next     int
	watchers map[int]func(Event)
}

// Watch calls fn with every event emitted until cancel is called. fn is
// called from the emitter's goroutine, possibly with an engine's commit
// waiting on it: it must not block (hand the event on).
func (e *Events) Watch(fn func(Event)) (cancel func()) {
	if e == nil {
		return func() {}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watchers == nil {
		e.watchers = map[int]func(Event){}
	}
	id := e.next
	e.next++
	e.watchers[id] = fn
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.watchers, id)
	}
}

// Emit hands ev to every watcher, in turn. Emits from several goroutines
// are not ordered among them.
func (e *Events) Emit(ev Event) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, fn := range e.watchers {
		fn(ev)
	}
}

// Watch calls fn with every Event of the agent until cancel is called
// (see Events.Watch). A Service without Events has none.
func (s *Service) Watch(fn func(Event)) (cancel func()) { return s.Events.Watch(fn) }
