package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hivetools/hive/internal/view"
)

// Reminder is a pending reminder. The inbox package owns the meaning of
// its fields; the store only keeps them.
type Reminder struct {
	ID int64
	// Body is the message, or its preview when it spilled to SpillPath.
	Body      string
	SpillPath string // "" when Body is the whole message
	Size      int64  // bytes of the whole message
	Due       time.Time
	Created   time.Time
}

// Message is one inbox message.
type Message struct {
	ID        int64
	From      string
	Body      string // the body, or its preview when it spilled to SpillPath
	SpillPath string
	Size      int64
	At        time.Time
	// InFlight is set while a harness has popped the message and not yet
	// acked it; such a message is delivered again after a restart.
	InFlight bool
}

// View is the reminder as lists show it.
func (r Reminder) View() view.Reminder {
	return view.Reminder{ID: r.ID, Preview: view.Preview(r.Body), Size: r.Size, Due: view.Time(r.Due),
		Created: view.Time(r.Created)}
}

// View is the message as lists show it: its preview, not its body.
func (m Message) View() view.Message {
	return view.Message{ID: m.ID, From: m.From, At: view.Time(m.At), Size: m.Size, Preview: view.Preview(m.Body),
		InFlight: m.InFlight}
}

// Spill writes the whole body of a reminder or message with id to its
// file and returns the file's path. It runs inside the transaction that
// inserts the row, so the row is never seen without its file: an error
// rolls the row back (the caller removes what it wrote).
type Spill func(id int64) (path string, err error)

// AddReminder inserts r (its ID is assigned) unless limit reminders are
// pending already; pending is how many there are (after the insert when
// ok). A non-nil spill writes the whole message (see Spill).
func (s *Store) AddReminder(ctx context.Context, r Reminder, limit int, spill Spill) (id int64, pending int, ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, false, fmt.Errorf("add reminder: %w", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM reminders`).Scan(&pending); err != nil {
		return 0, 0, false, fmt.Errorf("add reminder: %w", err)
	}
	if pending >= limit {
		return 0, pending, false, nil
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO reminders (body, spill_path, size, due_at, created_at) VALUES (?,?,?,?,?)`,
		r.Body, r.SpillPath, r.Size, r.Due.UnixMilli(), unixMilli(r.Created))
	if err != nil {
		return 0, pending, false, fmt.Errorf("add reminder: %w", err)
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, pending, false, fmt.Errorf("add reminder: %w", err)
	}
	if spill != nil {
		path, err := spill(id)
		if err != nil {
			return 0, pending, false, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE reminders SET spill_path = ? WHERE id = ?`, path, id); err != nil {
			return 0, pending, false, fmt.Errorf("add reminder: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, pending, false, fmt.Errorf("add reminder: %w", err)
	}
	return id, pending + 1, true, nil
}

const reminderCols = `id, body, spill_path, size, due_at, created_at`

// Reminders lists the pending reminders, soonest due first.
func (s *Store) Reminders(ctx context.Context) ([]Reminder, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+reminderCols+` FROM reminders ORDER BY due_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list reminders: %w", err)
	}
	defer rows.Close()
	var out []Reminder
	for rows.Next() {
		var r Reminder
		var due, created int64
		if err := rows.Scan(&r.ID, &r.Body, &r.SpillPath, &r.Size, &due, &created); err != nil {
			return nil, fmt.Errorf("list reminders: %w", err)
		}
		r.Due, r.Created = time.UnixMilli(due), fromMilli(created)
		out = append(out, r)
	}
	return out, rows.Err()
}

// DeleteReminder deletes a pending reminder and returns it (ErrNotFound
// if there is none with id).
func (s *Store) DeleteReminder(ctx context.Context, id int64) (Reminder, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Reminder{}, fmt.Errorf("delete reminder %d: %w", id, err)
	}
	defer tx.Rollback()
	r, err := getReminder(ctx, tx, id)
	if err != nil {
		return Reminder{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM reminders WHERE id = ?`, id); err != nil {
		return Reminder{}, fmt.Errorf("delete reminder %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return Reminder{}, fmt.Errorf("delete reminder %d: %w", id, err)
	}
	return r, nil
}

func getReminder(ctx context.Context, tx *sql.Tx, id int64) (Reminder, error) {
	var r Reminder
	var due, created int64
	err := tx.QueryRowContext(ctx, `SELECT `+reminderCols+` FROM reminders WHERE id = ?`, id).
		Scan(&r.ID, &r.Body, &r.SpillPath, &r.Size, &due, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Reminder{}, fmt.Errorf("reminder %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Reminder{}, fmt.Errorf("reminder %d: %w", id, err)
	}
	r.Due, r.Created = time.UnixMilli(due), fromMilli(created)
	return r, nil
}

// FireReminder turns a due reminder into an inbox message from "reminder"
// in one transaction: the reminder leaves the pending list exactly when
// the message appears, keeping its spill file. It returns the reminder
// and the message (ErrNotFound if the reminder is gone).
func (s *Store) FireReminder(ctx context.Context, id int64, at time.Time) (Reminder, Message, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Reminder{}, Message{}, fmt.Errorf("fire reminder %d: %w", id, err)
	}
	defer tx.Rollback()
	r, err := getReminder(ctx, tx, id)
	if err != nil {
		return Reminder{}, Message{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM reminders WHERE id = ?`, id); err != nil {
		return Reminder{}, Message{}, fmt.Errorf("fire reminder %d: %w", id, err)
	}
	m := Message{From: "reminder", Body: r.Body, SpillPath: r.SpillPath, Size: r.Size, At: at}
	if m.ID, err = addMessage(ctx, tx, m); err != nil {
		return Reminder{}, Message{}, err
	}
	if err := tx.Commit(); err != nil {
		return Reminder{}, Message{}, fmt.Errorf("fire reminder %d: %w", id, err)
	}
	return r, m, nil
}

// ErrFull is returned by AddMessage and UpsertTodoLimit at their limits.
var ErrFull = errors.New("limit reached")

// AddMessage appends a message to the inbox, unless limit messages (> 0)
// are queued already (ErrFull), and returns its id. A non-nil spill
// writes the whole body (see Spill). m.InFlight stores it in flight.
func (s *Store) AddMessage(ctx context.Context, m Message, limit int, spill Spill) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("add message: %w", err)
	}
	defer tx.Rollback()
	if limit > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
			return 0, fmt.Errorf("add message: %w", err)
		}
		if n >= limit {
			return 0, fmt.Errorf("%w: %d messages are queued, the limit", ErrFull, n)
		}
	}
	id, err := addMessage(ctx, tx, m)
	if err != nil {
		return 0, err
	}
	if spill != nil {
		path, err := spill(id)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET spill_path = ? WHERE id = ?`, path, id); err != nil {
			return 0, fmt.Errorf("add message: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("add message: %w", err)
	}
	return id, nil
}

func addMessage(ctx context.Context, tx *sql.Tx, m Message) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO messages (sender, body, spill_path, size, at, in_flight) VALUES (?,?,?,?,?,?)`,
		m.From, m.Body, m.SpillPath, m.Size, m.At.UnixMilli(), m.InFlight)
	if err != nil {
		return 0, fmt.Errorf("add message: %w", err)
	}
	return res.LastInsertId()
}

const messageCols = `id, sender, body, spill_path, size, at, in_flight`

// Messages lists inbox messages, oldest first: at most limit (<= 0: all),
// in flight or not as asked (both when all).
func (s *Store) Messages(ctx context.Context, limit int, all bool) ([]Message, error) {
	q := `SELECT ` + messageCols + ` FROM messages`
	if !all {
		q += ` WHERE in_flight = 0`
	}
	q += ` ORDER BY id`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list messages: %w", err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var at int64
		var inFlight int
		if err := rows.Scan(&m.ID, &m.From, &m.Body, &m.SpillPath, &m.Size, &at, &inFlight); err != nil {
			return nil, fmt.Errorf("list messages: %w", err)
		}
		m.At, m.InFlight = time.UnixMilli(at), inFlight != 0
		out = append(out, m)
	}
	return out, rows.Err()
}

// CountMessages counts the messages not in flight.
func (s *Store) CountMessages(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE in_flight = 0`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count messages: %w", err)
	}
	return n, nil
}

// DeleteMessages deletes messages by id and returns those that existed.
func (s *Store) DeleteMessages(ctx context.Context, ids ...int64) ([]Message, error) {
	return s.deleteMessages(ctx, false, ids...)
}

// AckMessage deletes a message in flight and returns it (ErrNotFound if
// no message in flight has id).
func (s *Store) AckMessage(ctx context.Context, id int64) (Message, error) {
	gone, err := s.deleteMessages(ctx, true, id)
	if err != nil {
		return Message{}, err
	}
	if len(gone) == 0 {
		return Message{}, fmt.Errorf("message %d in flight: %w", id, ErrNotFound)
	}
	return gone[0], nil
}

// ReadMessages deletes and returns, in one transaction, the oldest
// messages not in flight: at most max, together at most maxBytes (but
// always at least one).
func (s *Store) ReadMessages(ctx context.Context, max int, maxBytes int64) ([]Message, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+messageCols+` FROM messages WHERE in_flight = 0 ORDER BY id LIMIT ?`, max)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	var out []Message
	total := int64(0)
	for rows.Next() {
		var m Message
		var at int64
		var inFlight int
		if err := rows.Scan(&m.ID, &m.From, &m.Body, &m.SpillPath, &m.Size, &at, &inFlight); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read messages: %w", err)
		}
		if len(out) > 0 && total+m.Size > maxBytes {
			break
		}
		m.At = time.UnixMilli(at)
		out = append(out, m)
		total += m.Size
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	for _, m := range out {
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE id = ?`, m.ID); err != nil {
			return nil, fmt.Errorf("read message %d: %w", m.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	return out, nil
}

// SpillPaths lists the spill files reminders and messages refer to.
func (s *Store) SpillPaths(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT spill_path FROM reminders WHERE spill_path != '' UNION SELECT spill_path FROM messages WHERE spill_path != ''`)
	if err != nil {
		return nil, fmt.Errorf("list spill files: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("list spill files: %w", err)
		}
		out[p] = true
	}
	return out, rows.Err()
}

func (s *Store) deleteMessages(ctx context.Context, inFlightOnly bool, ids ...int64) ([]Message, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete messages: %w", err)
	}
	defer tx.Rollback()
	var out []Message
	for _, id := range ids {
		var m Message
		var at int64
		var inFlight int
		err := tx.QueryRowContext(ctx, `SELECT `+messageCols+` FROM messages WHERE id = ?`, id).
			Scan(&m.ID, &m.From, &m.Body, &m.SpillPath, &m.Size, &at, &inFlight)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && inFlightOnly && inFlight == 0) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("delete message %d: %w", id, err)
		}
		m.At, m.InFlight = time.UnixMilli(at), inFlight != 0
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE id = ?`, id); err != nil {
			return nil, fmt.Errorf("delete message %d: %w", id, err)
		}
		out = append(out, m)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete messages: %w", err)
	}
	return out, nil
}

// TakeMessage marks the oldest message not in flight as in flight and
// returns it; ok is false when there is none.
func (s *Store) TakeMessage(ctx context.Context) (m Message, ok bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Message{}, false, fmt.Errorf("take message: %w", err)
	}
	defer tx.Rollback()
	var at int64
	var inFlight int
	err = tx.QueryRowContext(ctx, `SELECT `+messageCols+` FROM messages WHERE in_flight = 0 ORDER BY id LIMIT 1`).
		Scan(&m.ID, &m.From, &m.Body, &m.SpillPath, &m.Size, &at, &inFlight)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, fmt.Errorf("take message: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET in_flight = 1 WHERE id = ?`, m.ID); err != nil {
		return Message{}, false, fmt.Errorf("take message %d: %w", m.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return Message{}, false, fmt.Errorf("take message %d: %w", m.ID, err)
	}
	m.At, m.InFlight = time.UnixMilli(at), true
	return m, true, nil
}

// RequeueInFlight puts every message in flight back in the queue (a
// harness popped them and never acked: after a restart they are
// delivered again) and returns how many.
func (s *Store) RequeueInFlight(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE messages SET in_flight = 0 WHERE in_flight != 0`)
	if err != nil {
		return 0, fmt.Errorf("requeue messages: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// AgentValue reads one value of the agent's state ("" and ok false if
// unset).
func (s *Store) AgentValue(ctx context.Context, key string) (value string, updated time.Time, ok bool, err error) {
	var u int64
	err = s.db.QueryRowContext(ctx, `SELECT value, updated_at FROM agent WHERE key = ?`, key).Scan(&value, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, false, nil
	}
	if err != nil {
		return "", time.Time{}, false, fmt.Errorf("agent %s: %w", key, err)
	}
	return value, time.UnixMilli(u), true, nil
}

// SetAgentValues sets values of the agent's state, all in one
// transaction, updated at t.
func (s *Store) SetAgentValues(ctx context.Context, t time.Time, kv map[string]string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("set agent state: %w", err)
	}
	defer tx.Rollback()
	for k, v := range kv {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO agent (key, value, updated_at) VALUES (?,?,?)`, k, v, t.UnixMilli()); err != nil {
			return fmt.Errorf("set agent %s: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("set agent state: %w", err)
	}
	return nil
}
