package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/hivetest"
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
	if late := time.Since(r.Due); late > time.Second || late < 0 { // r.Due: due to the millisecond, as stored
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
	if _, _, _, err := e.st.AddReminder(ctx, store.Reminder{Body: "missed", Size: 6, Due: time.Now().Add(-time.Hour), Created: time.Now()}, 50, nil); err != nil {
		t.Fatal(err)
	}
	in := e.open(0)
	hivetest.Eventually(t, 10*time.Second, "the missed reminder to fire at start", func() error {
		if ms, err := in.Messages(ctx, 0); err != nil || len(ms) != 1 || ms[0].Body != "missed" || ms[0].From != "reminder" {
			return fmt.Errorf("messages: %+v (%v)", ms, err)
		}
		return nil
	})
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
	// A job's start is no news; its end is (the job engine writes its
	// todo with its record, as news only at the end).
	job := func(summary string, end bool) {
		t.Helper()
		tt := store.Todo{Subsystem: "bash", Key: "j1", Summary: summary, News: end}
		changed, err := e.st.PutJobs(ctx, nil, []store.Todo{tt})
		if err != nil || len(changed) != 1 {
			t.Fatalf("put todo: %v %v", changed, err)
		}
		in.Published(changed[0], end)
	}
	job("task j1 running", false)
	if d, ok, _ := in.Next(ctx, false, 0); ok {
		t.Errorf("a job's start woke Next: %+v", d)
	}
	job("task j1 done, exit 0", true)
	if d, ok, _ := in.Next(ctx, false, 0); !ok || !strings.Contains(d.Body, "task j1 done") || strings.Contains(d.Body, "running") {
		t.Errorf("a job's end: %+v %v", d, ok)
	}
}

// The news a harness wakes for is durable and true: a todo cleared before
// the next turn is no news, one changed while the daemon was down still
// is, and one message lists a bounded number of them.
func TestTodoNews(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := e.open(0)
	if _, err := in.UpsertTodo(ctx, "ci", "b1", "build failed"); err != nil {
		t.Fatal(err)
	}
	if err := in.ClearKey(ctx, "ci", "b1"); err != nil {
		t.Fatal(err)
	}
	if d, ok, err := in.Next(ctx, false, 0); ok || err != nil {
		t.Fatalf("a cleared todo woke Next: %+v %v", d, err)
	}
	if _, err := in.UpsertTodo(ctx, "ci", "b2", "build 2 failed"); err != nil {
		t.Fatal(err)
	}
	in.Close() // a restart before the harness's next turn
	in = e.open(0)
	d, ok, err := in.Next(ctx, false, 0)
	if err != nil || !ok || d.From != "loose-ends" || !strings.Contains(d.Body, "ci/b2: build 2 failed") {
		t.Fatalf("after a restart: %+v %v %v", d, ok, err)
	}
	for i := range maxNews + 5 {
		if _, err := in.UpsertTodo(ctx, "ci", fmt.Sprintf("k%d", i), "changed"); err != nil {
			t.Fatal(err)
		}
	}
	d, ok, _ = in.Next(ctx, false, 0)
	if !ok || strings.Count(d.Body, "\n") != maxNews || !strings.Contains(d.Body, "and 5 more changed todos") {
		t.Errorf("many changes: %q", d.Body)
	}
	if _, ok, _ := in.Next(ctx, false, 0); ok {
		t.Error("the news came twice")
	}
	// The bounds of a producer's todo name the field.
	for _, tt := range []struct{ sub, key, sum, want string }{
		{strings.Repeat("s", MaxTodoSubsystem+1), "k", "x", "subsystem: 65 bytes"},
		{"ci", strings.Repeat("k", MaxTodoKey+1), "x", "key: 257 bytes"},
		{"ci", "k", strings.Repeat("x", MaxTodoSummary+1), "summary: 16385 bytes"},
	} {
		if _, err := in.UpsertTodo(ctx, tt.sub, tt.key, tt.sum); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("UpsertTodo(%.10q, %.10q, %.10q): %v, want %q", tt.sub, tt.key, tt.sum, err, tt.want)
		}
	}
}

// read_inbox is atomic: sessions reading at once get each message once,
// and none that a harness holds in flight.
func TestReadIsAtomic(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := e.open(0)
	const n = 300
	for i := range n {
		if _, err := in.Wake(ctx, "test", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	held, ok, err := in.Next(ctx, false, 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	seen := make(chan string, 2*n)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := in.Read(ctx, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				for _, d := range ds {
					seen <- d.Body
				}
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := map[string]int{}
	for b := range seen {
		got[b]++
	}
	if len(got) != n-1 || got[held.Body] != 0 {
		t.Errorf("read %d distinct messages (want %d); the one in flight read %d times", len(got), n-1, got[held.Body])
	}
	for b, c := range got {
		if c != 1 {
			t.Errorf("message %s read %d times", b, c)
		}
	}
	if err := in.Ack(ctx, held.ID); err != nil {
		t.Errorf("ack of the message in flight: %v", err)
	}
	// Ack takes only a message in flight.
	m, _ := in.Wake(ctx, "test", "queued")
	if err := in.Ack(ctx, m.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("ack of a queued message: %v", err)
	}
}

// A spilled body is never seen without its file: a harness popping while
// a producer wakes with big bodies gets every body whole; a spill file no
// record names (a daemon killed while writing it) is removed at start.
func TestSpillIsAtomic(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := e.open(0)
	big := strings.Repeat("0123456789abcdef", 64<<10/16)
	const n = 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			if _, err := in.Wake(ctx, "ci", big); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for got := 0; got < n; {
		d, ok, err := in.Next(ctx, true, 10*time.Second)
		if err != nil || !ok {
			t.Fatalf("next: %v %v", ok, err)
		}
		if d.From == "loose-ends" {
			continue
		}
		if d.Body != big {
			t.Fatalf("message %d delivered with %d of %d bytes", d.ID, len(d.Body), len(big))
		}
		if err := in.Ack(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		got++
	}
	<-done
	if ents, _ := os.ReadDir(e.l.Inbox()); len(ents) != 0 {
		t.Errorf("%d spill files left after every message was acked", len(ents))
	}
	orphan := filepath.Join(e.l.Inbox(), "999.md")
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	keep, _ := in.Wake(ctx, "ci", big)
	in.Close()
	in = e.open(0)
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphan spill file is still there: %v", err)
	}
	if _, err := os.Stat(keep.SpillPath); err != nil {
		t.Errorf("a queued message's spill file went: %v", err)
	}
}

// The graceful-stop message is born in flight: only the harness that
// asked for it has it; read_inbox does not take it from the harness.
func TestGracefulStopInFlight(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	in := e.open(0)
	m, err := in.GracefulStop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ds, _ := in.Read(ctx, 10); len(ds) != 0 {
		t.Errorf("read_inbox took the graceful stop: %+v", ds)
	}
	if n, _ := in.Undelivered(ctx); n != 0 {
		t.Errorf("%d undelivered", n)
	}
	if err := in.Ack(ctx, m.ID); err != nil {
		t.Errorf("the harness's ack: %v", err)
	}
	// Requeue (a new loop) gives back what a dead one held.
	w, _ := in.Wake(ctx, "ci", "held")
	if d, ok, _ := in.Next(ctx, false, 0); !ok || d.ID != w.ID {
		t.Fatal("next", d, ok)
	}
	if n, err := in.Requeue(ctx); n != 1 || err != nil {
		t.Fatalf("requeue: %d %v", n, err)
	}
	if d, ok, _ := in.Next(ctx, false, 0); !ok || d.ID != w.ID {
		t.Errorf("after requeue: %+v %v", d, ok)
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
