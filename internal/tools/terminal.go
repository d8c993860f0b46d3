package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/handles"
	"github.com/hivetools/hive/internal/jsonenc"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/shell"
	"github.com/hivetools/hive/internal/view"
)

// Terminal-tool limits.
const (
	defaultAutoBackground = 30
	defaultFgTimeout      = 120
	defaultMaxOutputKB    = 256
	maxOutputKB           = 16 << 10
	defaultPageKB         = 64
	maxPageKB             = 4 << 10
)

type execIn struct {
	Cmd                    string            `json:"cmd"`
	Cwd                    string            `json:"cwd,omitempty"`
	Env                    map[string]string `json:"env,omitempty"`
	Stdin                  string            `json:"stdin,omitempty"`
	TimeoutSec             *float64          `json:"timeout_sec,omitempty" jsonschema:"kill after N s (120 if pure foreground)"`
	AutoBackgroundAfterSec *float64          `json:"auto_background_after_sec,omitempty" jsonschema:"default 30; 0 = pure foreground"`
	MaxOutputKB            *int              `json:"max_output_kb,omitempty" jsonschema:"per stream (256)"`
	Shell                  shellArg          `json:"shell,omitempty" jsonschema:"true: bash -c"`
	Limits                 *limitsArg        `json:"limits,omitempty"`
}

// Envelope is terminal_exec's answer.
type Envelope struct {
	// The job's state and exit code (status: running when it was
	// auto-backgrounded).
	jobState
	Stdout               string  `json:"stdout"`
	Stderr               string  `json:"stderr"`
	StdoutTruncatedBytes int64   `json:"stdout_truncated_bytes"`
	StderrTruncatedBytes int64   `json:"stderr_truncated_bytes"`
	RuntimeMs            int64   `json:"runtime_ms"`
	Pid                  int     `json:"pid"`
	OutputHandle         *string `json:"output_handle"`
	TimedOut             bool    `json:"timed_out"`
	SemanticStatus       string  `json:"semantic_status"`
	SemanticMessage      *string `json:"semantic_message"`
	Warning              *string `json:"warning"`
	AutoBackgrounded     bool    `json:"auto_backgrounded"`
	JobID                *string `json:"job_id"`
	ShellKind            string  `json:"shell_kind"`
	AutoShell            bool    `json:"auto_shell"`
	limitsOut
	// Of the bytes left out, those no longer kept anywhere (a full disk,
	// the file cap): told in the text, not paged by the handle.
	stdoutUnkept, stderrUnkept int64
}

type outputGetIn struct {
	OutputHandle string `json:"output_handle"`
	Stream       string `json:"stream,omitempty" jsonschema:"stdout|stderr"`
	SinceOffset  int64  `json:"since_offset,omitempty"`
	MaxKB        int    `json:"max_kb,omitempty" jsonschema:"default 64"`
}

// OutputPage is terminal_output_get's answer.
type OutputPage struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	EOF        bool   `json:"eof"`
	Expired    bool   `json:"expired"`
	Message    string `json:"message,omitempty"`
}

// terminal holds the state the terminal tools share across sessions.
type terminal struct {
	d       *service.Service
	handles *handles.Store
}

// TerminalOptions configures the terminal tools. Zero values mean defaults.
type TerminalOptions struct {
	HandleTTL time.Duration
	HandleCap int64
}

func (h *handlers) addTerminal(s *mcp.Server, t *terminal) {
	addTool(s, &mcp.Tool{Name: "terminal_exec", Description: "Run a command and answer its result."},
		func(ctx context.Context, req *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, Envelope, error) {
			return t.exec(ctx, h.sess, in)
		})
	addTool(s, &mcp.Tool{Name: "terminal_output_get", Description: "Page the full output behind an output_handle."},
		func(ctx context.Context, req *mcp.CallToolRequest, in outputGetIn) (*mcp.CallToolResult, OutputPage, error) {
			return t.outputGet(h.sess, in)
		})
	h.addTerminalJobs(s, t)
}

// plan decides argv and shell kind for cmd: under the requested shell
// when one is forced, else directly when the command has no shell syntax,
// else under the policy shell (shell.Default).
func plan(cmd string, requested shellArg) (argv []string, kind string, autoShell bool, err error) {
	if requested.force {
		sh, err := shell.Default()
		if requested.name != "" {
			sh, err = shell.Resolve(requested.name)
		}
		if err != nil {
			return nil, "", false, err
		}
		return sh.Args(cmd), sh.Kind, false, nil
	}
	d := shell.Plan(cmd)
	if !d.NeedsShell && len(d.Argv) > 0 && !builtinHere(d.Argv[0]) {
		return d.Argv, "direct", false, nil
	}
	sh, err := shell.Default()
	if err != nil {
		return nil, "", false, err
	}
	return sh.Args(cmd), sh.Kind, true, nil
}

// builtinHere reports whether name is a builtin of the policy shell on a
// system with no program of that name: on Windows, echo, dir, copy, type
// and the rest of cmd's (or PowerShell's, or bash's) own commands run
// through the shell, not as a program that is not there. Elsewhere the
// programs exist (coreutils' echo, printf, true, false).
func builtinHere(name string) bool {
	if runtime.GOOS != "windows" {
		return false
	}
	sh, err := shell.Default()
	return err == nil && sh.Builtin(name)
}

// policyEnv puts env under the shell policy (shell.Shell.Env): no zsh
// variables, SHELL the policy shell.
func policyEnv(env []string) []string {
	if sh, err := shell.Default(); err == nil {
		return sh.Env(env)
	}
	return shell.CleanEnv(env)
}

// sessionEnv is the session's environment plus overrides, under the shell
// policy (policyEnv).
func sessionEnv(sess *Session, extra map[string]string) ([]string, error) {
	env := sess.baseEnv()
	if len(extra) == 0 {
		return env, nil
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: key %q must be non-empty without '=' or NUL", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k]) // later entries win in exec
	}
	return policyEnv(dedupEnv(env)), nil
}

// checkCmdNUL refuses a NUL byte in a command, its directory or its
// environment before the command is planned: the shell parser would drop
// it silently and run a different command.
func checkCmdNUL(cmd, cwd string, env map[string]string) error {
	if err := service.CheckNUL("cmd", cmd); err != nil {
		return err
	}
	if err := service.CheckNUL("cwd", cwd); err != nil {
		return err
	}
	for k, v := range env {
		if err := service.CheckNUL(fmt.Sprintf("env[%q]", k), k+v); err != nil {
			return err
		}
	}
	return nil
}

// dedupEnv keeps the last value of each key, in first-seen order.
func dedupEnv(env []string) []string {
	idx := map[string]int{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// resolveDir makes dir absolute against the session's directory.
func resolveDir(sess *Session, dir string) (string, error) {
	base := sess.Cwd
	if base == "" {
		base, _ = os.Getwd()
	}
	if dir == "" {
		return base, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("cwd %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %q: not a directory", dir)
	}
	return dir, nil
}

// maxSeconds bounds every seconds argument (about 3 years): larger values
// would overflow a time.Duration.
const maxSeconds = 1e8

func seconds(p *float64, def float64, field string) (time.Duration, error) {
	v := def
	if p != nil {
		v = *p
	}
	if v < 0 || v != v {
		return 0, fmt.Errorf("%s %v: must be >= 0", field, v)
	}
	if v > maxSeconds {
		return 0, fmt.Errorf("%s %v: must be <= %g", field, v, float64(maxSeconds))
	}
	return time.Duration(v * float64(time.Second)), nil
}

func (t *terminal) exec(ctx context.Context, sess *Session, in execIn) (*mcp.CallToolResult, Envelope, error) {
	if strings.TrimSpace(in.Cmd) == "" {
		return nil, Envelope{}, errors.New("cmd: must not be empty")
	}
	if err := checkCmdNUL(in.Cmd, in.Cwd, in.Env); err != nil {
		return nil, Envelope{}, err
	}
	autoBg, err := seconds(in.AutoBackgroundAfterSec, defaultAutoBackground, "auto_background_after_sec")
	if err != nil {
		return nil, Envelope{}, err
	}
	defTimeout := 0.0
	if autoBg == 0 {
		defTimeout = defaultFgTimeout
	}
	timeout, err := seconds(in.TimeoutSec, defTimeout, "timeout_sec")
	if err != nil {
		return nil, Envelope{}, err
	}
	maxKB := defaultMaxOutputKB
	if in.MaxOutputKB != nil {
		maxKB = *in.MaxOutputKB
	}
	if maxKB < 1 || maxKB > maxOutputKB {
		return nil, Envelope{}, fmt.Errorf("max_output_kb %d: must be 1..%d", maxKB, maxOutputKB)
	}
	argv, kind, autoShell, err := plan(in.Cmd, in.Shell)
	if err != nil {
		return nil, Envelope{}, err
	}
	dir, err := resolveDir(sess, in.Cwd)
	if err != nil {
		return nil, Envelope{}, err
	}
	env, err := sessionEnv(sess, in.Env)
	if err != nil {
		return nil, Envelope{}, err
	}
	spec := service.JobSpec{Cmd: in.Cmd, Argv: argv, ShellKind: kind, Dir: dir, Env: env, Timeout: timeout,
		KillOnTimeout: true, Source: "terminal", Attached: true, Limits: in.Limits.of()}
	if in.Stdin != "" {
		spec.Stdin = []byte(in.Stdin)
	}
	j, err := t.d.StartJob(spec)
	if err != nil {
		return nil, Envelope{}, err
	}
	env0 := Envelope{ShellKind: kind, AutoShell: autoShell, Warning: nilIfEmpty(j.Warning(t.d))}
	ended := false
	if autoBg > 0 {
		wctx, cancel := context.WithTimeout(ctx, autoBg)
		ended = j.Wait(wctx)
		cancel()
		if !ended && ctx.Err() == nil {
			switch err := j.Detach(); {
			case err == nil:
				info, err := t.d.Recorded(j)
				if err != nil {
					return nil, Envelope{}, err
				}
				return t.envelope(sess, j, info, env0, maxKB, true)
			case errors.Is(err, service.ErrJobEnded):
				ended = true
			default:
				return nil, Envelope{}, err
			}
		}
	} else {
		ended = j.Wait(ctx)
	}
	if !ended {
		// The client gave up on the call: stop the command, it was foreground.
		t.d.KillJob(j.ID(), true)
		j.Wait(context.Background())
	}
	info, err := t.d.Recorded(j)
	if err != nil {
		return nil, Envelope{}, fmt.Errorf("the command ran, but %w", err)
	}
	return t.envelope(sess, j, info, env0, maxKB, false)
}

// envelope fills the standard envelope from a job.
func (t *terminal) envelope(sess *Session, j *service.LiveJob, info view.Job, e Envelope, maxKB int, backgrounded bool) (*mcp.CallToolResult, Envelope, error) {
	e.Pid = info.Pid
	e.RuntimeMs = info.DurationMs
	e.TimedOut = info.State == "timed_out"
	limit := int64(maxKB) << 10
	var size int64
	streams := map[string]*output.Stream{}
	if so := j.Stdout(); so != nil {
		e.Stdout, e.StdoutTruncatedBytes = inline(so, limit)
		e.Stderr, e.StderrTruncatedBytes = inline(j.Stderr(), limit)
		e.stdoutUnkept, e.stderrUnkept = so.Unkept(), j.Stderr().Unkept()
		streams["stdout"], streams["stderr"] = so, j.Stderr()
		size = so.Stats().Total + j.Stderr().Stats().Total
	}
	if backgrounded {
		id := info.ID
		e.AutoBackgrounded, e.JobID = true, &id
		// Told as running, as the rest of this answer: its end comes as
		// a loose end, even if it came already.
		e.jobState = jobState{Status: "running"}
		e.LimitsEnforcedBy = info.LimitsEnforcedBy
		e.SemanticStatus = "ok"
		msg := "Still running as background job " + id + "; follow it with terminal_job_logs"
		e.SemanticMessage = &msg
	} else {
		e.jobState = stateOf(info)
		e.limitsOut = limitsOutOf(info)
		m := meaningOf(info)
		e.SemanticStatus, e.SemanticMessage = m.Status, m.msg()
	}
	if e.StdoutTruncatedBytes > 0 || e.StderrTruncatedBytes > 0 {
		h := t.handles.Put(streams, size)
		e.OutputHandle = &h
		if e.StdoutTruncatedBytes > 0 {
			e.Stdout = strings.Replace(e.Stdout, truncMarker, fmt.Sprintf("\n[... %d bytes truncated; terminal_output_get(%q) has them ...]\n", e.StdoutTruncatedBytes, h), 1)
		}
		if e.StderrTruncatedBytes > 0 {
			e.Stderr = strings.Replace(e.Stderr, truncMarker, fmt.Sprintf("\n[... %d bytes truncated; terminal_output_get(%q, stream=\"stderr\") has them ...]\n", e.StderrTruncatedBytes, h), 1)
		}
	}
	return sess.reply(renderEnvelope(e, false), func() string { return renderEnvelope(e, true) }), e, nil
}

// truncMarker stands in for the truncation line until the handle is known.
const truncMarker = "\x00TRUNC\x00"

// inline reads a stream for inline display: whole if it fits in limit,
// else its head and tail (limit/2 each) around a marker. It returns the
// text and the bytes left out.
func inline(s *output.Stream, limit int64) (string, int64) {
	total := s.Stats().Total
	if total <= limit {
		all, skipped := readRange(s, 0, total)
		return decode(all), skipped
	}
	half := limit / 2
	head, _ := readRange(s, 0, half)
	tail, _ := readRange(s, total-half, total)
	head, tail = cutPartialRune(head), skipContinuation(tail)
	shown := int64(len(head) + len(tail))
	return decode(head) + truncMarker + decode(tail), total - shown
}

// cutPartialRune drops an incomplete UTF-8 sequence at the end of b: the
// rest of it follows in the next read.
func cutPartialRune(b []byte) []byte {
	if cut := lastRuneStart(b); cut < len(b) && !utf8.FullRune(b[cut:]) {
		return b[:cut]
	}
	return b
}

// skipContinuation drops the bytes at the start of b that continue a rune
// cut off before it (at most 3).
func skipContinuation(b []byte) []byte {
	for i := 0; i < 3 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-4; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b)
}

// readRange reads [from, to) of a stream. Bytes no longer kept anywhere
// (past the file cap and out of the ring) are left out; skipped counts them
// and a gap marker stands where they were.
func readRange(s *output.Stream, from, to int64) (out []byte, skipped int64) {
	for from < to {
		c, err := s.Read(from, int(min(to-from, 1<<20)))
		if err != nil || c.Next <= from {
			break
		}
		if c.Skipped > 0 {
			skipped += c.Skipped
			out = append(out, fmt.Sprintf("\n[... %d bytes no longer kept ...]\n", c.Skipped)...)
		}
		out = append(out, c.Data...)
		from = c.Next
	}
	return out, skipped
}

func decode(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// renderEnvelope is terminal_exec's text block: the outcome, and either
// the output (withOutput: a text session's only copy) or what is where.
func renderEnvelope(e Envelope, withOutput bool) string {
	// Appended, not printed: this is on the way from a command's end to
	// its answer, and fmt's printer was a tenth of that step
	// (TestRenderEnvelope holds it to the printed form).
	b := make([]byte, 0, 128)
	switch {
	case e.AutoBackgrounded:
		b = append(b, "auto-backgrounded as job "...)
		b = append(b, *e.JobID...)
		b = append(b, " (pid "...)
		b = strconv.AppendInt(b, int64(e.Pid), 10)
		b = append(b, ") after "...)
		b = strconv.AppendInt(b, e.RuntimeMs, 10)
		b = append(b, "ms"...)
	case e.ExitCode != nil:
		b = append(b, "exit "...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
		b = append(b, " ("...)
		b = append(b, e.SemanticStatus...)
		if e.SemanticMessage != nil {
			b = append(b, ": "...)
			b = append(b, *e.SemanticMessage...)
		}
		b = append(b, ") in "...)
		b = strconv.AppendInt(b, e.RuntimeMs, 10)
		b = append(b, "ms"...)
	default:
		b = append(b, e.SemanticStatus...)
		if e.SemanticMessage != nil {
			b = append(b, ": "...)
			b = append(b, *e.SemanticMessage...)
		}
	}
	if e.Warning != nil {
		b = append(b, "\nwarning: "...)
		b = append(b, *e.Warning...)
	}
	if withOutput { // the text form: no structuredContent tells them
		b = append(b, e.limitsOut.text()...)
	}
	for _, s := range [...]struct {
		name, data  string
		cut, unkept int64
	}{{"stdout", e.Stdout, e.StdoutTruncatedBytes, e.stdoutUnkept}, {"stderr", e.Stderr, e.StderrTruncatedBytes, e.stderrUnkept}} {
		if s.data == "" {
			continue
		}
		b = append(b, '\n')
		if withOutput {
			b = append(b, "--- "...)
			b = append(b, s.name...)
			b = append(b, " ---\n"...)
			b = append(b, s.data...)
			continue
		}
		b = append(b, s.name...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(len(s.data)), 10)
		if s.cut <= 0 {
			b = append(b, " bytes in structuredContent"...)
			continue
		}
		more := s.cut
		if s.unkept > 0 {
			more = max(s.cut-s.unkept, 0)
		}
		b = append(b, " bytes shown in structuredContent, "...)
		b = strconv.AppendInt(b, more, 10)
		b = append(b, " more in output_handle "...)
		b = append(b, *e.OutputHandle...)
		if s.unkept > 0 {
			b = append(b, ", "...)
			b = strconv.AppendInt(b, s.unkept, 10)
			b = append(b, " not kept (see semantic_message)"...)
		}
	}
	return string(b)
}

func (t *terminal) outputGet(sess *Session, in outputGetIn) (*mcp.CallToolResult, OutputPage, error) {
	if in.OutputHandle == "" {
		return nil, OutputPage{}, errors.New("output_handle: must not be empty")
	}
	stream := in.Stream
	if stream == "" {
		stream = "stdout"
	}
	if stream != "stdout" && stream != "stderr" {
		return nil, OutputPage{}, fmt.Errorf("stream %q: must be stdout or stderr", in.Stream)
	}
	if in.SinceOffset < 0 {
		return nil, OutputPage{}, fmt.Errorf("since_offset %d: must be >= 0", in.SinceOffset)
	}
	maxKB := in.MaxKB
	if maxKB == 0 {
		maxKB = defaultPageKB
	}
	if maxKB < 1 || maxKB > maxPageKB {
		return nil, OutputPage{}, fmt.Errorf("max_kb %d: must be 1..%d", maxKB, maxPageKB)
	}
	s, ok := t.handles.Get(in.OutputHandle, stream)
	if !ok {
		p := OutputPage{Expired: true, Offset: in.SinceOffset, NextOffset: in.SinceOffset,
			Message: "output handle " + in.OutputHandle + " is unknown or expired; re-run the command"}
		return text(p.Message), p, nil
	}
	if s == nil {
		p := OutputPage{EOF: true}
		return text(""), p, nil
	}
	c, err := s.Read(in.SinceOffset, maxKB<<10)
	if err != nil {
		return nil, OutputPage{}, err
	}
	data := c.Data
	if !c.EOF { // do not split a rune at the end of a page: the next page starts there
		data = cutPartialRune(data)
	}
	next := c.Offset + int64(len(data))
	p := OutputPage{Data: decode(data), Offset: c.Offset, NextOffset: next, EOF: c.EOF && next == c.Next}
	if c.Skipped > 0 {
		p.Message = fmt.Sprintf("%d bytes before offset %d are no longer kept", c.Skipped, c.Offset)
	}
	head := fmt.Sprintf("%s bytes [%d, %d)", stream, p.Offset, p.NextOffset)
	if p.EOF {
		head += ", the end"
	} else {
		head += fmt.Sprintf("; more from since_offset=%d", p.NextOffset)
	}
	if p.Message != "" {
		head += "; " + p.Message
	}
	return sess.reply(head, func() string { return "[" + head + "]\n" + p.Data }), p, nil
}

// readFileAt reads up to max bytes of a file from off, ending on a rune
// boundary unless the file ends there.
func readFileAt(path string, off int64, max int) ([]byte, int64) {
	f, err := paths.OpenFile(path, os.O_RDONLY) // never through a planted link or fifo
	if err != nil {
		return nil, off
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := f.ReadAt(buf, off)
	buf = buf[:n]
	if err == nil { // more follows: do not split a rune
		buf = cutPartialRune(buf)
	}
	return buf, off + int64(len(buf))
}

// AppendJSON appends e as json.Marshal writes it, without reflection:
// terminal_exec's answer is encoded between a command's end and its
// answer (TestEnvelopeAppendJSON and FuzzEnvelopeJSON hold the two the
// same; BenchmarkEnvelopeJSON).
func (e Envelope) AppendJSON(b []byte) []byte {
	b = append(b, `{"status":`...)
	b = jsonenc.AppendString(b, e.Status)
	b = append(b, `,"exit_code":`...)
	b = appendIntPtr(b, e.ExitCode)
	b = append(b, `,"stdout":`...)
	b = jsonenc.AppendString(b, e.Stdout)
	b = append(b, `,"stderr":`...)
	b = jsonenc.AppendString(b, e.Stderr)
	b = append(b, `,"stdout_truncated_bytes":`...)
	b = strconv.AppendInt(b, e.StdoutTruncatedBytes, 10)
	b = append(b, `,"stderr_truncated_bytes":`...)
	b = strconv.AppendInt(b, e.StderrTruncatedBytes, 10)
	b = append(b, `,"runtime_ms":`...)
	b = strconv.AppendInt(b, e.RuntimeMs, 10)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(e.Pid), 10)
	b = append(b, `,"output_handle":`...)
	b = appendStringPtr(b, e.OutputHandle)
	b = append(b, `,"timed_out":`...)
	b = strconv.AppendBool(b, e.TimedOut)
	b = append(b, `,"semantic_status":`...)
	b = jsonenc.AppendString(b, e.SemanticStatus)
	b = append(b, `,"semantic_message":`...)
	b = appendStringPtr(b, e.SemanticMessage)
	b = append(b, `,"warning":`...)
	b = appendStringPtr(b, e.Warning)
	b = append(b, `,"auto_backgrounded":`...)
	b = strconv.AppendBool(b, e.AutoBackgrounded)
	b = append(b, `,"job_id":`...)
	b = appendStringPtr(b, e.JobID)
	b = append(b, `,"shell_kind":`...)
	b = jsonenc.AppendString(b, e.ShellKind)
	b = append(b, `,"auto_shell":`...)
	b = strconv.AppendBool(b, e.AutoShell)
	return append(e.limitsOut.appendJSON(b), '}')
}

// appendJSON appends o's fields as json.Marshal writes them inside the
// object that embeds it: each after a comma, those left out that
// omitempty or omitzero leave out.
func (o limitsOut) appendJSON(b []byte) []byte {
	if o.LimitHit != "" {
		b = append(b, `,"limit_hit":`...)
		b = jsonenc.AppendString(b, o.LimitHit)
	}
	if len(o.LimitsEnforcedBy) > 0 {
		b = append(b, `,"limits_enforced_by":{`...)
		for i, k := range slices.Sorted(maps.Keys(o.LimitsEnforcedBy)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, k)
			b = append(b, ':')
			b = jsonenc.AppendString(b, o.LimitsEnforcedBy[k])
		}
		b = append(b, '}')
	}
	if !o.Usage.IsZero() {
		b = append(b, `,"usage":`...)
		b = o.Usage.Usage.AppendJSON(b)
	}
	return b
}

func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return jsonenc.AppendString(b, *s)
}

func appendIntPtr(b []byte, v *int) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(*v), 10)
}
