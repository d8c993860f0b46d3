// Package holder is the process that holds a daemon's jobs, so that they
// outlive it: `hive holder`, one per state directory, started by the
// daemon and talked to over <state>/holder.sock (0600, same uid only).
// The holder is the parent (and child subreaper) of every job, pumps
// their pipes into the stream files, and keeps each end until the daemon
// acknowledges it; the daemon keeps the records, the loose ends and
// every surface. See docs/architecture.md.
//
// The protocol is one JSON object a line each way. The holder speaks
// first with its hello ({"hello":{"proto":N,"min":M,...}}); the daemon
// answers with its own. A daemon takes over a holder whose range of
// versions overlaps its own; otherwise it reports the holder as
// incompatible and leaves it (and its jobs) alone. New fields are
// optional; a new meaning gets a new version.
package holder

import (
	"errors"
	"fmt"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
)

// The protocol versions this build speaks: Proto is its newest, MinProto
// its oldest.
const (
	Proto    = 1
	MinProto = 1
)

// Hello is the first line each way.
type Hello struct {
	Proto int    `json:"proto"`
	Min   int    `json:"min"`
	Build string `json:"build,omitempty"`
	Pid   int    `json:"pid,omitempty"`
	// Tracking is how the holder finds processes that leave a job's
	// group (proc.Track*): the holder's only.
	Tracking string `json:"escape_tracking,omitempty"`
	// Cgroups is the cgroup the holder makes its jobs' cgroups in
	// (proc.JobCgroups), "" when it makes none.
	Cgroups string `json:"cgroups,omitempty"`
}

// Ops of a request.
const (
	OpHello = "hello" // the daemon's hello
	OpSpawn = "spawn"
	OpStop  = "stop"
	OpAck   = "ack"
	OpHeld  = "held"
	OpQuit  = "quit" // exit if no job is held
	// PTY sessions: start one; close its master once it exited; and, as
	// the first line of a connection of its own, ask for a duplicate of
	// its master (one byte with the descriptor, then the holder hangs up).
	OpPTYSpawn = "pty_spawn"
	OpPTYClose = "pty_close"
	OpFD       = "fd"
)

// Request is a line from the daemon.
type Request struct {
	Seq   uint64         `json:"seq,omitempty"`
	Op    string         `json:"op"`
	Hello *Hello         `json:"hello,omitempty"`
	Spawn *wire.JobSpec  `json:"spawn,omitempty"`
	PTY   *wire.PTYSpec  `json:"pty,omitempty"`
	ID    string         `json:"id,omitempty"`
	Force bool           `json:"force,omitempty"`
	Grace *time.Duration `json:"grace,omitempty"`
	// NoReply: the daemon waits for no answer but an error's (an ack).
	NoReply bool `json:"no_reply,omitempty"`
	// Deadline, on a spawn or pty_spawn, is when the daemon stops
	// waiting for the answer: a holder that reads it later (it was
	// stopped, or stuck) starts nothing and answers with an error.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Events the holder sends on its own.
const (
	EvProgress = "progress"
	EvEnd      = "end"
)

// Message is a line from the holder: its hello, an answer (Re: the
// request's Seq) or an event (Ev).
type Message struct {
	Hello *Hello `json:"hello,omitempty"`
	Re    uint64 `json:"re,omitempty"`
	Error string `json:"error,omitempty"`
	// Code is the class of Error (errdefs.Code), so that the daemon's
	// errors.Is finds it as the holder meant it; "" for none.
	Code string `json:"code,omitempty"`
	// err is a failure the client itself gives a call in flight (the
	// connection ended): never on the wire.
	err   error
	Start *wire.JobStart `json:"start,omitempty"`
	Held  []wire.Job     `json:"held,omitempty"`
	// Sessions: held's PTY sessions, and pty_spawn's session.
	Sessions []wire.PTYSession `json:"sessions,omitempty"`

	Ev     string       `json:"ev,omitempty"`
	ID     string       `json:"id,omitempty"`
	Stdout *wire.Counts `json:"stdout,omitempty"`
	Stderr *wire.Counts `json:"stderr,omitempty"`
	End    *wire.JobEnd `json:"end,omitempty"`
}

// ErrNotAnswering is wrapped by the error of a call the holder gave no
// answer to in time (ClientOptions.Timeout, SpawnTimeout): it is stopped
// (SIGSTOP) or stuck. It is job.ErrHolderNotAnswering, which the job
// manager tests for.
var ErrNotAnswering = job.ErrHolderNotAnswering

// ErrIncompatible is a holder whose protocol versions do not overlap the
// daemon's.
var ErrIncompatible = errors.New("the holder of the jobs speaks an incompatible protocol")

// compatible returns the version two hellos have in common.
func compatible(a, b Hello) (int, error) {
	v := min(a.Proto, b.Proto)
	if v < max(a.Min, b.Min) || v < 1 {
		return 0, fmt.Errorf("%w: it speaks %d..%d (build %q, pid %d), this hive %d..%d: its jobs are left running; they end with it, or stop them with the hive build that started it",
			ErrIncompatible, b.Min, b.Proto, b.Build, b.Pid, a.Min, a.Proto)
	}
	return v, nil
}

// maxLine bounds one line each way (a spawn carries an environment and
// up to the stdin a job may be given).
const maxLine = 64 << 20
