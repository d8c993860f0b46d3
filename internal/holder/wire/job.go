package wire

import (
	"encoding/json"
	"time"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
)

// JobSpec is what a holder needs to run a job.
type JobSpec struct {
	ID   string   `json:"id"`
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// EnvRef (proto 2) names an environment of the connection's: the
	// job's is that one followed by Env. With EnvBase above zero the
	// spawn defines it: Env is the job's whole environment, of which the
	// first EnvBase entries are what EnvRef names from then on. A holder
	// that does not know the name refuses the spawn (EnvRefUnknown).
	// Most jobs of a session share all of their environment but their
	// marks: the 2-3 KiB of it is sent once a connection, not a spawn.
	EnvRef  string `json:"env_ref,omitempty"`
	EnvBase int    `json:"env_base,omitempty"`
	// EnvTail (never sent) is how many of Env's last entries are the
	// job's own (its marks), which a spawn always carries: the rest may
	// go by reference.
	EnvTail int    `json:"-"`
	Dir     string `json:"dir,omitempty"`
	Stdin   []byte `json:"stdin,omitempty"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Index   string `json:"index,omitempty"`
	// FileCap caps each stream file (0: the default, < 0: none).
	FileCap int64 `json:"file_cap,omitempty"`
	// Owner is the jobs' mark (HIVE_JOB_OWNER): what proves an escaped
	// process to be the job's.
	Owner         string        `json:"owner,omitempty"`
	LeftoverGrace time.Duration `json:"leftover_grace,omitempty"`
	// Limits are the job's resource limits (nil: none); Timeout its
	// timeout, of which a CPU time rlimit is made (limits.Split). A
	// holder of an older build ignores them: its JobStart then has no
	// LimitsBy.
	Limits  *limits.Limits `json:"limits,omitempty"`
	Timeout time.Duration  `json:"timeout,omitempty"`
}

// JobStart is a started job's process.
type JobStart struct {
	Pid      int       `json:"pid"`
	PidStart uint64    `json:"pid_start,omitempty"`
	Started  time.Time `json:"started"`
	// Cgroup is the job's cgroup in its holder (proc.JobCgroups), if it
	// has one: what is left in it ends with the job if the holder dies.
	Cgroup string `json:"cgroup,omitempty"`
	// LimitsBy is how each of the job's limits is enforced (nil: none).
	LimitsBy limits.Enforced `json:"limits_by,omitempty"`
}

// JobEnd is how a held job ended.
type JobEnd struct {
	ID       string    `json:"id"`
	Exited   bool      `json:"exited,omitempty"` // ExitCode and Signal are known
	ExitCode int       `json:"exit_code"`
	Signal   *int      `json:"signal,omitempty"`
	Error    string    `json:"error,omitempty"`
	Leftover int       `json:"leftover,omitempty"`
	Stopped  bool      `json:"stopped,omitempty"` // it was asked to stop
	Ended    time.Time `json:"ended"`
	Stdout   Counts    `json:"stdout"`
	Stderr   Counts    `json:"stderr"`
	// Usage is what the job used (nil: not told, an older holder), and
	// LimitHit the limit that ended or held it back ("" none).
	Usage    *limits.Usage `json:"usage,omitempty"`
	LimitHit string        `json:"limit_hit,omitempty"`
}

// Job is a job a holder holds.
type Job struct {
	ID string `json:"id"`
	JobStart
	Stdout Counts  `json:"stdout"`
	Stderr Counts  `json:"stderr"`
	End    *JobEnd `json:"end,omitempty"` // nil while it runs
	// Record is the record its daemon kept with it (Kept.Record), nil
	// for a job the holder started.
	Record json.RawMessage `json:"record,omitempty"`
}

// Counts are a stream's counters (output.Stats), as a holder tells them.
type Counts struct {
	Total   int64 `json:"total"`
	InFile  int64 `json:"in_file"`
	Dropped int64 `json:"dropped,omitempty"`
}

// CountsOf is a stream's counters as a holder tells them.
func CountsOf(s output.Stats) Counts { return Counts{s.Total, s.InFile, s.Dropped} }

// Stats are the counters as a stream takes them (output.Stream.Advance).
func (c Counts) Stats(closed bool) output.Stats {
	return output.Stats{Total: c.Total, InFile: c.InFile, Dropped: c.Dropped, Closed: closed}
}
