package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/store"
)

// Limits of reminders and messages.
const (
	// MaxBody bounds a reminder's message and a message's body.
	MaxBody = 1 << 20
	// SpillOver is the size past which a body goes to a file of its own
	// (the record keeps a preview and the path).
	SpillOver = 4 << 10
	// previewBytes is how much of a spilled body the record keeps.
	previewBytes = 512
	// MaxAhead is how far ahead a reminder may be due.
	MaxAhead = 365 * 24 * time.Hour
)

// ErrTooMany is returned by Remind when the pending reminders are at the
// cap; the error says how many and how to cancel.
var ErrTooMany = errors.New("too many pending reminders")

// Remind schedules a reminder: at due, message becomes an inbox message
// from "reminder". due must be in the future and at most a year ahead.
// A message over 4 KiB spills to reminders/<id>.md (0600).
func (in *Inbox) Remind(ctx context.Context, message string, due time.Time) (store.Reminder, error) {
	now := time.Now()
	switch {
	case message == "":
		return store.Reminder{}, errdefs.New(errdefs.ErrInvalid, "message: must not be empty")
	case len(message) > MaxBody:
		return store.Reminder{}, fmt.Errorf("message: %d bytes, at most %d", len(message), MaxBody)
	case !due.After(now):
		return store.Reminder{}, fmt.Errorf("due time %s: is not in the future", due.Format(time.RFC3339))
	case due.Sub(now) > MaxAhead:
		return store.Reminder{}, fmt.Errorf("due time %s: more than a year ahead", due.Format(time.RFC3339))
	}
	r := store.Reminder{Body: message, Size: int64(len(message)), Due: due.Truncate(time.Millisecond), Created: now}
	var spill store.Spill
	if len(message) > SpillOver {
		r.Body = preview(message)
		spill = func(id int64) (string, error) {
			r.SpillPath = filepath.Join(in.o.Layout.Reminders(), strconv.FormatInt(id, 10)+".md")
			return r.SpillPath, writeSpill(r.SpillPath, message)
		}
	}
	id, pending, ok, err := in.st.AddReminder(ctx, r, in.o.RemindMax, spill)
	if err != nil {
		if r.SpillPath != "" {
			os.Remove(r.SpillPath)
		}
		return store.Reminder{}, err
	}
	if !ok {
		return store.Reminder{}, fmt.Errorf("%w: %d are pending, the limit (--remind-max): cancel one with cancel_loose_end(kind=\"reminder\", id) first", ErrTooMany, pending)
	}
	r.ID = id
	in.emit(Change{Kind: KindReminder, Reminder: r})
	in.reschedule()
	return r, nil
}

// Reminders lists the pending reminders, soonest due first.
func (in *Inbox) Reminders(ctx context.Context) ([]store.Reminder, error) {
	return in.st.Reminders(ctx)
}

// CancelReminder deletes a pending reminder and its spill file.
func (in *Inbox) CancelReminder(ctx context.Context, id int64) error {
	r, err := in.st.DeleteReminder(ctx, id)
	if store.IsNotFound(err) {
		return fmt.Errorf("id %d: no pending reminder has it: %w (get_loose_ends lists them)", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if r.SpillPath != "" {
		os.Remove(r.SpillPath)
	}
	in.emit(Change{Kind: KindReminder, Reminder: r, Removed: true})
	in.reschedule()
	return nil
}

func (in *Inbox) reschedule() {
	select {
	case in.due <- struct{}{}:
	default:
	}
}

// schedule fires reminders as they fall due (those due while no daemon
// ran at once), until Close. It sleeps until the next one is due (at most
// a second while any is pending), or the reminders change; a store that
// fails is tried again each second.
func (in *Inbox) schedule() {
	defer in.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := in.fireDue()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-in.due:
		case <-in.done:
			return
		}
	}
}

// fireDue fires every reminder due now and returns how long until the
// next one is.
func (in *Inbox) fireDue() time.Duration {
	ctx := context.Background()
	rs, err := in.st.Reminders(ctx)
	if err != nil {
		in.log.Error("read reminders", "err", err)
		return time.Second
	}
	for _, r := range rs {
		if wait := time.Until(r.Due); wait > 0 {
			// Due times are wall-clock times; timers run on the monotonic
			// clock, which stops while the machine sleeps and ignores
			// clock steps: look again at least each second.
			return min(wait, time.Second)
		}
		fired, m, err := in.st.FireReminder(ctx, r.ID, time.Now())
		if store.IsNotFound(err) {
			continue // cancelled meanwhile
		}
		if err != nil {
			in.log.Error("fire reminder", "reminder", r.ID, "err", err)
			return time.Second
		}
		in.emit(Change{Kind: KindReminder, Reminder: fired, Removed: true})
		in.emit(Change{Kind: KindMessage, Message: m})
	}
	return time.Hour
}

// preview is the start of a body that spilled, cut at a rune.
func preview(s string) string {
	if len(s) <= previewBytes {
		return s
	}
	cut := previewBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// writeSpill writes a spilled body to its own 0600 file.
func writeSpill(path, body string) error {
	if err := paths.MkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := paths.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("spill %q: %w", path, err)
	}
	_, err = f.WriteString(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("spill %q: %w", path, err)
	}
	return nil
}

// readSpill reads a spilled body; a file that is gone (the daemon stopped
// between the record and the file) gives the preview and says so.
func readSpill(path, preview string, size int64) string {
	f, err := paths.OpenFile(path, os.O_RDONLY)
	if err != nil {
		return preview + fmt.Sprintf("\n[... %d more bytes were lost: %v]", size-int64(len(preview)), err)
	}
	defer f.Close()
	b := make([]byte, size)
	n, _ := f.Read(b)
	for n < len(b) {
		m, err := f.Read(b[n:])
		if m <= 0 || err != nil {
			break
		}
		n += m
	}
	return string(b[:n])
}
