package service

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/store"
)

// The inbox's records through the Service: each in its view, a message
// whole only where it is read whole, changes pushed as views, the
// engine's error classes kept.
func TestInboxThroughTheService(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	changes := make(chan Change, 64)
	cancel := s.Subscribe(func(c Change) { changes <- c })
	defer cancel()
	next := func(kind string) Change {
		t.Helper()
		for {
			select {
			case c := <-changes:
				if c.Kind == kind {
					return c
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s change", kind)
			}
		}
	}

	td, err := s.UpsertTodo(ctx, "ci", "build-7", "build 7 failed")
	if err != nil || td.ID == 0 || td.Summary != "build 7 failed" {
		t.Fatalf("UpsertTodo: %+v %v", td, err)
	}
	if c := next(ChangeTodo); c.Todo.Key != "build-7" || c.Removed {
		t.Errorf("the todo's change: %+v", c)
	}
	todos, err := s.Todos(ctx)
	if err != nil || len(todos) != 1 || todos[0].ID != td.ID {
		t.Errorf("Todos: %+v %v", todos, err)
	}
	if n, err := s.MarkTodosDone(ctx, []int64{td.ID, 999}); n != 1 || err != nil {
		t.Errorf("MarkTodosDone: %d %v, want 1", n, err)
	}
	if c := next(ChangeTodo); !c.Removed {
		t.Errorf("the todo's clearing: %+v", c)
	}
	if _, err := s.UpsertTodo(ctx, "", "k", "x"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("UpsertTodo without a subsystem: %v, want invalid", err)
	}

	body := "line one\n\n  line two " + strings.Repeat("x", 200)
	m, err := s.Send(ctx, "ci-watcher", body)
	if err != nil || m.ID == 0 || m.Body != "" || !strings.HasPrefix(m.Preview, "line one line two") {
		t.Fatalf("Send: %+v %v, want a preview and no body", m, err)
	}
	if c := next(ChangeMessage); c.Message.ID != m.ID || c.Message.Body != "" || c.Message.Preview != m.Preview {
		t.Errorf("the message's change: %+v, want its preview", c)
	}
	if ms, err := s.Messages(ctx, 10); err != nil || len(ms) != 1 || ms[0].Body != "" || ms[0].Preview != m.Preview {
		t.Errorf("Messages: %+v %v", ms, err)
	}
	if w, err := s.Message(ctx, m.ID); err != nil || w.Body != body || w.Preview != "" {
		t.Errorf("Message: %+v %v, want the whole body", w, err)
	}
	got, ok, err := s.NextMessage(ctx, false, 0)
	if err != nil || !ok || got.ID != m.ID || got.Body != body {
		t.Fatalf("NextMessage: %+v %v %v", got, ok, err)
	}
	if err := s.AckMessage(ctx, m.ID); err != nil {
		t.Errorf("AckMessage: %v", err)
	}
	if _, ok, err := s.NextMessage(ctx, false, 0); ok || err != nil {
		t.Errorf("NextMessage of an empty inbox: %v %v", ok, err)
	}
	if _, err := s.Message(ctx, m.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Message of an acked message: %v, want not found", err)
	}

	r, err := s.Remind(ctx, "look at the build", time.Now().Add(time.Hour))
	if err != nil || r.ID == 0 || r.Preview != "look at the build" {
		t.Fatalf("Remind: %+v %v", r, err)
	}
	if c := next(ChangeReminder); c.Reminder.ID != r.ID || c.Reminder.Preview != r.Preview {
		t.Errorf("the reminder's change: %+v", c)
	}
	if le, err := s.LooseEnds(ctx, 5); err != nil || len(le.Reminders) != 1 || le.Reminders[0].ID != r.ID {
		t.Errorf("LooseEnds: %+v %v", le, err)
	}
	if err := s.CancelReminder(ctx, r.ID); err != nil {
		t.Errorf("CancelReminder: %v", err)
	}
	if err := s.CancelLooseEnd(ctx, "reminder", r.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("CancelLooseEnd of a cancelled reminder: %v, want not found", err)
	}
}

// AgentState is the engine's state field for field: the dashboard's
// "agent" event encodes it as it encoded the engine's.
func TestAgentStateIsTheEngines(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, ok := s.AgentState(); ok {
		t.Fatal("AgentState of a Service without an agent: ok")
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := agent.New(ctx, st, s.Layout, "tester")
	if err != nil {
		t.Fatal(err)
	}
	s.Agent = a
	if _, err := s.SetStatus(ctx, "reviewing"); err != nil {
		t.Fatal(err)
	}
	usage := 0.8
	if pending, err := s.SetTurn(ctx, agent.Thinking, &usage); err != nil || pending {
		t.Fatalf("SetTurn: %v %v", pending, err)
	}
	c, err := s.Compact(ctx)
	if err != nil || !c.CompactPending {
		t.Fatalf("Compact at 80%%: %+v %v", c, err)
	}
	got, ok := s.AgentState()
	if !ok || got.Name != "tester" || got.StatusText != "reviewing" || got.Turn != agent.Thinking {
		t.Fatalf("AgentState: %+v %v", got, ok)
	}
	want, _ := json.Marshal(a.State())
	have, _ := json.Marshal(got)
	if string(have) != string(want) {
		t.Errorf("AgentState encodes as\n%s\nthe engine's state as\n%s", have, want)
	}
}
