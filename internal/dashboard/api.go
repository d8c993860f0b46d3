package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", d.page)
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(d.files)))
	m.HandleFunc("GET /api/state", d.get(func(r *http.Request) (any, error) { return d.o.State(r.Context()) }))
	m.HandleFunc("GET /api/jobs", d.get(d.jobs))
	m.HandleFunc("GET /api/jobs/{id}", d.get(d.job))
	m.HandleFunc("GET /api/jobs/{id}/output", d.get(d.output))
	m.HandleFunc("GET /api/jobs/{id}/log", d.get(d.mergedLog))
	m.HandleFunc("GET /api/jobs/{id}/raw", d.raw)
	m.HandleFunc("POST /api/jobs/{id}/stop", d.post(d.stop))
	m.HandleFunc("POST /api/jobs/{id}/rerun", d.post(d.rerun))
	m.HandleFunc("GET /api/loose-ends", d.get(d.looseEnds))
	m.HandleFunc("POST /api/todos/clear", d.post(d.clearTodos))
	m.HandleFunc("POST /api/reminders/{id}/cancel", d.post(d.cancelReminder))
	m.HandleFunc("POST /api/messages", d.post(d.send))
	m.HandleFunc("GET /api/messages/{id}", d.get(d.message))
	m.HandleFunc("POST /api/messages/{id}/drop", d.post(d.drop))
	m.HandleFunc("POST /api/compact", d.post(d.compact))
	m.HandleFunc("GET /api/ptys", d.get(d.ptys))
	m.HandleFunc("GET /api/ptys/{id}", d.get(d.ptyScreen))
	m.HandleFunc("POST /api/ptys/{id}/takeover", d.post(d.takeover))
	m.HandleFunc("POST /api/ptys/{id}/release", d.post(d.release))
	m.HandleFunc("POST /api/ptys/{id}/input", d.post(d.input))
	m.HandleFunc("GET /api/activity", d.get(d.activity))
	m.HandleFunc("GET /api/swarm", d.get(d.swarm))
	m.HandleFunc("GET /api/events", d.events)
	m.HandleFunc("POST /api/logout", d.logout)
	m.HandleFunc("GET /api/usage", d.get(func(*http.Request) (any, error) {
		return map[string][]Sample{"samples": d.usage.list()}, nil
	}))
	d.mux = m
}

// apiError is an error with the HTTP status to answer it with.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

// fail answers {"error": msg} with code.
func fail(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// answer writes v, or the error: an apiError with its code, else the
// status of the error's class (errdefs: not found 404, conflict 409 — an
// ended job, a refused compaction —, invalid 400, limit 429, unavailable
// 503), else 500.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		var ae *apiError
		code := http.StatusInternalServerError
		switch {
		case errors.As(err, &ae):
			code = ae.code
		case errors.Is(err, errdefs.ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, errdefs.ErrConflict):
			code = http.StatusConflict
		case errors.Is(err, errdefs.ErrInvalid):
			code = http.StatusBadRequest
		case errors.Is(err, errdefs.ErrLimit):
			code = http.StatusTooManyRequests
		case errors.Is(err, errdefs.ErrUnavailable):
			code = http.StatusServiceUnavailable
		}
		fail(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (d *Dashboard) get(f func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r)
		answer(w, v, err)
	}
}

// post reads the JSON body (if any) into the handler's argument.
func (d *Dashboard) post(f func(r *http.Request, body []byte) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mb.Limit))
				return
			}
			fail(w, http.StatusBadRequest, "read request body: "+err.Error())
			return
		}
		v, err := f(r, body)
		answer(w, v, err)
	}
}

// decode reads a JSON object body into v; an empty body leaves v as it is.
func decode(body []byte, v any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: want a JSON object (docs/http-api.md): %v", err)
	}
	return nil
}

// maxEventCmd bounds the command a job event carries: the page asks
// GET /api/jobs/{id} for the whole of it.
const maxEventCmd = 1 << 10

// eventJob is a job as a "job" event carries it: its command cut to
// maxEventCmd bytes (on a UTF-8 boundary) and its argv left out when the
// command is cut or the argv is as long, with CmdTruncated set.
func eventJob(j view.Job) view.Job {
	argv := 0
	for _, a := range j.Argv {
		argv += len(a)
	}
	long := len(j.Cmd) > maxEventCmd || argv > maxEventCmd
	if len(j.Cmd) > maxEventCmd {
		cut := maxEventCmd
		for cut > 0 && !utf8.RuneStart(j.Cmd[cut]) {
			cut--
		}
		j.Cmd = j.Cmd[:cut]
	}
	if long {
		j.Argv, j.CmdTruncated = nil, true
	}
	return j
}

// Counters are a running job's output counters, as a "job_counters"
// event carries them between its state changes.
type Counters struct {
	ID            string `json:"id"`
	State         string `json:"state"`
	DurationMs    int64  `json:"duration_ms"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty"`
	StderrDropped int64  `json:"stderr_dropped,omitempty"`
}

func toCounters(in view.Job) Counters {
	return Counters{ID: in.ID, State: in.State, DurationMs: in.DurationMs, StdoutBytes: in.StdoutBytes,
		StderrBytes: in.StderrBytes, StdoutDropped: in.StdoutDropped, StderrDropped: in.StderrDropped}
}

// Limits of GET /api/jobs.
const (
	defaultPage = 50
	maxPage     = 500
	maxQuery    = 200
)

func (d *Dashboard) jobs(r *http.Request) (any, error) {
	v := r.URL.Query()
	q := service.JobQuery{Limit: defaultPage, Text: v.Get("q")}
	if s := v.Get("state"); s != "" {
		for _, st := range strings.Split(s, ",") {
			if !service.ValidJobState(st) {
				return nil, badRequest("state %q: not a job state (pending, running, done, timed_out, killed, interrupted, failed; several: comma-separated)", st)
			}
			q.States = append(q.States, st)
		}
	}
	if s := v.Get("status"); s != "" {
		if !service.ValidJobStatus(s) {
			return nil, badRequest("status %q: want ok or error (error: every job that did not succeed)", s)
		}
		q.Status = s
	}
	if len(q.Text) > maxQuery {
		return nil, badRequest("q: at most %d bytes", maxQuery)
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return nil, badRequest("limit %q: want a whole number from 1 to %d", s, maxPage)
		}
		q.Limit = n
	}
	if s := v.Get("before"); s != "" {
		msStr, id, ok := strings.Cut(s, ".")
		n, err := strconv.ParseInt(msStr, 10, 64)
		if !ok || err != nil || n <= 0 || id == "" {
			return nil, badRequest("before %q: want the next_before of the previous page (CREATED_MS.ID)", s)
		}
		q.BeforeCreated, q.BeforeID = time.UnixMilli(n), id
	}
	infos, err := d.o.Service.JobPage(r.Context(), q)
	if err != nil {
		return nil, err
	}
	out := struct {
		Jobs       []view.Job `json:"jobs"`
		NextBefore string     `json:"next_before,omitempty"`
	}{Jobs: infos}
	if len(infos) == q.Limit {
		last := infos[len(infos)-1]
		out.NextBefore = fmt.Sprintf("%d.%s", last.Created.UnixMilli(), last.ID)
	}
	return out, nil
}

func (d *Dashboard) job(r *http.Request) (any, error) {
	// The one view of a job (package view), as `hive inspect` and the MCP
	// tools show it too.
	v, err := d.o.Service.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return d.o.Service.WithLiveUsage(v), nil // a running job's usage so far
}

// Limits of GET /api/jobs/{id}/output.
const (
	defaultRange = 64 << 10
	maxRange     = 1 << 20
)

// Output is a range of a job's stream.
type Output struct {
	Stream string `json:"stream"`
	// Offset is the offset of Data's first byte; Next the offset to ask
	// next; Total the bytes the stream has had.
	Offset  int64  `json:"offset"`
	Next    int64  `json:"next"`
	Total   int64  `json:"total"`
	Skipped int64  `json:"skipped,omitempty"`
	EOF     bool   `json:"eof"`
	Data    string `json:"data"`
}

func (d *Dashboard) output(r *http.Request) (any, error) {
	v := r.URL.Query()
	stream := v.Get("stream")
	switch stream {
	case "":
		stream = "stdout"
	case "stdout", "stderr":
	default:
		return nil, badRequest("stream %q: want stdout or stderr", stream)
	}
	limit := defaultRange
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxRange {
			return nil, badRequest("limit %q: want a whole number of bytes from 1 to %d", s, maxRange)
		}
		limit = n
	}
	var off int64
	if s := v.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, badRequest("offset %q: want a whole number of bytes (negative: from the end)", s)
		}
		off = n
	}
	id := r.PathValue("id")
	in, err := d.o.Service.Job(r.Context(), id)
	if err != nil {
		return nil, err
	}
	total, dropped, path := in.StdoutBytes, in.StdoutDropped, in.StdoutPath
	if stream == "stderr" {
		total, dropped, path = in.StderrBytes, in.StderrDropped, in.StderrPath
	}
	out := Output{Stream: stream, Total: total}
	if off < 0 {
		off = max(0, total+off)
	}
	if j, err := d.o.Service.LiveJob(in.ID); err == nil { // the job read, not a newer one of that name
		s := j.Stdout()
		if stream == "stderr" {
			s = j.Stderr()
		}
		if s != nil {
			c, err := s.Read(off, limit)
			if err != nil {
				return nil, err
			}
			out.Total = max(out.Total, s.Stats().Total)
			out.Offset, out.Next, out.Skipped, out.EOF = c.Offset, c.Next, c.Skipped, c.EOF
			out.Data, out.Next = text(c.Data, c.Next, c.EOF)
			return out, nil
		}
	}
	return d.fromFile(id, path, out, off, total-dropped, limit, service.JobEnded(in))
}

// fromFile reads a range of an ended job no longer in memory from its
// file, which holds the stream's first inFile bytes (past the file cap
// they were dropped, only counted). A range at or past the file's end,
// or of a file gone, skips to the stream's end, as output.Stream.Read
// does with bytes no longer kept. The file is opened as the stream
// opens it: never through a link.
func (d *Dashboard) fromFile(id, path string, out Output, off, inFile int64, limit int, ended bool) (Output, error) {
	total := out.Total
	skip := func() (Output, error) {
		if off < total {
			out.Skipped = total - off
		}
		out.Offset, out.Next, out.EOF = total, total, ended
		return out, nil
	}
	if path == "" || off >= inFile {
		return skip()
	}
	f, err := paths.OpenFile(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return skip()
	}
	if err != nil {
		return out, fmt.Errorf("open output of %s: %w", id, err)
	}
	defer f.Close()
	buf := make([]byte, min(int64(limit), inFile-off))
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return out, fmt.Errorf("read output of %s: %w", id, err)
	}
	if n == 0 { // the file is shorter than its record says
		return skip()
	}
	next := off + int64(n)
	eof := ended && next >= total
	out.Offset = off
	out.Data, out.Next = text(buf[:n], next, eof)
	out.EOF = eof && out.Next >= total
	return out, nil
}

// text cuts an incomplete UTF-8 character off the end of b (unless the
// stream has ended there), so a range never splits one; it returns the
// text and the offset after it.
func text(b []byte, next int64, eof bool) (string, int64) {
	if !eof {
		for i := 1; i <= 3 && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					next -= int64(i)
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	return string(b), next
}

func (d *Dashboard) stop(r *http.Request, body []byte) (any, error) {
	var req struct {
		Force bool `json:"force"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	v, err := d.o.Service.KillJob(id, req.Force)
	if errors.Is(err, service.ErrJobEnded) {
		return nil, fmt.Errorf("job %s: %w (%s)", id, err, v.State)
	}
	if err != nil {
		return nil, err
	}
	d.log.Info("dashboard: job stopped", "job", id, "force", req.Force)
	return v, nil
}

func (d *Dashboard) rerun(r *http.Request, _ []byte) (any, error) {
	id := r.PathValue("id")
	v, err := d.o.Service.RerunJob(r.Context(), id, "dashboard")
	if err != nil {
		return nil, err
	}
	d.log.Info("dashboard: job run again", "job", id, "new_job", v.ID)
	return v, nil
}

// maxMessagesListed bounds the messages GET /api/loose-ends lists.
const maxMessagesListed = 200

// looseEnds is GET /api/loose-ends: the service's LooseEnds, each record
// in its one view.
func (d *Dashboard) looseEnds(r *http.Request) (any, error) {
	return d.o.Service.LooseEnds(r.Context(), maxMessagesListed)
}

func pathID(r *http.Request) (int64, error) {
	s := r.PathValue("id")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest("id %q: want a positive whole number", s)
	}
	return n, nil
}

func (d *Dashboard) clearTodos(r *http.Request, body []byte) (any, error) {
	var req struct {
		IDs []int64 `json:"ids"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if len(req.IDs) == 0 {
		return nil, badRequest("ids: give at least one todo id")
	}
	n, err := d.o.Service.MarkTodosDone(r.Context(), req.IDs)
	if err != nil {
		return nil, err
	}
	d.log.Info("dashboard: todos cleared", "ids", req.IDs, "cleared", n)
	return map[string]int{"cleared": n}, nil
}

func (d *Dashboard) cancelReminder(r *http.Request, _ []byte) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	if err := d.o.Service.CancelReminder(r.Context(), id); err != nil {
		return nil, err
	}
	d.log.Info("dashboard: reminder cancelled", "id", id)
	return map[string]bool{"cancelled": true}, nil
}

// operator is the sender of the messages sent from the dashboard.
const operator = "operator"

func (d *Dashboard) send(r *http.Request, body []byte) (any, error) {
	var req struct {
		Body string `json:"body"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Body) == "" {
		return nil, badRequest("body: the message must not be empty")
	}
	m, err := d.o.Service.Send(r.Context(), operator, req.Body)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	d.log.Info("dashboard: message sent", "id", m.ID, "bytes", len(req.Body))
	return map[string]int64{"id": m.ID}, nil
}

func (d *Dashboard) message(r *http.Request) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	return d.o.Service.Message(r.Context(), id) // whole: the body, not the preview
}

func (d *Dashboard) drop(r *http.Request, _ []byte) (any, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	if err := d.o.Service.DropMessage(r.Context(), id); err != nil {
		return nil, err
	}
	d.log.Info("dashboard: message dropped", "id", id)
	return map[string]bool{"dropped": true}, nil
}

func (d *Dashboard) compact(r *http.Request, _ []byte) (any, error) {
	st, err := d.o.Service.Compact(r.Context())
	if err != nil {
		return nil, err
	}
	d.log.Info("dashboard: compaction asked")
	return map[string]any{"compact_pending": st.CompactPending, "context_usage": st.ContextUsage}, nil
}

// PTY is a PTY session as the API shows it: the one view of a session
// (package view), with who has taken it over; Screen only for one session.
type PTY struct {
	view.Session
	// HeldBy is who has taken the session over (only they may type into
	// it), until HeldUntil; HeldByYou: the one asking.
	HeldBy    string    `json:"held_by,omitempty"`
	HeldUntil time.Time `json:"held_until,omitzero"`
	HeldByYou bool      `json:"held_by_you,omitempty"`
	Screen    *Screen   `json:"screen,omitempty"`
}

// Screen is a rendered terminal screen.
type Screen struct {
	Text      string `json:"text"`
	CursorRow int    `json:"cursor_row"`
	CursorCol int    `json:"cursor_col"`
	AltScreen bool   `json:"alt_screen"`
}

func toPTY(in view.Session) PTY { return PTY{Session: in} }

// withHold adds pty's take-over, as r's sender sees it (r nil: anyone).
func (d *Dashboard) withHold(p PTY, r *http.Request) PTY {
	if x, ok := d.holds.get(p.ID, time.Now()); ok {
		p.HeldBy, p.HeldUntil = x.by.label, view.Time(x.until)
		if r != nil {
			me, _ := r.Context().Value(holderKey{}).(holder)
			p.HeldByYou = me.key == x.by.key
		}
	}
	return p
}

func (d *Dashboard) ptys(r *http.Request) (any, error) {
	out := []PTY{}
	for _, in := range d.o.Service.PTYs() {
		out = append(out, d.withHold(toPTY(in), r))
	}
	return map[string][]PTY{"ptys": out}, nil
}

func (d *Dashboard) session(r *http.Request) (view.Session, error) {
	return d.o.Service.PTYSession(r.PathValue("id"))
}

func (d *Dashboard) ptyScreen(r *http.Request) (any, error) {
	s, sc, err := d.o.Service.PTYScreen(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	p := d.withHold(toPTY(s), r)
	p.Screen = &Screen{Text: sc.Text, CursorRow: sc.CursorRow, CursorCol: sc.CursorCol, AltScreen: sc.AltScreen}
	return p, nil
}

// takeover is POST /api/ptys/{id}/takeover: the sender (a dashboard
// session, or the bearer token) alone may type into the session until it
// releases it or the take-over expires (TakeoverLife after it or the
// latest input). Another holder's take-over in force: 409, unless force.
func (d *Dashboard) takeover(r *http.Request, body []byte) (any, error) {
	var req struct {
		Force bool `json:"force"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	s, err := d.session(r)
	if err != nil {
		return nil, err
	}
	if !s.Running {
		return nil, fmt.Errorf("pty session %s: %w", s.ID, service.ErrPTYExited)
	}
	me, _ := r.Context().Value(holderKey{}).(holder)
	if err := d.holds.take(s.ID, me, req.Force, time.Now()); err != nil {
		return nil, &apiError{http.StatusConflict, err.Error()}
	}
	d.log.Warn("dashboard: the operator took over a pty session", "session_id", s.ID, "by", me.label, "force", req.Force, "remote", r.RemoteAddr)
	return map[string]any{"taken_over": true, "until": view.Time(time.Now().Add(d.o.TakeoverLife))}, nil
}

// release is POST /api/ptys/{id}/release: it ends the sender's take-over.
func (d *Dashboard) release(r *http.Request, _ []byte) (any, error) {
	s, err := d.session(r)
	if err != nil {
		return nil, err
	}
	me, _ := r.Context().Value(holderKey{}).(holder)
	ok := d.holds.release(s.ID, me)
	if ok {
		d.log.Info("dashboard: the operator released a pty session", "session_id", s.ID, "by", me.label)
	}
	return map[string]bool{"released": ok}, nil
}

// maxInput bounds one input request of a PTY take-over.
const maxInput = 64 << 10

func (d *Dashboard) input(r *http.Request, body []byte) (any, error) {
	var req struct {
		Data string `json:"data"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if req.Data == "" || len(req.Data) > maxInput {
		return nil, badRequest("data: want 1 to %d bytes of input", maxInput)
	}
	s, err := d.session(r)
	if err != nil {
		return nil, err
	}
	me, _ := r.Context().Value(holderKey{}).(holder)
	if !d.holds.use(s.ID, me, time.Now()) {
		msg := "pty session " + s.ID + ": take it over first (POST /api/ptys/" + s.ID + "/takeover): input needs a take-over in force"
		if x, ok := d.holds.get(s.ID, time.Now()); ok {
			msg += "; " + x.by.label + " has it"
		}
		return nil, &apiError{http.StatusConflict, msg}
	}
	noWait := time.Duration(0)
	if _, err := d.o.Service.SendPTY(r.Context(), service.PTYSend{Session: s.ID, Input: req.Data, Wait: &noWait, Operator: true}); err != nil {
		return nil, err
	}
	d.log.Info("dashboard: operator input to a pty session", "session_id", s.ID, "bytes", len(req.Data))
	return map[string]bool{"sent": true}, nil
}

func (d *Dashboard) activity(r *http.Request) (any, error) {
	var since uint64
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, badRequest("since %q: want the seq of the last call seen", s)
		}
		since = n
	}
	calls, _ := d.o.Service.Activity.Since(since)
	if calls == nil {
		return map[string]any{"calls": []any{}}, nil
	}
	return map[string]any{"calls": calls}, nil
}

// Swarm is the answer of GET /api/swarm: the swarm this daemon joined and
// its directory.
type Swarm struct {
	// Swarm is the swarm's name, "" when the daemon joined none (then
	// Note says so and Agents is empty).
	Swarm string `json:"swarm"`
	Note  string `json:"note,omitempty"`
	// Hive is this daemon's host; Self this agent's name.
	Hive   string               `json:"hive"`
	Self   string               `json:"self"`
	Agents []service.SwarmAgent `json:"agents"`
}

// swarm lists the swarm's directory (503 while NATS is away). Outside a
// swarm it answers an empty one, not an error: the page asks on every
// load, to know whether to show its swarm link.
func (d *Dashboard) swarm(r *http.Request) (any, error) {
	name, hive, ok := d.o.Service.InSwarm()
	if !ok {
		return Swarm{Note: service.ErrNoSwarm.Error(), Agents: []service.SwarmAgent{}}, nil
	}
	agents, err := d.o.Service.SwarmAgents(r.Context())
	if err != nil {
		return nil, err
	}
	st, _ := d.o.Service.AgentState()
	for i := range agents {
		// Another agent's entry is another host's word: only an http(s)
		// address becomes a link (never javascript: or data:).
		if !webURL(agents[i].DashboardURL) {
			agents[i].DashboardURL = ""
		}
	}
	return Swarm{Swarm: name, Hive: hive, Self: st.Name, Agents: agents}, nil
}

// webURL reports whether s is an absolute http or https address.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
