// Package proto is the wire format of the daemon's unix socket.
//
// A connection starts with one JSON line, a Request. The daemon answers
// with one JSON line, a Response. Then, depending on Cmd:
//   - "mcp": the connection carries MCP (newline-delimited JSON-RPC) for
//     one session until either side closes it;
//   - "logs": raw output bytes follow until the end (EOF);
//   - everything else: the connection is done.
package proto

import "time"

// Commands.
const (
	CmdMCP     = "mcp"
	CmdPs      = "ps"
	CmdRun     = "run"
	CmdKill    = "kill"
	CmdLogs    = "logs"
	CmdStatus  = "status"
	CmdVersion = "version"
	CmdStats   = "stats" // the daemon's own resources (goroutines, fds, memory, children)
	CmdWake    = "wake"  // inject an inbox message: {from, body}
	CmdTodo    = "todo"  // upsert a loose-end todo: {subsystem, key, summary}
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

	// run
	Argv        []string `json:"argv,omitempty"`
	Name        string   `json:"name,omitempty"`
	TimeoutSecs float64  `json:"timeout_secs,omitempty"`

	// kill, logs, status
	ID     string `json:"id,omitempty"`
	Force  bool   `json:"force,omitempty"`
	Stderr bool   `json:"stderr,omitempty"`
	Follow bool   `json:"follow,omitempty"`
	Offset int64  `json:"offset,omitempty"`

	// ps
	All bool `json:"all,omitempty"`

	// wake
	From string `json:"from,omitempty"`
	Body string `json:"body,omitempty"`

	// todo
	Subsystem string `json:"subsystem,omitempty"`
	Key       string `json:"key,omitempty"`
	Summary   string `json:"summary,omitempty"`
}

// Response is the daemon's first line back.
type Response struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Stdio   bool   `json:"stdio,omitempty"` // the daemon took the bridge's stdio

	// version, when the daemon serves HTTP: the address it listens on,
	// "token" or "none", and the file holding the bearer token.
	HTTPAddr      string `json:"http_addr,omitempty"`
	HTTPAuth      string `json:"http_auth,omitempty"`
	HTTPTokenFile string `json:"http_token_file,omitempty"`

	Job          *Job   `json:"job,omitempty"`
	Jobs         []Job  `json:"jobs,omitempty"`
	AlreadyEnded bool   `json:"already_ended,omitempty"`
	TodoID       int64  `json:"todo_id,omitempty"`
	Stats        *Stats `json:"stats,omitempty"`
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
}

// Job is a job as the CLI shows it.
type Job struct {
	ID            string    `json:"id"`
	Name          string    `json:"name,omitempty"`
	Cmd           string    `json:"cmd"`
	Cwd           string    `json:"cwd,omitempty"`
	Source        string    `json:"source,omitempty"`
	State         string    `json:"state"`
	ExitCode      *int      `json:"exit_code"`
	Signal        *int      `json:"signal,omitempty"`
	Error         string    `json:"error,omitempty"`
	Pid           int       `json:"pid,omitempty"`
	Created       time.Time `json:"created"`
	Started       time.Time `json:"started,omitzero"`
	Ended         time.Time `json:"ended,omitzero"`
	DurationMs    int64     `json:"duration_ms"`
	StdoutPath    string    `json:"stdout_path"`
	StderrPath    string    `json:"stderr_path"`
	StdoutBytes   int64     `json:"stdout_bytes"`
	StderrBytes   int64     `json:"stderr_bytes"`
	StdoutDropped int64     `json:"stdout_dropped,omitempty"`
	StderrDropped int64     `json:"stderr_dropped,omitempty"`
	Leftover      int       `json:"leftover_processes,omitempty"`
}
