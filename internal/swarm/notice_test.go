package swarm

import (
	"testing"

	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

func newTest(t *testing.T, buffer int) *Swarm {
	t.Helper()
	s, err := New(Options{Conn: Conn{URL: "nats://127.0.0.1:1", Swarm: "farm"}, Name: "ant", Buffer: buffer})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// While NATS is away the queue keeps the newest notices up to its bound;
// the oldest go, counted, and the next notice published says how many.
func TestQueueBound(t *testing.T) {
	s := newTest(t, 3)
	for _, st := range []string{"a", "b", "c", "d", "e"} {
		s.event(service.Event{Kind: service.EventStatus, Status: st})
	}
	if got := s.Dropped(); got != 2 {
		t.Errorf("Dropped() = %d, want 2", got)
	}
	var got []string
	for _, n := range s.queue {
		got = append(got, *n.Status)
		if n.Agent != "ant" || n.Kind != KindStatus || n.id == "" || n.At.IsZero() {
			t.Errorf("queued notice %+v: want agent ant, kind status, an id and a time", n)
		}
	}
	if len(got) != 3 || got[0] != "c" || got[2] != "e" {
		t.Errorf("queued %v, want [c d e]", got)
	}
	if s.dropped != 2 {
		t.Errorf("dropped since the last publish %d, want 2", s.dropped)
	}
}

// A job is news when it first runs and once when it ends, whatever
// records of it are committed again; a turn only when it changes.
func TestJobAndTurnNews(t *testing.T) {
	s := newTest(t, 100)
	job := func(id, state string) {
		s.event(service.Event{Kind: service.EventJob, Job: view.Job{ID: id, State: state, Cmd: "make"}})
	}
	job("j1", "pending")
	job("j1", "running")
	job("j1", "running")
	job("j1", "done")
	job("j1", "done")
	job("j2", "done") // start and end in one commit
	s.event(service.Event{Kind: service.EventTurn, Turn: "thinking"})
	s.event(service.Event{Kind: service.EventTurn, Turn: "thinking"})
	s.event(service.Event{Kind: service.EventTurn, Turn: "idle"})
	var got []string
	for _, n := range s.queue {
		k := n.Kind
		if n.Job != nil {
			k += ":" + n.Job.ID
		}
		if n.Turn != "" {
			k += ":" + n.Turn
		}
		got = append(got, k)
	}
	want := []string{"job_started:j1", "job_ended:j1", "job_ended:j2", "turn:thinking", "turn:idle"}
	if len(got) != len(want) {
		t.Fatalf("notices %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notices %v, want %v", got, want)
		}
	}
	if len(s.jobs) != 0 {
		t.Errorf("jobs still tracked after their end: %v", s.jobs)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Conn
		ok   bool
	}{
		{"ok", Conn{URL: "nats://h:4222", Swarm: "farm-1"}, true},
		{"no url", Conn{Swarm: "farm"}, false},
		{"no swarm", Conn{URL: "nats://h:4222"}, false},
		{"dot in swarm", Conn{URL: "nats://h:4222", Swarm: "a.b"}, false},
		{"wildcard", Conn{URL: "nats://h:4222", Swarm: "*"}, false},
		{"creds and token", Conn{URL: "nats://h:4222", Swarm: "farm", CredsFile: "c", TokenFile: "t"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.c.Check(); (err == nil) != tc.ok {
				t.Errorf("Check() = %v, want ok %v", err, tc.ok)
			}
		})
	}
	if err := CheckAgent("ant.1"); err == nil {
		t.Error("CheckAgent(ant.1) = nil, want an error (a dot splits a subject)")
	}
}
