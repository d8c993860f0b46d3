// Package inbox keeps the agent's loose ends: keyed todos raised by jobs
// and by other local programs. Every change is published to subscribers
// (the MCP sessions), in order, from one goroutine the Inbox owns.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hivetools/hive/internal/store"
)

// ErrNotFound is returned for an unknown loose end.
var ErrNotFound = errors.New("no such loose end")

// Change is one published change.
type Change struct {
	Todo    store.Todo
	Removed bool // the todo was cleared
}

// Inbox is safe for concurrent use. Close it to stop its publisher.
type Inbox struct {
	st *store.Store

	mu     sync.Mutex
	subs   map[int]func(Change)
	nextID int
	queue  []Change
	wake   chan struct{}
	done   chan struct{}
	closed bool
	wg     sync.WaitGroup
}

// New returns an Inbox on st and starts its publisher.
func New(st *store.Store) *Inbox {
	in := &Inbox{st: st, subs: map[int]func(Change){}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	in.wg.Add(1)
	go in.publish()
	return in
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
	in.mu.Unlock()
	in.wg.Wait()
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
			return
		}
	}
}

// UpsertTodo raises or updates the todo (subsystem, key). A changed
// summary is published.
func (in *Inbox) UpsertTodo(ctx context.Context, subsystem, key, summary string) (store.Todo, error) {
	if subsystem == "" {
		return store.Todo{}, errors.New("subsystem: must not be empty")
	}
	if key == "" {
		return store.Todo{}, errors.New("key: must not be empty")
	}
	if summary == "" {
		return store.Todo{}, errors.New("summary: must not be empty")
	}
	t, changed, err := in.st.UpsertTodo(ctx, subsystem, key, summary)
	if err != nil {
		return store.Todo{}, err
	}
	if changed {
		in.emit(Change{Todo: t})
	}
	return t, nil
}

// Published publishes a todo that changed in a transaction of someone
// else's (the job engine writes a job's todo with its record).
func (in *Inbox) Published(t store.Todo) {
	in.emit(Change{Todo: t})
}

// ClearKey clears the todo (subsystem, key) if there is one.
func (in *Inbox) ClearKey(ctx context.Context, subsystem, key string) error {
	deleted, err := in.st.DeleteTodoKey(ctx, subsystem, key)
	if err != nil {
		return err
	}
	if deleted {
		in.emit(Change{Todo: store.Todo{Subsystem: subsystem, Key: key}, Removed: true})
	}
	return nil
}

// Cancel clears one loose end by kind and id. Only kind "todo" exists so far.
func (in *Inbox) Cancel(ctx context.Context, kind string, id int64) error {
	if kind != "todo" {
		return fmt.Errorf("kind %q: must be \"todo\"", kind)
	}
	n, err := in.MarkDone(ctx, []int64{id})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("id %d: %w (get_loose_ends lists the open ones)", id, ErrNotFound)
	}
	return nil
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
			in.emit(Change{Todo: t, Removed: true})
		}
	}
	return n, nil
}

// Todos lists the open todos, oldest first.
func (in *Inbox) Todos(ctx context.Context) ([]store.Todo, error) {
	return in.st.ListTodos(ctx)
}
