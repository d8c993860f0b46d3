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

	"github.com/hivetools/hive/internal/store"
)

// fromRE is the rule for a message's sender label.
var fromRE = regexp.MustCompile(`^[A-Za-z0-9._@:-]{1,64}$`)

// CheckFrom validates a sender label: 1-64 of [A-Za-z0-9._@:-].
func CheckFrom(from string) error {
	if !fromRE.MatchString(from) {
		return fmt.Errorf("from %q: must be 1-64 characters of A-Z a-z 0-9 . _ @ : -", from)
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
	return in.add(ctx, from, body)
}

// add appends a message from anyone (labels of hive's own, like
// "graceful-stop", pass CheckFrom too).
func (in *Inbox) add(ctx context.Context, from, body string) (store.Message, error) {
	switch {
	case body == "":
		return store.Message{}, errors.New("body: must not be empty")
	case len(body) > MaxBody:
		return store.Message{}, fmt.Errorf("body: %d bytes, at most %d", len(body), MaxBody)
	}
	m := store.Message{From: from, Body: body, Size: int64(len(body)), At: time.Now().Truncate(time.Millisecond)}
	spill := len(body) > SpillOver
	if spill {
		m.Body = preview(body)
	}
	id, err := in.st.AddMessage(ctx, m)
	if err != nil {
		return store.Message{}, err
	}
	m.ID = id
	if spill {
		path := filepath.Join(in.o.Layout.Inbox(), strconv.FormatInt(id, 10)+".md")
		if err := writeSpill(path, body); err != nil {
			in.st.DeleteMessages(ctx, id)
			return store.Message{}, err
		}
		if err := in.st.SetMessageSpill(ctx, id, path); err != nil {
			os.Remove(path)
			in.st.DeleteMessages(ctx, id)
			return store.Message{}, err
		}
		m.SpillPath = path
	}
	in.emit(Change{Kind: KindMessage, Message: m})
	return m, nil
}

// GracefulStop appends the message that tells the agent to flush its
// state and end its turn: the harness delivers it last.
func (in *Inbox) GracefulStop(ctx context.Context) (store.Message, error) {
	return in.add(ctx, "graceful-stop", "The harness is stopping: write down what you need to resume (notes, state files), finish or park what you started, and end this turn.")
}

// Messages lists undelivered messages (not in flight), oldest first, at
// most limit (<= 0: all), with their previews.
func (in *Inbox) Messages(ctx context.Context, limit int) ([]store.Message, error) {
	return in.st.Messages(ctx, limit, false)
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
		return nil, fmt.Errorf("max %d: must be >= 1", max)
	}
	ms, err := in.st.Messages(ctx, max, false)
	if err != nil {
		return nil, err
	}
	var out []Delivered
	total := int64(0)
	for _, m := range ms {
		if len(out) > 0 && total+m.Size > maxRead {
			break
		}
		out = append(out, Delivered{Message: m, Body: in.body(m)})
		total += m.Size
	}
	ids := make([]int64, len(out))
	for i, d := range out {
		ids[i] = d.ID
	}
	if err := in.remove(ctx, ids...); err != nil {
		return nil, err
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

// remove deletes messages with their spill files, and publishes it.
func (in *Inbox) remove(ctx context.Context, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	gone, err := in.st.DeleteMessages(ctx, ids...)
	if err != nil {
		return err
	}
	for _, m := range gone {
		if m.SpillPath != "" {
			os.Remove(m.SpillPath)
		}
		in.emit(Change{Kind: KindMessage, Message: m, Removed: true})
	}
	return nil
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
			return Delivered{}, false, errors.New("the inbox is closed: the daemon is stopping")
		}
		m, ok, err := in.st.TakeMessage(ctx)
		if err != nil {
			return Delivered{}, false, err
		}
		if ok {
			in.emit(Change{Kind: KindMessage, Message: m, Removed: true})
			return Delivered{Message: m, Body: in.body(m)}, true, nil
		}
		if d, ok := in.takeDirty(); ok {
			return d, true, nil
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

// takeDirty makes the loose-ends message of the todos changed since the
// last Next, if any.
func (in *Inbox) takeDirty() (Delivered, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.dirtyOrder) == 0 {
		return Delivered{}, false
	}
	var b strings.Builder
	for _, k := range in.dirtyOrder {
		fmt.Fprintf(&b, "todo %s: %s\n", k, in.dirty[k])
	}
	in.dirty, in.dirtyOrder = map[string]string{}, nil
	body := strings.TrimRight(b.String(), "\n")
	return Delivered{Message: store.Message{From: "loose-ends", Body: body, Size: int64(len(body)), At: time.Now()}, Body: body}, true
}

// Ack removes a message Next delivered.
func (in *Inbox) Ack(ctx context.Context, id int64) error {
	gone, err := in.st.DeleteMessages(ctx, id)
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		return fmt.Errorf("id %d: no message in the inbox has it: %w (acked already?)", id, ErrNotFound)
	}
	if p := gone[0].SpillPath; p != "" {
		os.Remove(p)
	}
	return nil
}
