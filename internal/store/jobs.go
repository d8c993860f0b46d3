package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/limits"
)

// Job is one job record. The job engine owns the meaning of its fields;
// the store only keeps them. Its JSON form is the record a daemon keeps
// with the holder of a job it started (wire.Kept.Record), which a daemon
// of another build may read: a field's name there never changes.
type Job struct {
	ID            string        `json:"id,omitempty"`
	Name          string        `json:"name,omitempty"`
	Cmd           string        `json:"cmd,omitempty"`
	Argv          []string      `json:"argv,omitempty"` // empty when Cmd runs under a shell
	ShellKind     string        `json:"shell_kind,omitempty"`
	Cwd           string        `json:"cwd,omitempty"`
	Source        string        `json:"source,omitempty"`
	State         string        `json:"state,omitempty"`
	ExitCode      *int          `json:"exit_code,omitempty"`
	Signal        *int          `json:"signal,omitempty"`
	Error         string        `json:"error,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	Created       time.Time     `json:"created,omitzero"`
	Started       time.Time     `json:"started,omitzero"`
	Ended         time.Time     `json:"ended,omitzero"`
	Pid           int           `json:"pid,omitempty"`
	PidStart      uint64        `json:"pid_start,omitempty"` // the process's start time as the OS reports it (Linux: clock ticks since boot)
	BootID        string        `json:"boot_id,omitempty"`   // the boot PidStart counts from ("" if unknown): another boot's pid proves nothing
	StdoutPath    string        `json:"stdout_path,omitempty"`
	StderrPath    string        `json:"stderr_path,omitempty"`
	StdoutBytes   int64         `json:"stdout_bytes,omitempty"`
	StderrBytes   int64         `json:"stderr_bytes,omitempty"`
	StdoutDropped int64         `json:"stdout_dropped,omitempty"`
	StderrDropped int64         `json:"stderr_dropped,omitempty"`
	Leftover      int           `json:"leftover,omitempty"`        // processes left in the group when the leader exited
	Quiet         bool          `json:"quiet,omitempty"`           // the job raises no loose end
	KillOnTimeout bool          `json:"kill_on_timeout,omitempty"` // its timeout SIGKILLs the group at once (terminal_exec)
	// Limits, LimitsBy, Usage and LimitHit are the job's resource
	// limits, how each was enforced, what it used (nil: unknown) and
	// the limit it hit ("" none): see job.Info.
	Limits   limits.Limits   `json:"limits,omitzero"`
	LimitsBy limits.Enforced `json:"limits_by,omitempty"`
	Usage    *limits.Usage   `json:"usage,omitempty"`
	LimitHit string          `json:"limit_hit,omitempty"`
}

// resources is the resources column: a job's limits and usage, as JSON.
type resources struct {
	Limits   *limits.Limits  `json:"limits,omitzero"`
	LimitsBy limits.Enforced `json:"limits_by,omitempty"`
	Usage    *limits.Usage   `json:"usage,omitempty"`
	LimitHit string          `json:"limit_hit,omitempty"`
}

// resourcesOf is j's resources column ("" if it has none).
func resourcesOf(j Job) string {
	r := resources{LimitsBy: j.LimitsBy, Usage: j.Usage, LimitHit: j.LimitHit}
	if !j.Limits.IsZero() {
		r.Limits = &j.Limits
	}
	if r.Limits == nil && r.LimitsBy == nil && r.Usage == nil && r.LimitHit == "" {
		return ""
	}
	b, _ := json.Marshal(r) // of plain values: cannot fail
	return string(b)
}

// setResources reads a resources column into j; one that does not
// parse is left out (a record is never lost for it).
func (j *Job) setResources(col string) {
	var r resources
	if col == "" || json.Unmarshal([]byte(col), &r) != nil {
		return
	}
	if r.Limits != nil {
		j.Limits = *r.Limits
	}
	j.LimitsBy, j.Usage, j.LimitHit = r.LimitsBy, r.Usage, r.LimitHit
}

const jobCols = `id, name, cmd, argv, shell_kind, cwd, source, state, exit_code, signal, error,
	timeout_ms, created_at, started_at, ended_at, pid, pid_start, stdout_path, stderr_path,
	stdout_bytes, stderr_bytes, stdout_dropped, stderr_dropped, leftover, boot_id, quiet, kill_on_timeout, resources`

// upsertSet updates in place every column of jobCols but id and the two
// a job's record never changes after its first put: its creation time
// and its name (see PutJob). A column in the SET list has its indexes
// written even when its value is the same (SQLite deletes and inserts
// the entry: the index's page is dirty, a WAL frame more); left out,
// jobs_created and jobs_name are written at a job's first record only:
// BenchmarkPutJobLife 7.75 -> 6.75 frames a job.
var upsertSet = func() string {
	var b strings.Builder
	for i, c := range strings.Split(jobCols, ",") {
		c = strings.TrimSpace(c)
		if i == 0 || immutableCols[c] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}()

// immutableCols are the columns a record keeps from its first put.
var immutableCols = map[string]bool{"created_at": true, "name": true}

// argvSep joins argv in one column; NUL cannot appear in an argument.
const argvSep = "\x00"

// PutJob inserts or replaces the record with j.ID. A record keeps the
// creation time and the name of its first put (they never change for a
// job): a later put's are not written.
func (s *Store) PutJob(ctx context.Context, j Job) error {
	if BeforeJobWrite != nil {
		BeforeJobWrite([]Job{j})
	}
	return s.execPut(ctx, s.putJob, j)
}

// BeforeJobWrite, if set (by tests, before any store opens), runs before
// each write of job records (PutJob, PutJobs), with the records: a test
// stalls a daemon's writes with it to see what holds without them.
var BeforeJobWrite func(jobs []Job)

func (s *Store) execPut(ctx context.Context, st *sql.Stmt, j Job) error {
	_, err := st.ExecContext(ctx,
		j.ID, j.Name, j.Cmd, strings.Join(j.Argv, argvSep), j.ShellKind, j.Cwd, j.Source, j.State,
		nullInt(j.ExitCode), nullInt(j.Signal), j.Error, j.Timeout.Milliseconds(),
		unixMilli(j.Created), unixMilli(j.Started), unixMilli(j.Ended), j.Pid, int64(j.PidStart),
		j.StdoutPath, j.StderrPath, j.StdoutBytes, j.StderrBytes, j.StdoutDropped, j.StderrDropped, j.Leftover, j.BootID, j.Quiet, j.KillOnTimeout, resourcesOf(j))
	if err != nil {
		return fmt.Errorf("put job %s: %w", j.ID, err)
	}
	return nil
}

// GetJob returns the record with id, or ErrNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (Job, error) {
	rows, err := s.getJob.QueryContext(ctx, id)
	if err != nil {
		return Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	if len(jobs) == 0 {
		return Job{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return jobs[0], nil
}

// NewestJobNamed returns the newest record (by creation) of a job named
// name, or ErrNotFound.
func (s *Store) NewestJobNamed(ctx context.Context, name string) (Job, error) {
	if name == "" {
		return Job{}, fmt.Errorf("job named %q: %w", name, ErrNotFound)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE name = ? AND name != '' ORDER BY created_at DESC, id DESC LIMIT 1`, name)
	if err != nil {
		return Job{}, fmt.Errorf("get job named %s: %w", name, err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return Job{}, fmt.Errorf("get job named %s: %w", name, err)
	}
	if len(jobs) == 0 {
		return Job{}, fmt.Errorf("job named %s: %w", name, ErrNotFound)
	}
	return jobs[0], nil
}

// DeleteJob deletes the record with id; deleted is false if there was
// none.
func (s *Store) DeleteJob(ctx context.Context, id string) (deleted bool, err error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, id)
	if err != nil {
		return false, fmt.Errorf("delete job %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// ListJobs returns records, newest first. With states non-empty only those
// states; limit <= 0 means no limit.
func (s *Store) ListJobs(ctx context.Context, limit int, states ...string) ([]Job, error) {
	return s.ListJobsNamed(ctx, limit, "", states...)
}

// ListJobsNamed is ListJobs of the jobs named name only ("": any).
func (s *Store) ListJobsNamed(ctx context.Context, limit int, name string, states ...string) ([]Job, error) {
	q := `SELECT ` + jobCols + ` FROM jobs`
	var args []any
	var where []string
	if len(states) > 0 {
		where = append(where, `state IN (?`+strings.Repeat(",?", len(states)-1)+`)`)
		for _, st := range states {
			args = append(args, st)
		}
	}
	if name != "" {
		where = append(where, `name = ?`)
		args = append(args, name)
	}
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id`
	if limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

func scanJobs(rows *sql.Rows) ([]Job, error) {
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var j Job
		var argv string
		var exit, sig sql.NullInt64
		var timeoutMs, created, started, ended, pidStart int64
		var res string
		if err := rows.Scan(&j.ID, &j.Name, &j.Cmd, &argv, &j.ShellKind, &j.Cwd, &j.Source, &j.State,
			&exit, &sig, &j.Error, &timeoutMs, &created, &started, &ended, &j.Pid, &pidStart,
			&j.StdoutPath, &j.StderrPath, &j.StdoutBytes, &j.StderrBytes, &j.StdoutDropped, &j.StderrDropped,
			&j.Leftover, &j.BootID, &j.Quiet, &j.KillOnTimeout, &res); err != nil {
			return nil, err
		}
		if argv != "" {
			j.Argv = strings.Split(argv, argvSep)
		}
		if exit.Valid {
			v := int(exit.Int64)
			j.ExitCode = &v
		}
		if sig.Valid {
			v := int(sig.Int64)
			j.Signal = &v
		}
		j.Timeout = time.Duration(timeoutMs) * time.Millisecond
		j.Created, j.Started, j.Ended = fromMilli(created), fromMilli(started), fromMilli(ended)
		j.PidStart = uint64(pidStart)
		j.setResources(res)
		out = append(out, j)
	}
	return out, rows.Err()
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// DeleteJobsEndedBefore deletes the records of jobs that ended before t
// (at most limit of them, oldest first) and returns exactly the records
// it deleted, so the caller can remove their files: a record that changed
// between the read and the delete (a job of the same name started again)
// is neither deleted nor returned.
func (s *Store) DeleteJobsEndedBefore(ctx context.Context, t time.Time, limit int) ([]Job, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete old jobs: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE ended_at > 0 AND ended_at < ? ORDER BY ended_at LIMIT ?`,
		t.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("list old jobs: %w", err)
	}
	old, err := scanJobs(rows)
	if err != nil {
		return nil, fmt.Errorf("list old jobs: %w", err)
	}
	deleted := old[:0]
	for _, j := range old {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id = ? AND created_at = ? AND ended_at = ?`,
			j.ID, unixMilli(j.Created), unixMilli(j.Ended))
		if err != nil {
			return nil, fmt.Errorf("delete job %s: %w", j.ID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			deleted = append(deleted, j)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete old jobs: %w", err)
	}
	return deleted, nil
}

// JobIDs returns the id of every job record.
func (s *Store) JobIDs(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM jobs`)
	if err != nil {
		return nil, fmt.Errorf("list job ids: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list job ids: %w", err)
	}
	return ids, nil
}

// PutJobs writes job records and upserts todos in one transaction: all
// or nothing. It returns the todos that changed (new, or a new summary),
// with their ids.
func (s *Store) PutJobs(ctx context.Context, jobs []Job, todos []Todo) ([]Todo, error) {
	if len(jobs) == 1 && len(todos) == 0 {
		return nil, s.PutJob(ctx, jobs[0])
	}
	if BeforeJobWrite != nil {
		BeforeJobWrite(jobs)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("put jobs: %w", err)
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, s.putJob)
	for _, j := range jobs {
		if err := s.execPut(ctx, st, j); err != nil {
			return nil, err
		}
	}
	var changed []Todo
	now := time.Now()
	for _, t := range todos {
		got, ch, err := s.upsertTodo(ctx, tx, t.Subsystem, t.Key, t.Summary, t.News, now)
		if err != nil {
			return nil, err
		}
		if ch {
			changed = append(changed, got)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("put jobs: %w", err)
	}
	return changed, nil
}

// CountJobs counts the job records by state.
func (s *Store) CountJobs(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM jobs GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}
