package service

import (
	"context"
	"time"

	"github.com/hivetools/hive/internal/inbox"
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
	// TodosTotal and RemindersTotal count all that are open, listed or
	// not (LooseEndsPage lists a page of them).
	TodosTotal     int `json:"todos_total"`
	RemindersTotal int `json:"reminders_total"`
}

// LooseEndsQuery is a page of the loose ends: at most Limit todos and
// Limit reminders (0: all), from the Offset-th of each (todos in the
// order they were raised, reminders by when they are due), and the
// oldest MaxMessages messages.
type LooseEndsQuery struct {
	Limit                        int
	TodosOffset, RemindersOffset int
	MaxMessages                  int
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
	return s.LooseEndsPage(ctx, LooseEndsQuery{MaxMessages: maxMessages})
}

// LooseEndsPage is LooseEnds a page at a time (see LooseEndsQuery), with
// the totals of what it leaves out.
func (s *Service) LooseEndsPage(ctx context.Context, q LooseEndsQuery) (LooseEnds, error) {
	out := LooseEnds{Todos: []view.Todo{}, Reminders: []view.Reminder{}, Messages: []view.Message{}}
	todos, err := s.Inbox.Todos(ctx)
	if err != nil {
		return LooseEnds{}, err
	}
	out.TodosTotal = len(todos)
	for _, t := range page(todos, q.TodosOffset, q.Limit) {
		out.Todos = append(out.Todos, t.View())
	}
	rs, err := s.Inbox.Reminders(ctx)
	if err != nil {
		return LooseEnds{}, err
	}
	out.RemindersTotal = len(rs)
	for _, r := range page(rs, q.RemindersOffset, q.Limit) {
		out.Reminders = append(out.Reminders, r.View())
	}
	if maxMessages := q.MaxMessages; maxMessages > 0 {
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

// page is limit items of xs from offset (limit 0: all from offset).
func page[T any](xs []T, offset, limit int) []T {
	if offset >= len(xs) {
		return nil
	}
	xs = xs[max(offset, 0):]
	if limit > 0 && len(xs) > limit {
		xs = xs[:limit]
	}
	return xs
}

// MaxRemindAhead is how far ahead a reminder may be due (a year).
const MaxRemindAhead = inbox.MaxAhead

// Kinds of a Change.
const (
	ChangeTodo     = inbox.KindTodo
	ChangeReminder = inbox.KindReminder
	ChangeMessage  = inbox.KindMessage
)

// Change is one committed change of a loose end, as Subscribe hands it
// on: Kind (ChangeTodo, ChangeReminder, ChangeMessage) says which record
// is set, the others are zero. A message's and a reminder's Preview is
// set, never a Body.
type Change struct {
	Kind     string
	Todo     view.Todo
	Reminder view.Reminder
	Message  view.Message
	// Removed: the loose end went (cleared, cancelled, fired, read).
	Removed bool
}

// Subscribe calls fn with every committed change of a loose end until
// cancel is called. fn is called in the order of the changes, from the
// inbox's publishing goroutine: it must not block (hand the change on).
// A Service without an inbox has no changes.
func (s *Service) Subscribe(fn func(Change)) (cancel func()) {
	if s.Inbox == nil {
		return func() {}
	}
	return s.Inbox.Subscribe(func(c inbox.Change) {
		fn(Change{Kind: c.Kind, Todo: c.Todo.View(), Reminder: c.Reminder.View(), Message: c.Message.View(), Removed: c.Removed})
	})
}

// Todos are the open todos, oldest first; never nil.
func (s *Service) Todos(ctx context.Context) ([]view.Todo, error) {
	ts, err := s.Inbox.Todos(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]view.Todo, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.View())
	}
	return out, nil
}

// UpsertTodo raises the todo (subsystem, key) or rewords it. Bad fields
// are errdefs.ErrInvalid, too many todos errdefs.ErrLimit.
func (s *Service) UpsertTodo(ctx context.Context, subsystem, key, summary string) (view.Todo, error) {
	t, err := s.Inbox.UpsertTodo(ctx, subsystem, key, summary)
	if err != nil {
		return view.Todo{}, err
	}
	return t.View(), nil
}

// ClearTodo clears the todo (subsystem, key); cleared is false when
// there was none.
func (s *Service) ClearTodo(ctx context.Context, subsystem, key string) (cleared bool, err error) {
	return s.Inbox.ClearTodo(ctx, subsystem, key)
}

// MarkTodosDone clears the todos of ids and returns how many there were;
// unknown ids are skipped.
func (s *Service) MarkTodosDone(ctx context.Context, ids []int64) (int, error) {
	return s.Inbox.MarkDone(ctx, ids)
}

// CancelLooseEnd cancels a reminder, clears a todo or drops a message
// (kind: reminder, todo, message). An unknown one is an error of class
// errdefs.ErrNotFound, a bad kind errdefs.ErrInvalid.
func (s *Service) CancelLooseEnd(ctx context.Context, kind string, id int64) error {
	return s.Inbox.Cancel(ctx, kind, id)
}

// Reminded is a reminder just set: its view, and the file that holds its
// whole message when it is too long for the store ("" otherwise).
type Reminded struct {
	view.Reminder
	SpillPath string
}

// Remind sets a reminder of message, due at due (in the future, at most
// MaxRemindAhead ahead).
func (s *Service) Remind(ctx context.Context, message string, due time.Time) (Reminded, error) {
	r, err := s.Inbox.Remind(ctx, message, due)
	if err != nil {
		return Reminded{}, err
	}
	return Reminded{Reminder: r.View(), SpillPath: r.SpillPath}, nil
}

// CancelReminder cancels the pending reminder id (errdefs.ErrNotFound if
// there is none).
func (s *Service) CancelReminder(ctx context.Context, id int64) error {
	return s.Inbox.CancelReminder(ctx, id)
}

// whole is a delivered message's view with its body, not its preview.
func whole(d inbox.Delivered) view.Message {
	v := d.View()
	v.Body, v.Preview = d.Body, ""
	return v
}

// Send puts a message from from into the inbox (a wake: a waiting
// harness takes it) and returns it as lists show it.
func (s *Service) Send(ctx context.Context, from, body string) (view.Message, error) {
	m, err := s.Inbox.Wake(ctx, from, body)
	if err != nil {
		return view.Message{}, err
	}
	return m.View(), nil
}

// Messages lists the inbox, in-flight messages included, oldest first,
// at most limit, as lists show them (previews); never nil.
func (s *Service) Messages(ctx context.Context, limit int) ([]view.Message, error) {
	ms, err := s.Inbox.AllMessages(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]view.Message, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.View())
	}
	return out, nil
}

// Undelivered counts the messages that wait.
func (s *Service) Undelivered(ctx context.Context) (int, error) { return s.Inbox.Undelivered(ctx) }

// ReadInbox takes (removes) the oldest max messages, each whole; never
// nil.
func (s *Service) ReadInbox(ctx context.Context, max int) ([]view.Message, error) {
	ds, err := s.Inbox.Read(ctx, max)
	if err != nil {
		return nil, err
	}
	out := make([]view.Message, 0, len(ds))
	for _, d := range ds {
		out = append(out, whole(d))
	}
	return out, nil
}

// Message is the message id, whole, left in the inbox
// (errdefs.ErrNotFound if there is none).
func (s *Service) Message(ctx context.Context, id int64) (view.Message, error) {
	d, err := s.Inbox.Peek(ctx, id)
	if err != nil {
		return view.Message{}, err
	}
	return whole(d), nil
}

// DropMessage removes the message id unread.
func (s *Service) DropMessage(ctx context.Context, id int64) error {
	return s.Inbox.DropMessage(ctx, id)
}

// NextMessage hands a harness the oldest message, whole, in flight until
// AckMessage: at once, or with wait until one comes, timeout passes (0:
// no limit) or ctx ends (ctx's error). ok is false when there was none.
func (s *Service) NextMessage(ctx context.Context, wait bool, timeout time.Duration) (m view.Message, ok bool, err error) {
	d, ok, err := s.Inbox.Next(ctx, wait, timeout)
	if err != nil || !ok {
		return view.Message{}, ok, err
	}
	return whole(d), true, nil
}

// AckMessage ends the delivery of the in-flight message id.
func (s *Service) AckMessage(ctx context.Context, id int64) error { return s.Inbox.Ack(ctx, id) }

// Requeue puts the in-flight messages back in the inbox and returns how
// many.
func (s *Service) Requeue(ctx context.Context) (int, error) { return s.Inbox.Requeue(ctx) }

// GracefulStop appends the message that asks the agent to flush its
// state and end its turn, already in flight (the harness that asked for
// it delivers and acks it), and returns it whole.
func (s *Service) GracefulStop(ctx context.Context) (view.Message, error) {
	m, err := s.Inbox.GracefulStop(ctx)
	if err != nil {
		return view.Message{}, err
	}
	v := m.View()
	v.Body, v.Preview = m.Body, ""
	return v, nil
}
