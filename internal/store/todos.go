package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/view"
)

// Todo is a keyed loose end: one row per (Subsystem, Key).
type Todo struct {
	ID        int64
	Subsystem string
	Key       string
	Summary   string
	Created   time.Time
	Updated   time.Time
	// News, when the todo is written, marks a change a harness should
	// wake for (a job's end, a producer's todo; not a job's start). It
	// stays set until TakeNews; Summary unchanged leaves it as it was.
	News bool
}

// View is the todo as every surface shows it.
func (t Todo) View() view.Todo {
	return view.Todo{ID: t.ID, Subsystem: t.Subsystem, Key: t.Key, Summary: t.Summary,
		Created: view.Time(t.Created), Updated: view.Time(t.Updated)}
}

// UpsertTodo creates the todo (subsystem, key) or updates its summary,
// as news (see Todo.News). changed is false when the row existed with the
// same summary.
func (s *Store) UpsertTodo(ctx context.Context, subsystem, key, summary string) (t Todo, changed bool, err error) {
	return s.UpsertTodoLimit(ctx, subsystem, key, summary, 0)
}

// UpsertTodoLimit is UpsertTodo that refuses a new todo (ErrFull) when
// limit (> 0) todos are open already; an update of an open one always
// passes.
func (s *Store) UpsertTodoLimit(ctx context.Context, subsystem, key, summary string, limit int) (t Todo, changed bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
	}
	defer tx.Rollback()
	var exists, n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*), (SELECT count(*) FROM todos WHERE subsystem = ? AND key = ?) FROM todos`, subsystem, key).Scan(&n, &exists); err != nil {
		return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
	}
	if limit > 0 && exists == 0 && n >= limit {
		return Todo{}, false, fmt.Errorf("%w: %d todos are open, the limit", ErrFull, n)
	}
	t, changed, err = s.upsertTodo(ctx, tx, subsystem, key, summary, true, time.Now())
	if err != nil {
		return Todo{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
	}
	return t, changed, nil
}

// upsertTodo is UpsertTodo within a transaction.
func (s *Store) upsertTodo(ctx context.Context, tx *sql.Tx, subsystem, key, summary string, news bool, now time.Time) (t Todo, changed bool, err error) {
	var id, created int64
	var old string
	err = tx.StmtContext(ctx, s.getTodo).QueryRowContext(ctx, subsystem, key).Scan(&id, &old, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res, err := tx.StmtContext(ctx, s.addTodo).ExecContext(ctx, subsystem, key, summary, now.UnixMilli(), now.UnixMilli(), news)
		if err != nil {
			return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
		}
		id, _ = res.LastInsertId()
		created = now.UnixMilli()
		changed = true
	case err != nil:
		return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
	case old != summary:
		if _, err := tx.StmtContext(ctx, s.setTodo).ExecContext(ctx, summary, now.UnixMilli(), news, id); err != nil {
			return Todo{}, false, fmt.Errorf("upsert todo %s/%s: %w", subsystem, key, err)
		}
		changed = true
	}
	return Todo{ID: id, Subsystem: subsystem, Key: key, Summary: summary, Created: fromMilli(created), Updated: now, News: news}, changed, nil
}

// DeleteTodos deletes the todos with the given ids and returns how many existed.
func (s *Store) DeleteTodos(ctx context.Context, ids ...int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM todos WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete todos: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DeleteTodoKey deletes the todo (subsystem, key) and returns it (with
// its id); deleted is false if none existed.
func (s *Store) DeleteTodoKey(ctx context.Context, subsystem, key string) (t Todo, deleted bool, err error) {
	var c, u int64
	err = s.delTodoKey.QueryRowContext(ctx, subsystem, key).Scan(&t.ID, &t.Subsystem, &t.Key, &t.Summary, &c, &u)
	if errors.Is(err, sql.ErrNoRows) {
		return Todo{}, false, nil
	}
	if err != nil {
		return Todo{}, false, fmt.Errorf("delete todo %s/%s: %w", subsystem, key, err)
	}
	t.Created, t.Updated = fromMilli(c), fromMilli(u)
	return t, true, nil
}

// ListTodos returns every todo, oldest first.
func (s *Store) ListTodos(ctx context.Context) ([]Todo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, subsystem, key, summary, created_at, updated_at FROM todos ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list todos: %w", err)
	}
	defer rows.Close()
	var out []Todo
	for rows.Next() {
		var t Todo
		var c, u int64
		if err := rows.Scan(&t.ID, &t.Subsystem, &t.Key, &t.Summary, &c, &u); err != nil {
			return nil, fmt.Errorf("list todos: %w", err)
		}
		t.Created, t.Updated = fromMilli(c), fromMilli(u)
		out = append(out, t)
	}
	return out, rows.Err()
}

// TakeNews returns the todos marked as news (oldest change first, at
// most limit) and how many more there are, and unmarks them all, in one
// transaction.
func (s *Store) TakeNews(ctx context.Context, limit int) (news []Todo, more int, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("take todo news: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, subsystem, key, summary, created_at, updated_at FROM todos WHERE news != 0 ORDER BY updated_at, id`)
	if err != nil {
		return nil, 0, fmt.Errorf("take todo news: %w", err)
	}
	for rows.Next() {
		if len(news) >= limit {
			more++
			continue
		}
		var t Todo
		var c, u int64
		if err := rows.Scan(&t.ID, &t.Subsystem, &t.Key, &t.Summary, &c, &u); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("take todo news: %w", err)
		}
		t.Created, t.Updated, t.News = fromMilli(c), fromMilli(u), true
		news = append(news, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("take todo news: %w", err)
	}
	if len(news) == 0 {
		return nil, 0, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE todos SET news = 0 WHERE news != 0`); err != nil {
		return nil, 0, fmt.Errorf("take todo news: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, 0, fmt.Errorf("take todo news: %w", err)
	}
	return news, more, nil
}
