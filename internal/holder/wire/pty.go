package wire

import "github.com/hivetools/hive/internal/output"

// PTYSpec is what a holder needs to run a PTY session's process.
type PTYSpec struct {
	ID      string   `json:"id"`
	Path    string   `json:"path"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir,omitempty"`
	Cols    int      `json:"cols"`
	Rows    int      `json:"rows"`
	Output  string   `json:"output"`
	FileCap int64    `json:"file_cap,omitempty"`
}

// PTYSession is a PTY session a holder holds.
type PTYSession struct {
	ID       string `json:"id"`
	Pid      int    `json:"pid"`
	PidStart uint64 `json:"pid_start,omitempty"`
	TTY      string `json:"tty,omitempty"`
	// Output is encoded with output.Stats's field names (it has no
	// tags): {"Total":..,"InFile":..,"Dropped":..,"Closed":..}.
	Output   output.Stats `json:"output"`
	Exited   bool         `json:"exited,omitempty"`
	ExitCode int          `json:"exit_code,omitempty"`
}
