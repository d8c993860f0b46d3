package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

type jobStartIn struct {
	Cmd        string            `json:"cmd"`
	Cwd        string            `json:"cwd,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Name       string            `json:"name,omitempty" jsonschema:"[a-z0-9-]{1,63}; also an id"`
	TimeoutSec *float64          `json:"timeout_sec,omitempty"`
	Limits     *limitsArg        `json:"limits,omitempty"`
}

// JobStarted is terminal_job_start's answer.
type JobStarted struct {
	JobID     string `json:"job_id"`
	Name      string `json:"name,omitempty"`
	Status    string `json:"status"`
	Pid       int    `json:"pid"`
	ShellKind string `json:"shell_kind"`
	Error     string `json:"error,omitempty"`
}

type jobLogsIn struct {
	JobID          string   `json:"job_id"`
	SinceOffset    int64    `json:"since_offset,omitempty" jsonschema:"in stdout, or the one stream"`
	StderrOffset   int64    `json:"stderr_offset,omitempty" jsonschema:"stderr's, for both"`
	Stream         string   `json:"stream,omitempty" jsonschema:"stdout|stderr|both"`
	MaxKB          int      `json:"max_kb,omitempty" jsonschema:"per stream (64)"`
	WaitUntilExit  bool     `json:"wait_until_exit,omitempty"`
	WaitTimeoutSec *float64 `json:"wait_timeout_sec,omitempty" jsonschema:"default 60"`
	WaitForOutput  bool     `json:"wait_for_output,omitempty"`
}

// StreamChunk is one stream's part of terminal_job_logs.
type StreamChunk struct {
	Data         string `json:"data"`
	Offset       int64  `json:"offset"`
	NextOffset   int64  `json:"next_offset"`
	DroppedBytes int64  `json:"dropped_bytes,omitempty"`
}

// JobLogs is terminal_job_logs' answer. Its end carries the envelope's
// meaning (timed_out, semantic_status, semantic_message, warning), the
// same as terminal_exec's for the same command; semantic_status is absent
// while the job runs, semantic_message and warning when there is nothing
// to say.
type JobLogs struct {
	JobID string `json:"job_id"`
	Name  string `json:"name,omitempty"`
	jobState
	TimedOut        bool         `json:"timed_out"`
	SemanticStatus  string       `json:"semantic_status,omitempty"`
	SemanticMessage string       `json:"semantic_message,omitempty"`
	Warning         string       `json:"warning,omitempty"`
	RuntimeMs       int64        `json:"runtime_ms"`
	Stdout          *StreamChunk `json:"stdout,omitempty"`
	Stderr          *StreamChunk `json:"stderr,omitempty"`
	WaitedMs        int64        `json:"waited_ms"`
}

type jobListIn struct {
	State string `json:"state,omitempty"`
}

// JobEntry is one job of terminal_job_list: a part of the job's view
// (view.Job), with the seed's job_id, status and runtime_ms for its id,
// state and duration_ms; every other field is spelled and encoded as
// view.Job's (jobEntry is the one mapping).
type JobEntry struct {
	JobID string `json:"job_id"`
	Name  string `json:"name,omitempty"`
	Cmd   string `json:"cmd"`
	jobState
	SemanticStatus string    `json:"semantic_status,omitempty"`
	Pid            int       `json:"pid,omitempty"`
	RuntimeMs      int64     `json:"runtime_ms"`
	StdoutBytes    int64     `json:"stdout_bytes"`
	StderrBytes    int64     `json:"stderr_bytes"`
	Started        time.Time `json:"started,omitzero"`
	Ended          time.Time `json:"ended,omitzero"`
	// Usage is a running job's usage so far (its memory now), an ended
	// one's in all; LimitHit the limit that ended or held it back.
	Usage    *limits.Usage `json:"usage,omitempty"`
	LimitHit string        `json:"limit_hit,omitempty"`
}

func jobEntry(v view.Job) JobEntry {
	return JobEntry{JobID: v.ID, Name: v.Name, Cmd: v.Cmd, jobState: jobState{Status: v.State, ExitCode: v.ExitCode},
		SemanticStatus: v.SemanticStatus, Pid: v.Pid, RuntimeMs: v.DurationMs, StdoutBytes: v.StdoutBytes,
		StderrBytes: v.StderrBytes, Started: v.Started, Ended: v.Ended, Usage: v.Usage, LimitHit: v.LimitHit}
}

// memText is a job's memory in terminal_job_list's text: a running
// job's now, an ended one's peak, "-" unknown.
func memText(u *limits.Usage) string {
	switch {
	case u == nil:
		return "-"
	case u.MemoryBytes > 0:
		return fmt.Sprintf("mem %.1fMiB", float64(u.MemoryBytes)/(1<<20))
	case u.MemoryPeakBytes > 0:
		return fmt.Sprintf("peak %.1fMiB", float64(u.MemoryPeakBytes)/(1<<20))
	}
	return "-"
}

// JobList is terminal_job_list's answer.
type JobList struct {
	Jobs []JobEntry `json:"jobs"`
}

type jobKillIn struct {
	JobID string `json:"job_id"`
	Force bool   `json:"force,omitempty"`
}

func (h *handlers) addTerminalJobs(s *mcp.Server, t *terminal) {
	addTool(s, &mcp.Tool{Name: "terminal_job_start", Description: "Start a background job."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in jobStartIn) (*mcp.CallToolResult, JobStarted, error) {
			return t.jobStart(h.sess, in)
		})
	addTool(s, &mcp.Tool{Name: "terminal_job_logs", Description: "Job output since offsets; can wait for exit or output."},
		func(ctx context.Context, req *mcp.CallToolRequest, in jobLogsIn) (*mcp.CallToolResult, JobLogs, error) {
			res, out, err := t.jobLogs(ctx, req, in)
			if err == nil && res == nil {
				res = replyLogs(h.sess, out)
			}
			return res, out, err
		})
	addTool(s, &mcp.Tool{Name: "terminal_job_list", Description: "List jobs, newest first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in jobListIn) (*mcp.CallToolResult, JobList, error) {
			res, out, more, err := t.jobList(ctx, in)
			if err == nil && len(out.Jobs) > 0 && !h.sess.textAnswers() {
				res = text(fmt.Sprintf("%d jobs in structuredContent", len(out.Jobs)) + more)
			}
			return res, out, err
		})
	addTool(s, &mcp.Tool{Name: "terminal_job_kill", Description: "Stop a job: SIGINT to its group (SIGKILL with force)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in jobKillIn) (*mcp.CallToolResult, KillOut, error) {
			return h.kill(ctx, nil, killIn{ID: in.JobID, Force: in.Force})
		})
}

func (t *terminal) jobStart(sess *Session, in jobStartIn) (*mcp.CallToolResult, JobStarted, error) {
	if strings.TrimSpace(in.Cmd) == "" {
		return nil, JobStarted{}, errors.New("cmd: must not be empty")
	}
	if err := checkCmdNUL(in.Cmd, in.Cwd, in.Env); err != nil {
		return nil, JobStarted{}, err
	}
	timeout, err := seconds(in.TimeoutSec, 0, "timeout_sec")
	if err != nil {
		return nil, JobStarted{}, err
	}
	argv, kind, _, err := plan(in.Cmd, shellArg{})
	if err != nil {
		return nil, JobStarted{}, err
	}
	dir, err := resolveDir(sess, in.Cwd)
	if err != nil {
		return nil, JobStarted{}, err
	}
	env, err := sessionEnv(sess, in.Env)
	if err != nil {
		return nil, JobStarted{}, err
	}
	v, err := t.d.RunJob(service.JobSpec{Cmd: in.Cmd, Argv: argv, ShellKind: kind, Dir: dir, Env: env,
		Name: in.Name, Timeout: timeout, Source: "terminal", Limits: in.Limits.of()})
	if err != nil {
		return nil, JobStarted{}, err
	}
	out := JobStarted{JobID: v.ID, Name: v.Name, Status: v.State, Pid: v.Pid, ShellKind: kind, Error: v.Error}
	msg := fmt.Sprintf("job %s %s (pid %d)", label(out.JobID, out.Name), out.Status, out.Pid)
	if v.Error != "" {
		msg += ": " + v.Error
	}
	return text(msg), out, nil
}

func (t *terminal) jobLogs(ctx context.Context, req *mcp.CallToolRequest, in jobLogsIn) (*mcp.CallToolResult, JobLogs, error) {
	if in.JobID == "" {
		return nil, JobLogs{}, errors.New("job_id: must not be empty")
	}
	stream := in.Stream
	if stream == "" {
		stream = "both"
	}
	if stream != "both" && stream != "stdout" && stream != "stderr" {
		return nil, JobLogs{}, fmt.Errorf("stream %q: must be stdout, stderr or both", in.Stream)
	}
	if in.SinceOffset < 0 {
		return nil, JobLogs{}, fmt.Errorf("since_offset %d: must be >= 0", in.SinceOffset)
	}
	if in.StderrOffset < 0 {
		return nil, JobLogs{}, fmt.Errorf("stderr_offset %d: must be >= 0", in.StderrOffset)
	}
	maxKB := in.MaxKB
	if maxKB == 0 {
		maxKB = defaultPageKB
	}
	if maxKB < 1 || maxKB > maxPageKB {
		return nil, JobLogs{}, fmt.Errorf("max_kb %d: must be 1..%d", maxKB, maxPageKB)
	}
	waitFor, err := seconds(in.WaitTimeoutSec, 60, "wait_timeout_sec")
	if err != nil {
		return nil, JobLogs{}, err
	}
	outOff, errOff := in.SinceOffset, in.StderrOffset
	if stream == "stderr" {
		errOff = in.SinceOffset
	}
	info, err := t.d.Job(ctx, in.JobID)
	if errors.Is(err, service.ErrJobNotFound) {
		return nil, JobLogs{}, fmt.Errorf("job_id %q: no such job", in.JobID)
	}
	if err != nil {
		return nil, JobLogs{}, err
	}
	j, _ := t.d.LiveJob(info.ID)
	t0 := time.Now()
	if j != nil && (in.WaitUntilExit || in.WaitForOutput) && !service.JobEnded(info) {
		wctx, cancel := context.WithTimeout(ctx, waitFor)
		stopProgress := progress(wctx, req, "waiting for job "+info.ID, waitFor)
		waitJob(wctx, j, in.WaitForOutput, stream, outOff, errOff)
		stopProgress()
		cancel()
	}
	if j != nil {
		if info, err = t.d.Recorded(j); err != nil {
			return nil, JobLogs{}, err
		}
	}
	m := meaningOf(info)
	out := JobLogs{JobID: info.ID, Name: info.Name, jobState: stateOf(info),
		TimedOut: m.TimedOut, SemanticStatus: m.Status, SemanticMessage: m.Message, Warning: t.d.Warning(info.Cmd, info.Cwd),
		RuntimeMs: info.DurationMs, WaitedMs: time.Since(t0).Milliseconds()}
	if stream != "stderr" {
		out.Stdout = readChunk(j, info, false, outOff, maxKB<<10)
	}
	if stream != "stdout" {
		out.Stderr = readChunk(j, info, true, errOff, maxKB<<10)
	}
	t.d.EndSeen(ctx, info) // the caller has the end now: its loose end is done, as with status
	return nil, out, nil   // the caller adds the text block (replyLogs)
}

// replyLogs is terminal_job_logs' text block: the data only in a text
// session (structuredContent has it otherwise).
func replyLogs(sess *Session, out JobLogs) *mcp.CallToolResult {
	render := func(data bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "job %s %s", label(out.JobID, out.Name), out.Status)
		if out.ExitCode != nil {
			fmt.Fprintf(&b, ", exit %d", *out.ExitCode)
		}
		if out.SemanticStatus != "" {
			fmt.Fprintf(&b, " (%s)", meaning{Status: out.SemanticStatus, Message: out.SemanticMessage}.text())
		}
		if out.Warning != "" {
			fmt.Fprintf(&b, "\nwarning: %s", out.Warning)
		}
		for _, c := range []struct {
			name string
			ch   *StreamChunk
		}{{"stdout", out.Stdout}, {"stderr", out.Stderr}} {
			if c.ch == nil {
				continue
			}
			fmt.Fprintf(&b, "\n--- %s [%d, %d)", c.name, c.ch.Offset, c.ch.NextOffset)
			if c.ch.DroppedBytes > 0 {
				fmt.Fprintf(&b, ", %d earlier bytes no longer kept", c.ch.DroppedBytes)
			}
			b.WriteString(" ---")
			if data {
				b.WriteString("\n" + c.ch.Data)
			}
		}
		return b.String()
	}
	return sess.reply(render(false), func() string { return render(true) })
}

// waitJob blocks until the job ends or, with forOutput, until a watched
// stream has bytes past its offset, or ctx ends. No polling: it waits on
// the job's and streams' channels.
func waitJob(ctx context.Context, j *service.LiveJob, forOutput bool, stream string, outOff, errOff int64) {
	if forOutput {
		select {
		case <-j.Started():
		case <-ctx.Done():
			return
		}
	}
	for {
		if !forOutput {
			select {
			case <-j.Done():
			case <-ctx.Done():
			}
			return
		}
		so, se := j.Stdout(), j.Stderr()
		if so == nil {
			select {
			case <-j.Done():
			case <-ctx.Done():
			}
			return
		}
		c1, c2 := so.Changed(), se.Changed()
		outSt, errSt := so.Stats(), se.Stats()
		if (stream != "stderr" && outSt.Total > outOff) || (stream != "stdout" && errSt.Total > errOff) {
			return
		}
		if outSt.Closed && errSt.Closed { // no more output: only the end is left
			select {
			case <-j.Done():
			case <-ctx.Done():
			}
			return
		}
		if outSt.Closed { // a closed stream's channel is always ready: wait on the other
			c1 = nil
		}
		if errSt.Closed {
			c2 = nil
		}
		select {
		case <-c1:
		case <-c2:
		case <-j.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

func readChunk(j *service.LiveJob, info view.Job, stderr bool, off int64, max int) *StreamChunk {
	var s *output.Stream
	if j != nil {
		if stderr {
			s = j.Stderr()
		} else {
			s = j.Stdout()
		}
	}
	if s == nil {
		path := info.StdoutPath
		if stderr {
			path = info.StderrPath
		}
		data, next := readFileAt(path, off, max)
		return &StreamChunk{Data: decode(data), Offset: off, NextOffset: next}
	}
	c, err := s.Read(off, max)
	if err != nil {
		return &StreamChunk{Offset: off, NextOffset: off}
	}
	data := c.Data
	if !c.EOF {
		data = cutPartialRune(data)
	}
	return &StreamChunk{Data: decode(data), Offset: c.Offset, NextOffset: c.Offset + int64(len(data)), DroppedBytes: c.Skipped}
}

// progress sends MCP progress notifications every 2 s while a long wait
// runs, if the client asked for them with a progress token.
func progress(ctx context.Context, req *mcp.CallToolRequest, msg string, total time.Duration) (stop func()) {
	if req == nil || req.Params == nil || req.Params.GetProgressToken() == nil || req.Session == nil {
		return func() {}
	}
	tok := req.Params.GetProgressToken()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t0 := time.Now()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
					Progress: time.Since(t0).Seconds(), Total: total.Seconds(), Message: msg})
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// jobListMax is how many jobs terminal_job_list lists, the newest.
const jobListMax = 200

// jobList lists the newest jobListMax jobs (of a state); more is what
// its text adds when there are more ("" when not): the answer never cuts
// a list short without saying so.
func (t *terminal) jobList(ctx context.Context, in jobListIn) (res *mcp.CallToolResult, out JobList, more string, err error) {
	var states []string
	if in.State != "" {
		if !service.ValidJobState(in.State) {
			return nil, JobList{}, "", fmt.Errorf("state %q: must be one of pending, running, done, timed_out, killed, interrupted, failed", in.State)
		}
		states = []string{in.State}
	}
	infos, err := t.d.ListJobs(ctx, jobListMax+1, "", states...)
	if err != nil {
		return nil, JobList{}, "", err
	}
	if len(infos) > jobListMax {
		infos = infos[:jobListMax]
		more = fmt.Sprintf("\n(the newest %d; older jobs are not listed: pass state, or run `hive ps -a` in a shell)", jobListMax)
	}
	out = JobList{Jobs: []JobEntry{}}
	var b strings.Builder
	for _, in := range infos {
		in = t.d.WithLiveUsage(in) // a running job's usage so far
		out.Jobs = append(out.Jobs, jobEntry(in))
		exit := "-"
		if in.ExitCode != nil {
			exit = fmt.Sprint(*in.ExitCode)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", in.ID, in.State, exit, memText(in.Usage), clip(in.Cmd, 80))
	}
	if len(out.Jobs) == 0 {
		return text("no jobs"), out, "", nil
	}
	full := strings.TrimRight(b.String(), "\n") + more
	return text(full), out, more, nil // addTerminalJobs makes it brief in a structured session
}
