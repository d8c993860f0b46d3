package inbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a store and a state dir that outlive the Inboxes made on them
// (as a daemon's restart).
type env struct {
	t  *testing.T
	st *store.Store
	l  paths.Layout
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	l := paths.Layout{Dir: dir}
	if err := l.MakeDirs(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(l.DB())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &env{t: t, st: st, l: l}
}

func (e *env) open(max int) *Inbox {
	e.t.Helper()
	in, err := New(Options{Store: e.st, Layout: e.l, RemindMax: max})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(in.Close)
	return in
}

// changes collects what an Inbox publishes.
func changes(in *Inbox) <-chan Change {
	ch := make(chan Change, 1024)
	in.Subscribe(func(c Change) { ch <- c })
	return ch
}

// waitFor waits for a published change that cond takes.
func waitFor(t *testing.T, ch <-chan Change, what string, cond func(Change) bool) Change {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if cond(c) {
				return c
			}
		case <-deadline:
			t.Fatalf("no change: %s", what)
		}
	}
}

// A reminder fires on time: it leaves the pending list and becomes a
// message from "reminder", published as it happens.
func TestReminderFires(t *testing.T) {
	e := newEnv(t)
	in := e.open(0)
	ch := changes(in)
	ctx := context.Background()
	due := time.Now().Add(300 * time.Millisecond)
	r, err := in.Remind(ctx, "look at the build", due)
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := in.Reminders(ctx); len(rs) != 1 || rs[0].ID != r.ID {
		t.Fatalf("pending %+v", rs)
	}
	c := waitFor(t, ch, "the reminder's message", func(c Change) bool { return c.Kind == KindMessage && !c.Removed })
	if late := time.Since(due); late > time.Second || late < 0 {
		t.Errorf("fired %v after its due time", late)
	}
	if c.Message.From != "reminder" || c.Message.Body != "look at the build" {
		t.Errorf("message %+v", c.Message)
	}
	if rs, _ := in.Reminders(ctx); len(rs) != 0 {
		t.Errorf("still pending after firing: %+v", rs)
	}
	ds, err := in.Read(ctx, 10)
	if err != nil || len(ds) != 1 || ds[0].Body != "look at the build" {
		t.Fatalf("read %+v %v", ds, err)
	}
	if n, _ := in.Undelivered(ctx); n != 0 {
		t.Errorf("%d undelivered after the read", n)
	}
}

// A reminder that fell due while no daemon ran fires at start; one not
// yet due is kept and fires on time.
func TestReminderDueWhileDown(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, _, err := e.st.AddReminder(ctx, store.Reminder{Body: "missed", Size: 6, Due: time.Now().Add(-time.Hour), Created: time.Now()}, 50); err != nil {
		t.Fatal(err)
	}
	in := e.open(0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, _ := in.Messages(ctx, 0)
		if len(ms) == 1 && ms[0].Body == "missed" && ms[0].From == "reminder" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the missed reminder did not fire at start: %+v", ms)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The pending reminders are capped; the one past the cap is refused,
// saying how many are pending and how to cancel. Bad times name the rule.
func TestReminderLimitsAndCancel(t *testing.T) {
	e := newEnv(t)
	in := e.open(3)
	ctx := context.Background()
	var ids []int64
	for range 3 {
		r, err := in.Remind(ctx, "x", time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	_, err := in.Remind(ctx, "x", time.Now().Add(time.Hour))
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "3 are pending") || !strings.Contains(err.Error(), "cancel_loose_end") {
		t.Errorf("the 4th of 3: %v", err)
	}
	if err := in.Cancel(ctx, KindReminder, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Remind(ctx, "x", time.Now().Add(time.Hour)); err != nil {
		t.Errorf("after a cancel: %v", err)
	}
	if err := in.Cancel(ctx, KindReminder, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel twice: %v", err)
	}
	for _, tt := range []struct {
		due  time.Time
		body string
		want string
	}{
		{time.Now().Add(-time.Second), "x", "not in the future"},
		{time.Now().Add(MaxAhead + time.Hour), "x", "more than a year ahead"},
		{time.Now().Add(time.Hour), "", "message: must not be empty"},
		{time.Now().Add(time.Hour), strings.Repeat("x", MaxBody+1), "message: 1048577 bytes, at most 1048576"},
	} {
		if _, err := in.Remind(ctx, tt.body, tt.due); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Remind(%.10q, %v): %v, want %q", tt.body, tt.due, err, tt.want)
		}
	}
	if err := in.Cancel(ctx, "reminders", 1); err == nil || !strings.Contains(err.Error(), `kind "reminders"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// A message over 4 KiB spills to its own 0600 file; the record keeps a
// preview and the path; the whole message is delivered, and the file goes
// with the reminder (cancelled) or the message (read).
func TestSpill(t *testing.T) {
	e := newEnv(t)
	in := e.open(0)
	ctx := context.Background()
	big := strings.Repeat("é", 3000) // 6000 bytes
	r, err := in.Remind(ctx, big, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(e.l.Reminders(), "1.md")
	if r.SpillPath != want || len(r.Body) > previewBytes || !strings.HasPrefix(big, r.Body) {
		t.Fatalf("reminder %q…, spill %q; want a preview and %s", r.Body[:10], r.SpillPath, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != int64(len(big)) {
		t.Fatalf("spill file: %v %v", fi, err)
	}
	if err := in.CancelReminder(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Errorf("spill file kept after the cancel: %v", err)
	}
	m, err := in.Wake(ctx, "ci", big)
	if err != nil {
		t.Fatal(err)
	}
	if m.SpillPath == "" {
		t.Fatal("a big wake did not spill")
	}
	ds, err := in.Read(ctx, 1)
	if err != nil || len(ds) != 1 || ds[0].Body != big {
		t.Fatalf("read of a spilled message: %d messages, %v", len(ds), err)
	}
	if _, err := os.Stat(m.SpillPath); !os.IsNotExist(err) {
		t.Errorf("spill file kept after the read: %v", err)
	}
}

// A message a harness took and never acked is delivered again after a
// restart; an acked one never. With no message, a changed todo wakes Next
// as a message from "loose-ends".
func TestNextAckAndRedelivery(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := e.open(0)
	for _, body := range []string{"one", "two"} {
		if _, err := in.Wake(ctx, "test", body); err != nil {
			t.Fatal(err)
		}
	}
	d1, ok, err := in.Next(ctx, false, 0)
	if err != nil || !ok || d1.Body != "one" {
		t.Fatalf("next: %+v %v %v", d1, ok, err)
	}
	if err := in.Ack(ctx, d1.ID); err != nil {
		t.Fatal(err)
	}
	d2, ok, _ := in.Next(ctx, false, 0)
	if !ok || d2.Body != "two" {
		t.Fatalf("second next: %+v", d2)
	}
	in.Close() // the daemon stops before the ack
	in = e.open(0)
	again, ok, _ := in.Next(ctx, false, 0)
	if !ok || again.ID != d2.ID || again.Body != "two" {
		t.Fatalf("after a restart: %+v %v, want message %d again", again, ok, d2.ID)
	}
	in.Ack(ctx, again.ID)
	if _, ok, _ := in.Next(ctx, false, 0); ok {
		t.Fatal("an acked message came again")
	}
	// Waiting: a todo that changes wakes it.
	got := make(chan Delivered, 1)
	go func() {
		d, _, _ := in.Next(ctx, true, 10*time.Second)
		got <- d
	}()
	if _, err := in.UpsertTodo(ctx, "ci", "build-7", "build 7 failed"); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.From != "loose-ends" || !strings.Contains(d.Body, "build 7 failed") {
			t.Errorf("todo wake: %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a changed todo did not wake Next")
	}
	if _, ok, _ := in.Next(ctx, false, 0); ok {
		t.Error("the todo change woke Next twice")
	}
	// A job's start is no news; its end is.
	in.Published(store.Todo{Subsystem: "bash", Key: "j1", Summary: "task j1 running"}, false)
	if d, ok, _ := in.Next(ctx, false, 0); ok {
		t.Errorf("a job's start woke Next: %+v", d)
	}
	in.Published(store.Todo{Subsystem: "bash", Key: "j1", Summary: "task j1 done, exit 0"}, true)
	if d, ok, _ := in.Next(ctx, false, 0); !ok || !strings.Contains(d.Body, "task j1 done") || strings.Contains(d.Body, "running") {
		t.Errorf("a job's end: %+v %v", d, ok)
	}
}

func TestWakeChecks(t *testing.T) {
	e := newEnv(t)
	in := e.open(0)
	ctx := context.Background()
	for _, tt := range []struct{ from, body, want string }{
		{"", "x", `from "": must be 1-64 characters`},
		{"has space", "x", "must be 1-64 characters"},
		{strings.Repeat("a", 65), "x", "must be 1-64"},
		{"ci", "", "body: must not be empty"},
		{"ci", strings.Repeat("x", MaxBody+1), "body: 1048577 bytes, at most 1048576"},
	} {
		if _, err := in.Wake(ctx, tt.from, tt.body); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Wake(%q, %.10q): %v, want %q", tt.from, tt.body, err, tt.want)
		}
	}
	if _, err := in.Wake(ctx, "user@host:ci-7.a_b", "ok"); err != nil {
		t.Errorf("a full label: %v", err)
	}
}
