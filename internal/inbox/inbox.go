// Package inbox keeps the agent's loose ends and its inbox: keyed todos
// raised by jobs and by other local programs, reminders, and a durable
// queue of messages (due reminders, wake requests from local programs,
// the harness's graceful stop). Every change is published to subscribers
// (the MCP sessions), in order, from one goroutine the Inbox owns; a
// second one fires reminders when they fall due.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// ErrNotFound is returned for an unknown loose end.
var ErrNotFound = errdefs.New(errdefs.ErrNotFound, "no such loose end")

// Kinds of loose ends and changes.
const (
	KindTodo     = "todo"
	KindReminder = "reminder"
	KindMessage  = "message"
)

// Change is one published change: of a todo, a reminder or a message
// (Kind says which; the others are zero).
type Change struct {
	Kind     string
	Todo     store.Todo
	Reminder store.Reminder
	Message  store.Message
	Removed  bool // the loose end went (cleared, cancelled, fired, read)
	quiet    bool // no news for Next (a job's start)
}

// Options configures an Inbox.
type Options struct {
	// Store keeps everything. Required.
	Store *store.Store
	// Layout names the spill directories (reminders/, inbox/). Required.
	Layout paths.Layout
	// RemindMax caps the pending reminders. If zero, DefaultRemindMax.
	RemindMax int
	// InboxMax caps the messages queued (a wake past it is refused). If
	// zero, DefaultInboxMax.
	InboxMax int
	// Logger, if nil, discards.
	Logger *slog.Logger
}

// DefaultRemindMax is the cap on pending reminders.
const DefaultRemindMax = 50

// Bounds of a todo a local program raises (a job's own todos are bounded
// by the jobs kept).
const (
	MaxTodoSubsystem = 64
	MaxTodoKey       = 256
	MaxTodoSummary   = 16 << 10
	// MaxTodos caps the open todos: a new one past it is refused.
	MaxTodos = 10000
)

// DefaultInboxMax is the cap on queued messages: at 1 MiB each at most,
// about 10 GiB of spill files, but a producer that loops gets an error
// long before the disk fills.
const DefaultInboxMax = 10000

// Inbox is safe for concurrent use. Close it to stop its goroutines.
type Inbox struct {
	st  *store.Store
	o   Options
	log *slog.Logger

	mu     sync.Mutex
	subs   map[int]func(Change)
	nextID int
	queue  []Change
	wake   chan struct{}
	done   chan struct{}
	closed bool
	wg     sync.WaitGroup

	// due is signalled when the set of reminders changed: the scheduler
	// looks again at the next one due.
	due chan struct{}
	// arrived is closed (and replaced) whenever a message arrives or a
	// todo changes as news (the store marks it; Next takes the marks):
	// Next waits on it. Guarded by mu.
	arrived chan struct{}
}

// New returns an Inbox and starts its goroutines. Messages a harness
// took and never acked (a daemon that stopped mid-turn) are queued again,
// and reminders that fell due while no daemon ran fire at once.
func New(o Options) (*Inbox, error) {
	if o.Store == nil || o.Layout.Dir == "" {
		return nil, errors.New("inbox: Store and Layout are required")
	}
	if o.RemindMax <= 0 {
		o.RemindMax = DefaultRemindMax
	}
	if o.InboxMax <= 0 {
		o.InboxMax = DefaultInboxMax
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	in := &Inbox{st: o.Store, o: o, log: o.Logger, subs: map[int]func(Change){}, wake: make(chan struct{}, 1),
		done: make(chan struct{}), due: make(chan struct{}, 1), arrived: make(chan struct{})}
	if n, err := in.st.RequeueInFlight(context.Background()); err != nil {
		in.log.Error("could not queue again the messages in flight when the last daemon stopped", "err", err)
	} else if n > 0 {
		in.log.Info("messages in flight when the last daemon stopped are queued again", "count", n)
	}
	if n, err := in.RemoveOrphanSpills(context.Background()); err != nil {
		in.log.Error("could not look for spill files without a record", "err", err)
	} else if n > 0 {
		in.log.Info("spill files without a record removed (a daemon died writing them)", "count", n)
	}
	in.wg.Add(2)
	go in.publish()
	go in.schedule()
	return in, nil
}

// Close stops the publisher after it delivered what was queued.
func (in *Inbox) Close() {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return
	}
	in.closed = true
	close(in.done)
	in.signalArrivedLocked()
	in.mu.Unlock()
	in.wg.Wait()
}

// signalArrivedLocked wakes the waiters of Next. in.mu is held.
func (in *Inbox) signalArrivedLocked() {
	close(in.arrived)
	in.arrived = make(chan struct{})
}

// Subscribe registers fn for every later change. fn runs on the
// publisher goroutine, one change at a time; it should not block for long.
// The returned func unsubscribes.
func (in *Inbox) Subscribe(fn func(Change)) (cancel func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	id := in.nextID
	in.nextID++
	in.subs[id] = fn
	return func() {
		in.mu.Lock()
		delete(in.subs, id)
		in.mu.Unlock()
	}
}

func (in *Inbox) emit(c Change) {
	in.mu.Lock()
	if !in.closed {
		in.queue = append(in.queue, c)
	}
	switch {
	case c.Kind == KindMessage && !c.Removed:
		in.signalArrivedLocked()
	case c.Kind == KindTodo && !c.Removed && !c.quiet:
		in.signalArrivedLocked()
	}
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *Inbox) publish() {
	defer in.wg.Done()
	for {
		in.mu.Lock()
		q := in.queue
		in.queue = nil
		subs := make([]func(Change), 0, len(in.subs))
		for _, fn := range in.subs {
			subs = append(subs, fn)
		}
		in.mu.Unlock()
		for _, c := range q {
			for _, fn := range subs {
				fn(c)
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-in.wake:
		case <-in.done:
			// Close: emit queues nothing more; what was queued before it
			// (the ends of the jobs stopped at shutdown) is delivered
			// above first, as the loop comes back here only with none.
			in.mu.Lock()
			left := len(in.queue)
			in.mu.Unlock()
			if left > 0 {
				continue
			}
			return
		}
	}
}

// UpsertTodo raises or updates the todo (subsystem, key). A changed
// summary is published.
func (in *Inbox) UpsertTodo(ctx context.Context, subsystem, key, summary string) (store.Todo, error) {
	if subsystem == "" {
		return store.Todo{}, errdefs.New(errdefs.ErrInvalid, "subsystem: must not be empty")
	}
	if key == "" {
		return store.Todo{}, errdefs.New(errdefs.ErrInvalid, "key: must not be empty")
	}
	if summary == "" {
		return store.Todo{}, errdefs.New(errdefs.ErrInvalid, "summary: must not be empty")
	}
	switch {
	case len(subsystem) > MaxTodoSubsystem:
		return store.Todo{}, fmt.Errorf("subsystem: %d bytes, at most %d", len(subsystem), MaxTodoSubsystem)
	case len(key) > MaxTodoKey:
		return store.Todo{}, fmt.Errorf("key: %d bytes, at most %d", len(key), MaxTodoKey)
	case len(summary) > MaxTodoSummary:
		return store.Todo{}, fmt.Errorf("summary: %d bytes, at most %d", len(summary), MaxTodoSummary)
	}
	t, changed, err := in.st.UpsertTodoLimit(ctx, subsystem, key, summary, MaxTodos)
	if errors.Is(err, store.ErrFull) {
		return store.Todo{}, fmt.Errorf("%w: clear some first (clear_todo, hive todo clear, mark_todos_done)", err)
	}
	if err != nil {
		return store.Todo{}, err
	}
	if changed {
		in.emit(Change{Kind: KindTodo, Todo: t})
	}
	return t, nil
}

// Published publishes a todo that changed in a transaction of someone
// else's (the job engine writes a job's todo with its record). wake says
// whether the change is news a harness's Next should wake for.
func (in *Inbox) Published(t store.Todo, wake bool) {
	in.emit(Change{Kind: KindTodo, Todo: t, quiet: !wake})
}

// ClearKey clears the todo (subsystem, key) if there is one.
func (in *Inbox) ClearKey(ctx context.Context, subsystem, key string) error {
	_, err := in.ClearTodo(ctx, subsystem, key)
	return err
}

// ClearTodo is ClearKey that tells whether there was such a todo.
func (in *Inbox) ClearTodo(ctx context.Context, subsystem, key string) (cleared bool, err error) {
	t, deleted, err := in.st.DeleteTodoKey(ctx, subsystem, key)
	if err != nil {
		return false, err
	}
	if deleted {
		in.emit(Change{Kind: KindTodo, Todo: t, Removed: true})
	}
	return deleted, nil
}

// Cancel clears one loose end by kind and id: a todo is cleared, a
// reminder deleted (with its spill file), a message dropped unread.
func (in *Inbox) Cancel(ctx context.Context, kind string, id int64) error {
	switch kind {
	case KindTodo:
		n, err := in.MarkDone(ctx, []int64{id})
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("id %d: no todo has it: %w (get_loose_ends lists the open ones)", id, ErrNotFound)
		}
		return nil
	case KindReminder:
		return in.CancelReminder(ctx, id)
	case KindMessage:
		return in.DropMessage(ctx, id)
	}
	return errdefs.Newf(errdefs.ErrInvalid, "kind %q: must be %q, %q or %q", kind, KindReminder, KindTodo, KindMessage)
}

// MarkDone clears the todos with these ids; unknown ids are skipped. It
// returns how many were cleared.
func (in *Inbox) MarkDone(ctx context.Context, ids []int64) (int, error) {
	todos, err := in.st.ListTodos(ctx)
	if err != nil {
		return 0, err
	}
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	n, err := in.st.DeleteTodos(ctx, ids...)
	if err != nil {
		return 0, err
	}
	for _, t := range todos {
		if want[t.ID] {
			in.emit(Change{Kind: KindTodo, Todo: t, Removed: true})
		}
	}
	return n, nil
}

// Todos lists the open todos, oldest first.
func (in *Inbox) Todos(ctx context.Context) ([]store.Todo, error) {
	return in.st.ListTodos(ctx)
}
