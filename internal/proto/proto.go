// Package proto is the wire format of the daemon's unix socket.
//
// A connection starts with one JSON line, a Request. The daemon answers
// with one JSON line, a Response. Then, depending on Cmd:
//   - "mcp": the connection carries MCP (newline-delimited JSON-RPC) for
//     one session until either side closes it;
//   - "logs": raw output bytes follow until the end (EOF);
//   - everything else: the connection is done.
//
// docs/socket-protocol.md describes every command.
package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/view"
)

// Commands.
const (
	CmdMCP     = "mcp"
	CmdPs      = "ps"
	CmdRun     = "run"
	CmdKill    = "kill"
	CmdLogs    = "logs"
	CmdWait    = "wait" // wait for a job's end: {id}
	CmdRm      = "rm"   // remove an ended job, its record and files: {id}
	CmdStatus  = "status"
	CmdVersion = "version"
	CmdStats   = "stats" // the daemon's own resources (goroutines, fds, memory, children)
	CmdWake    = "wake"  // inject an inbox message: {from, body}
	CmdTodo    = "todo"  // upsert a loose-end todo: {subsystem, key, summary}

	CmdClearTodo = "clear_todo" // clear a todo: {subsystem, key}
	CmdTodoLs    = "todo_ls"    // the open todos
	CmdInboxLs   = "inbox_ls"   // the messages, undelivered and in flight
	CmdInboxNext = "inbox_next" // pop the oldest message for a turn: {wait, timeout_secs}
	CmdInboxAck  = "inbox_ack"  // remove a message inbox_next delivered: {id}
	// CmdInboxRequeue puts every message in flight back in the queue: a
	// harness starting takes back what a dead one had popped.
	CmdInboxRequeue = "inbox_requeue"
	CmdTurn         = "turn" // a harness's turn state: {state, context_usage}
	// CmdGracefulStop appends the graceful-stop message and answers it:
	// the harness runs its last turn with it.
	CmdGracefulStop = "graceful_stop"
	// CmdDashboard asks for a one-time login URL of the dashboard (Response.URL).
	CmdDashboard = "dashboard_url"
	// CmdStop stops the daemon: {grace_secs, if_idle}. The answer line
	// comes at once; a second line (OK) when the daemon has stopped (its
	// jobs ended, the store closed, the socket removed, the lock free).
	CmdStop = "stop"
)

// Request is the first line of a connection.
type Request struct {
	Cmd string `json:"cmd"`

	// mcp: Stdio means the bridge's stdin and stdout come with this
	// request (SCM_RIGHTS) and the session runs on them directly.
	Stdio bool `json:"stdio,omitempty"`

	// mcp, run
	Cwd    string   `json:"cwd,omitempty"`
	Env    []string `json:"env,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// mcp: the form of tool answers, "structured" (default) or "text"
	// (see docs/answers.md).
	Answers string `json:"answers,omitempty"`

	// run; inbox_next (with Wait: how long to wait, 0 for no limit)
	Argv        []string `json:"argv,omitempty"`
	Name        string   `json:"name,omitempty"`
	TimeoutSecs float64  `json:"timeout_secs,omitempty"`
	// run: raise a loose end for the job (the agent's jobs do; the CLI's
	// only when asked).
	Notify bool `json:"notify,omitempty"`
	// run: the job's resource limits (nil: the daemon's defaults).
	Limits *limits.Limits `json:"limits,omitempty"`

	// inbox_next: wait for a message (or a changed todo).
	Wait bool `json:"wait,omitempty"`

	// turn
	State        string   `json:"state,omitempty"`
	ContextUsage *float64 `json:"context_usage,omitempty"`

	// kill, logs, status: a job's id or name. inbox_ack: a message's
	// id, sent as a JSON integer (a string of digits is accepted too).
	ID     string `json:"id,omitempty"`
	Force  bool   `json:"force,omitempty"`
	Follow bool   `json:"follow,omitempty"`
	Offset int64  `json:"offset,omitempty"`

	// logs: Stdout or Stderr selects one stream; neither merges both in
	// arrival order. Tail starts at the last Tail lines; Timestamps
	// prefixes each line with when it arrived.
	Stdout     bool `json:"stdout,omitempty"`
	Stderr     bool `json:"stderr,omitempty"`
	Tail       int  `json:"tail,omitempty"`
	Timestamps bool `json:"timestamps,omitempty"`

	// ps: All also lists ended jobs; States (any of), Name and Status
	// (what an ended job's end means: ok, or error for every job that
	// did not succeed; see service.JobQuery) filter; Last > 0 keeps the
	// Last newest of those (0: all of them).
	All    bool     `json:"all,omitempty"`
	States []string `json:"states,omitempty"`
	Status string   `json:"status,omitempty"`
	Last   int      `json:"last,omitempty"`

	// wake; To: an agent of the daemon's swarm (the message goes
	// there, from this agent, and From must be empty).
	From string `json:"from,omitempty"`
	Body string `json:"body,omitempty"`
	To   string `json:"to,omitempty"`

	// stop: how long running jobs have between SIGINT and SIGKILL (0:
	// the daemon's --grace); IfIdle: refuse (an error naming what runs)
	// unless the daemon is idle (see Activity.Idle).
	GraceSecs float64 `json:"grace_secs,omitempty"`
	// version: also compute the digest of the daemon's executable
	// (build.Info.Sum), for a caller whose stamp cannot tell the builds
	// apart.
	WantSum bool `json:"want_sum,omitempty"`
	IfIdle  bool `json:"if_idle,omitempty"`
	// stop: KeepJobs leaves the running jobs to the holder of the jobs
	// (hive restart): the next daemon adopts them. A daemon without a
	// holder stops them.
	KeepJobs bool `json:"keep_jobs,omitempty"`

	// todo, clear_todo
	Subsystem string `json:"subsystem,omitempty"`
	Key       string `json:"key,omitempty"`
	Summary   string `json:"summary,omitempty"`
}

// Response is the daemon's first line back.
type Response struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Code is the class of Error (errdefs.Code: "not_found", "conflict",
	// "invalid", "unavailable", "limit"), "" for an error of no class.
	// Err turns the two back into an error of that class.
	Code    string `json:"code,omitempty"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Stdio   bool   `json:"stdio,omitempty"` // the daemon took the bridge's stdio

	// version, when the daemon serves HTTP: the address it listens on,
	// "token" or "none", and the file holding the bearer token.
	HTTPAddr      string `json:"http_addr,omitempty"`
	HTTPAuth      string `json:"http_auth,omitempty"`
	HTTPTokenFile string `json:"http_token_file,omitempty"`

	// version: how the daemon finds the processes that leave a job's
	// group, "subreaper+marks", "marks" or "group" (docs/architecture.md).
	EscapeTracking string `json:"escape_tracking,omitempty"`
	// version: the process that holds the jobs so they outlive the
	// daemon, if any (docs/architecture.md).
	Holder *HolderInfo `json:"holder,omitempty"`
	// version: the daemon's build, how it was started (its arguments,
	// working directory and executable, for a restart with the same
	// flags), its settings and where each came from, and what it is busy
	// with. Supervisor is "systemd" under a systemd unit, else "".
	Build      *build.Info `json:"build,omitempty"`
	Args       []string    `json:"args,omitempty"`
	Cwd        string      `json:"cwd,omitempty"`
	Exe        string      `json:"exe,omitempty"`
	Settings   []Setting   `json:"settings,omitempty"`
	Activity   *Activity   `json:"activity,omitempty"`
	Supervisor string      `json:"supervisor,omitempty"`

	Job  *view.Job  `json:"job,omitempty"`
	Jobs []view.Job `json:"jobs,omitzero"` // ps: [] when none
	// ps: how many jobs matched, Jobs holding the newest Request.Last
	// of them.
	Total        int    `json:"total,omitempty"`
	AlreadyEnded bool   `json:"already_ended,omitempty"`
	TodoID       int64  `json:"todo_id,omitempty"`
	Stats        *Stats `json:"stats,omitempty"`

	MessageID int64       `json:"message_id,omitempty"` // wake
	SentSeq   uint64      `json:"sent_seq,omitempty"`   // wake with a to
	Requeued  *int        `json:"requeued,omitempty"`   // inbox_requeue
	Cleared   *bool       `json:"cleared,omitempty"`    // clear_todo
	Todos     []view.Todo `json:"todos,omitzero"`       // todo_ls
	// inbox_ls: the oldest messages (at most MaxListed), and how many are
	// undelivered (not in flight) in all.
	Messages    []view.Message `json:"messages,omitzero"`
	Undelivered *int           `json:"undelivered,omitempty"`
	// inbox_next, graceful_stop: the message; inbox_next: Empty when none came.
	Message *Message `json:"message,omitempty"`
	Empty   bool     `json:"empty,omitempty"`
	// turn: a compaction was pending, consumed by this move to idle.
	CompactPending *bool `json:"compact_pending,omitempty"`
	// dashboard_url: the one-time login URL.
	URL string `json:"url,omitempty"`
}

// Fail is the answer that reports err: its text and its class.
func Fail(err error) Response { return Response{Error: err.Error(), Code: errdefs.Code(err)} }

// Err is the error the answer reports (nil for none), of the class its
// Code names: errors.Is(r.Err(), errdefs.ErrNotFound) holds for a job the
// daemon does not know.
func (r Response) Err() error {
	if r.Error == "" {
		return nil
	}
	return errdefs.FromWire(r.Code, r.Error)
}

// MaxListed bounds the messages inbox_ls lists.
const MaxListed = 200

// Message is a message delivered for a turn (inbox_next, graceful_stop)
// with its whole body. ID 0 is the synthetic "loose-ends" message made of
// changed todos: it is not stored and needs no ack.
type Message struct {
	ID   int64  `json:"id"`
	From string `json:"from"`
	At   int64  `json:"at"` // unix seconds
	Body string `json:"body"`
}

// requestFields is Request without its methods.
type requestFields Request

// UnmarshalJSON decodes a request whose "id" is a JSON string or a JSON
// number (kept as its text: inbox_ack parses it).
func (r *Request) UnmarshalJSON(b []byte) error {
	var aux struct {
		requestFields
		ID json.RawMessage `json:"id,omitempty"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = Request(aux.requestFields)
	id := bytes.TrimSpace(aux.ID)
	switch {
	case len(id) == 0 || string(id) == "null":
	case id[0] == '"':
		if err := json.Unmarshal(id, &r.ID); err != nil {
			return err
		}
	case id[0] == '-' || id[0] >= '0' && id[0] <= '9':
		r.ID = string(id)
	default:
		return errors.New("id: must be a string or a number")
	}
	return nil
}

// MarshalJSON encodes a request; an inbox_ack's id goes as a JSON
// integer.
func (r Request) MarshalJSON() ([]byte, error) {
	aux := struct {
		requestFields
		ID json.RawMessage `json:"id,omitempty"`
	}{requestFields: requestFields(r)}
	if r.ID != "" {
		if n, err := strconv.ParseInt(r.ID, 10, 64); err == nil && r.Cmd == CmdInboxAck && strconv.FormatInt(n, 10) == r.ID {
			aux.ID = json.RawMessage(r.ID)
		} else {
			b, err := json.Marshal(r.ID)
			if err != nil {
				return nil, err
			}
			aux.ID = b
		}
	}
	return json.Marshal(aux)
}

// Stats is what the daemon holds right now: the figures a leak shows in.
type Stats struct {
	Goroutines int   `json:"goroutines"`
	FDs        int   `json:"fds"`
	Threads    int   `json:"threads"`
	RSS        int64 `json:"rss_bytes"`
	PeakRSS    int64 `json:"peak_rss_bytes"`
	// Children are the daemon's child processes; Zombies those of them
	// that have exited and were not yet reaped.
	Children    int `json:"children"`
	Zombies     int `json:"zombies"`
	JobsRunning int `json:"jobs_running"`
	PTYSessions int `json:"pty_sessions"`
	// HTTPConns are the open HTTP connections; HTTPSessions the live
	// streamable HTTP MCP sessions (with those being initialized).
	HTTPConns    int `json:"http_conns"`
	HTTPSessions int `json:"http_sessions"`
	// InboxWaiters are the connections waiting in inbox_next.
	InboxWaiters int `json:"inbox_waiters"`
	// StartsOwn counts the jobs the daemon forked itself since it
	// started (the short path; its holder keeps them), StartsHolder
	// those the holder of the jobs spawned, StartsNoSpare those of
	// them the daemon would have forked had it had a cgroup the holder
	// lent at hand.
	StartsOwn     int64 `json:"starts_own"`
	StartsHolder  int64 `json:"starts_holder"`
	StartsNoSpare int64 `json:"starts_no_spare"`
}

// Setting is one daemon setting: its flag name, its value as the flag
// prints it, and where it came from ("default", "file" with the file's
// path and line, or "flag").
type Setting struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// Activity is what a daemon is busy with: what a stop would cut short.
type Activity struct {
	Jobs         int `json:"jobs"`          // running or pending
	PTYSessions  int `json:"pty_sessions"`  // open
	MCPSessions  int `json:"mcp_sessions"`  // on the socket or stdio
	HTTPSessions int `json:"http_sessions"` // streamable HTTP
	InboxWaiters int `json:"inbox_waiters"` // harnesses waiting in inbox_next
}

// Idle reports whether nothing would be cut short by a stop.
func (a Activity) Idle() bool {
	return a.Jobs == 0 && a.PTYSessions == 0 && a.MCPSessions == 0 && a.HTTPSessions == 0 && a.InboxWaiters == 0
}

// String lists what is busy, "idle" when nothing is.
func (a Activity) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+what)
		}
	}
	add(a.Jobs, "job(s) running or pending")
	add(a.PTYSessions, "PTY session(s)")
	add(a.MCPSessions, "MCP session(s)")
	add(a.HTTPSessions, "HTTP session(s)")
	add(a.InboxWaiters, "inbox waiter(s)")
	if len(parts) == 0 {
		return "idle"
	}
	return strings.Join(parts, ", ")
}

// HolderInfo is the holder of a daemon's jobs, as `version` tells it.
type HolderInfo struct {
	Pid   int    `json:"pid"`
	Build string `json:"build,omitempty"`
	// Proto is the protocol version the two speak.
	Proto int `json:"proto"`
	// Cgroups is the cgroup the holder makes its jobs' cgroups in (with
	// escape_tracking cgroup+subreaper).
	Cgroups string `json:"cgroups,omitempty"`
	// KeepsJobs: the daemon starts its jobs itself (those without limits
	// or stdin) and the holder keeps them, to take them over should the
	// daemon go (protocol 4; HIVE_HOLDER_KEEP=off turns it off).
	KeepsJobs bool `json:"keeps_jobs,omitempty"`
}
