package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/store"
)

// fromRE is the rule for a message's sender label.
var fromRE = regexp.MustCompile(`^[A-Za-z0-9._@:-]{1,64}$`)

// CheckFrom validates a sender label: 1-64 of [A-Za-z0-9._@:-].
func CheckFrom(from string) error {
	if !fromRE.MatchString(from) {
		return errdefs.Newf(errdefs.ErrInvalid, "from %q: must be 1-64 characters of A-Z a-z 0-9 . _ @ : -", from)
	}
	return nil
}

// Wake appends a message to the inbox: what a local program (a CI
// watcher, a chat bridge) sends the agent. from is checked with
// CheckFrom; body is 1 byte to 1 MiB, and over 4 KiB spills to
// inbox/<id>.md.
func (in *Inbox) Wake(ctx context.Context, from, body string) (store.Message, error) {
	if err := CheckFrom(from); err != nil {
		return store.Message{}, err
	}
	return in.add(ctx, from, body, false)
}

// add appends a message from anyone (labels of hive's own, like
// "graceful-stop", pass CheckFrom too), in flight if asked.
func (in *Inbox) add(ctx context.Context, from, body string, inFlight bool) (store.Message, error) {
	switch {
	case body == "":
		return store.Message{}, errdefs.New(errdefs.ErrInvalid, "body: must not be empty")
	case len(body) > MaxBody:
		return store.Message{}, fmt.Errorf("body: %d bytes, at most %d", len(body), MaxBody)
	}
	m := store.Message{From: from, Body: body, Size: int64(len(body)), At: time.Now().Truncate(time.Millisecond), InFlight: inFlight}
	var spill store.Spill
	if len(body) > SpillOver {
		m.Body = preview(body)
		spill = func(id int64) (string, error) {
			m.SpillPath = filepath.Join(in.o.Layout.Inbox(), strconv.FormatInt(id, 10)+".md")
			return m.SpillPath, writeSpill(m.SpillPath, body)
		}
	}
	id, err := in.st.AddMessage(ctx, m, in.o.InboxMax, spill)
	if err != nil {
		if m.SpillPath != "" {
			os.Remove(m.SpillPath)
		}
		if errors.Is(err, store.ErrFull) {
			return store.Message{}, fmt.Errorf("%w: read_inbox or hive inbox next takes them", err)
		}
		return store.Message{}, err
	}
	m.ID = id
	if inFlight {
		return m, nil // the harness takes it at once; no session hears of it
	}
	in.emit(Change{Kind: KindMessage, Message: m})
	return m, nil
}

// GracefulStop appends the message that tells the agent to flush its
// state and end its turn, already in flight: the harness that asked for
// it delivers it as its last turn and acks it (read_inbox never sees it;
// one never acked is delivered again after a restart, like any other).
func (in *Inbox) GracefulStop(ctx context.Context) (store.Message, error) {
	return in.add(ctx, "graceful-stop", "The harness is stopping: write down what you need to resume (notes, state files), finish or park what you started, and end this turn.", true)
}

// Messages lists undelivered messages (not in flight), oldest first, at
// most limit (<= 0: all), with their previews.
func (in *Inbox) Messages(ctx context.Context, limit int) ([]store.Message, error) {
	return in.st.Messages(ctx, limit, false)
}

// AllMessages lists every message, in flight or not, oldest first, at
// most limit (<= 0: all), with their previews.
func (in *Inbox) AllMessages(ctx context.Context, limit int) ([]store.Message, error) {
	return in.st.Messages(ctx, limit, true)
}

// Undelivered counts the messages not yet delivered.
func (in *Inbox) Undelivered(ctx context.Context) (int, error) {
	return in.st.CountMessages(ctx)
}

// Delivered is a message with its whole body.
type Delivered struct {
	store.Message
	Body string
}

// maxRead bounds the bodies one Read returns together.
const maxRead = 1 << 20

// Read returns the oldest undelivered messages, at most max, with their
// whole bodies (together at most 1 MiB, but always at least one), and acks
// them: they leave the inbox. It is how an MCP client without a harness
// receives its messages (read_inbox).
func (in *Inbox) Read(ctx context.Context, max int) ([]Delivered, error) {
	if max <= 0 {
		return nil, errdefs.Newf(errdefs.ErrInvalid, "max %d: must be >= 1", max)
	}
	ms, err := in.st.ReadMessages(ctx, max, maxRead)
	if err != nil {
		return nil, err
	}
	out := make([]Delivered, len(ms))
	for i, m := range ms {
		out[i] = Delivered{Message: m, Body: in.body(m)}
		if m.SpillPath != "" {
			os.Remove(m.SpillPath)
		}
		in.emit(Change{Kind: KindMessage, Message: m, Removed: true})
	}
	return out, nil
}

// body is a message's whole body.
func (in *Inbox) body(m store.Message) string {
	if m.SpillPath == "" {
		return m.Body
	}
	return readSpill(m.SpillPath, m.Body, m.Size)
}

// DropMessage drops one message unread (in flight or not).
func (in *Inbox) DropMessage(ctx context.Context, id int64) error {
	gone, err := in.st.DeleteMessages(ctx, id)
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		return fmt.Errorf("id %d: no message in the inbox has it: %w (get_loose_ends lists them)", id, ErrNotFound)
	}
	if p := gone[0].SpillPath; p != "" {
		os.Remove(p)
	}
	in.emit(Change{Kind: KindMessage, Message: gone[0], Removed: true})
	return nil
}

// Next pops the oldest undelivered message for a harness's turn and marks
// it in flight: Ack removes it; one never acked is delivered again after a
// restart. With no message queued, todos whose summary changed since the
// last Next (a job ended, a program raised one) make one message, from
// "loose-ends", that is not stored (the todos are). With wait, Next waits
// up to timeout (zero: no limit) for either, or until ctx ends; ok is false
// when nothing came.
func (in *Inbox) Next(ctx context.Context, wait bool, timeout time.Duration) (d Delivered, ok bool, err error) {
	var deadline <-chan time.Time
	if wait && timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		in.mu.Lock()
		arrived, closed := in.arrived, in.closed
		in.mu.Unlock()
		if closed {
			return Delivered{}, false, errdefs.New(errdefs.ErrUnavailable, "the inbox is closed: the daemon is stopping")
		}
		m, ok, err := in.st.TakeMessage(ctx)
		if err != nil {
			return Delivered{}, false, err
		}
		if ok {
			in.emit(Change{Kind: KindMessage, Message: m, Removed: true})
			return Delivered{Message: m, Body: in.body(m)}, true, nil
		}
		if d, ok, err := in.takeDirty(ctx); err != nil || ok {
			return d, ok, err
		}
		if !wait {
			return Delivered{}, false, nil
		}
		select {
		case <-arrived:
		case <-deadline:
			return Delivered{}, false, nil
		case <-ctx.Done():
			return Delivered{}, false, ctx.Err()
		}
	}
}

// maxNews bounds the todos one loose-ends message lists.
const maxNews = 20

// takeDirty makes the loose-ends message of the todos changed (as news)
// since the last Next, if any, and unmarks them.
func (in *Inbox) takeDirty(ctx context.Context) (Delivered, bool, error) {
	news, more, err := in.st.TakeNews(ctx, maxNews)
	if err != nil || len(news) == 0 {
		return Delivered{}, false, err
	}
	var b strings.Builder
	for _, t := range news {
		fmt.Fprintf(&b, "todo %s/%s: %s\n", t.Subsystem, t.Key, clipLine(t.Summary))
	}
	if more > 0 {
		fmt.Fprintf(&b, "and %d more changed todos (get_loose_ends lists them)\n", more)
	}
	body := strings.TrimRight(b.String(), "\n")
	return Delivered{Message: store.Message{From: "loose-ends", Body: body, Size: int64(len(body)), At: time.Now()}, Body: body}, true, nil
}

// clipLine bounds one todo's summary in a loose-ends message.
func clipLine(s string) string {
	if len(s) <= previewBytes {
		return s
	}
	return preview(s) + " [...]"
}

// Ack removes a message Next delivered (in flight). One that is gone
// (dropped by cancel_loose_end meanwhile) is ErrNotFound.
func (in *Inbox) Ack(ctx context.Context, id int64) error {
	m, err := in.st.AckMessage(ctx, id)
	if store.IsNotFound(err) {
		return fmt.Errorf("id %d: no message in flight has it: %w (acked already, or dropped)", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if m.SpillPath != "" {
		os.Remove(m.SpillPath)
	}
	return nil
}

// Requeue puts every message in flight back in the queue, as a daemon
// start does: what a harness that died mid-turn had popped is delivered
// again. It returns how many; a change is published for each session to
// look again.
func (in *Inbox) Requeue(ctx context.Context) (int, error) {
	n, err := in.st.RequeueInFlight(ctx)
	if err != nil || n == 0 {
		return n, err
	}
	// Sessions look again (the undelivered count grew); Next wakes.
	in.emit(Change{Kind: KindMessage, Removed: true})
	in.mu.Lock()
	in.signalArrivedLocked()
	in.mu.Unlock()
	return n, nil
}

// RemoveOrphanSpills deletes the files in reminders/ and inbox/ that no
// reminder or message refers to (a daemon killed between writing one and
// committing its row), and returns how many.
func (in *Inbox) RemoveOrphanSpills(ctx context.Context) (int, error) {
	keep, err := in.st.SpillPaths(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, dir := range []string{in.o.Layout.Reminders(), in.o.Layout.Inbox()} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // none yet
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".md") || keep[p] {
				continue
			}
			if os.Remove(p) == nil {
				n++
			}
		}
	}
	return n, nil
}
