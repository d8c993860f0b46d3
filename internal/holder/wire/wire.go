// Package wire is the format of the holder's socket (internal/holder):
// every value that crosses it, each way, as JSON. It depends on no
// engine, so that the engines (internal/job, internal/pty) can speak in
// its terms while the holder imports them.
//
// The protocol is one JSON object a line each way. The holder speaks
// first with its hello ({"hello":{"proto":N,"min":M,...}}); the daemon
// answers with its own. A daemon takes over a holder whose range of
// versions overlaps its own; otherwise it reports the holder as
// incompatible and leaves it (and its jobs) alone. New fields are
// optional; a new meaning gets a new version. An encoding never changes
// within a version: wire_test.go pins it.
package wire

import "time"

// The protocol versions this build speaks: Proto is its newest, MinProto
// its oldest. Version 2: a spawn may name an environment sent before on
// its connection instead of carrying it whole (JobSpec.EnvRef).
const (
	Proto    = 2
	MinProto = 1
)

// EnvRefUnknown is the error of a spawn whose JobSpec.EnvRef names no
// environment the holder keeps for the connection (it keeps a few, the
// last defined): the daemon sends the spawn again with its environment
// whole.
const EnvRefUnknown = "env_ref: unknown on this connection"

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
	Spawn *JobSpec       `json:"spawn,omitempty"`
	PTY   *PTYSpec       `json:"pty,omitempty"`
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
	Code  string    `json:"code,omitempty"`
	Start *JobStart `json:"start,omitempty"`
	Held  []Job     `json:"held,omitempty"`
	// Sessions: held's PTY sessions, and pty_spawn's session.
	Sessions []PTYSession `json:"sessions,omitempty"`

	Ev     string  `json:"ev,omitempty"`
	ID     string  `json:"id,omitempty"`
	Stdout *Counts `json:"stdout,omitempty"`
	Stderr *Counts `json:"stderr,omitempty"`
	End    *JobEnd `json:"end,omitempty"`
}
