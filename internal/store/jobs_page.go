package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// JobQuery selects a page of job records, newest first (created_at
// descending, then id).
type JobQuery struct {
	// States, if non-empty, keeps only those states.
	States []string
	// Text, if non-empty, keeps the records whose id, name or command
	// contains it (ASCII case-insensitively).
	Text string
	// Name, if non-empty, keeps the records of that name.
	Name string
	// NotZero, if set, keeps the records of jobs that may not have
	// succeeded: ended in a state other than done, or done with an exit
	// code other than 0 (the caller judges those by their command: grep's
	// exit 1 is a success).
	NotZero bool
	// Limit bounds the page; <= 0 means no limit.
	Limit int
	// BeforeCreated and BeforeID, when BeforeCreated is not zero, start
	// the page after the record with that creation time and id (the last
	// record of the previous page): a cursor that stays right while new
	// jobs start.
	BeforeCreated time.Time
	BeforeID      string
}

// ListJobsPage returns the records q selects. The jobs_created index
// keeps a page's cost bounded by its size, not the number of records,
// when no text filter is given.
func (s *Store) ListJobsPage(ctx context.Context, q JobQuery) ([]Job, error) {
	sql := `SELECT ` + jobCols + ` FROM jobs`
	var where []string
	var args []any
	if len(q.States) > 0 {
		where = append(where, `state IN (?`+strings.Repeat(",?", len(q.States)-1)+`)`)
		for _, st := range q.States {
			args = append(args, st)
		}
	}
	if q.Name != "" {
		where = append(where, `name = ?`)
		args = append(args, q.Name)
	}
	if q.NotZero {
		where = append(where, `(state IN ('failed', 'timed_out', 'killed', 'interrupted') OR (state = 'done' AND (exit_code IS NULL OR exit_code != 0)))`)
	}
	if q.Text != "" {
		like := "%" + escapeLike(q.Text) + "%"
		where = append(where, `(id LIKE ? ESCAPE '\' OR name LIKE ? ESCAPE '\' OR cmd LIKE ? ESCAPE '\')`)
		args = append(args, like, like, like)
	}
	if !q.BeforeCreated.IsZero() {
		ms := unixMilli(q.BeforeCreated)
		where = append(where, `(created_at < ? OR (created_at = ? AND id > ?))`)
		args = append(args, ms, ms, q.BeforeID)
	}
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, ` AND `)
	}
	sql += ` ORDER BY created_at DESC, id`
	if q.Limit > 0 {
		sql += fmt.Sprintf(` LIMIT %d`, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// escapeLike escapes LIKE's wildcards (and its escape character).
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
