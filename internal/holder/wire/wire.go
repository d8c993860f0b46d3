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

import (
	"encoding/json"
	"time"
)

// The protocol versions this build speaks: Proto is its newest, MinProto
// its oldest. Version 2: a spawn may name an environment sent before on
// its connection instead of carrying it whole (JobSpec.EnvRef). Version
// 3: the daemon may start a job itself and have the holder keep it
// (OpKeep, OpTake, EvSpares; docs/architecture.md, "the daemon forks, the
// holder keeps"). Version 4: OpStop may name a kept job: the holder
// notes the stop and goes on with it should it take the job over (a
// daemon keeps its jobs with a holder of version 4 only). Version 5: a
// keep carries the job's record (Kept.Record) and the holder lists it
// with the job (Job.Record): the daemon may answer a kept job's caller
// before its record is committed, since a next daemon finds the record
// with the holder. Version 6: a keep may carry the job's end
// (Request.End) and no descriptors: a job whose leader had exited when
// the fork returned, kept only once it ended (one line at its end where
// a keep and a kept_end went), its end kept until the ack as a kept
// job's told with OpKeptEnd.
const (
	Proto    = 6
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
	// Instance is the holder's mark (EnvHolder=Instance in each of its
	// jobs' environments), for the jobs a daemon starts and the holder
	// keeps (version 3).
	Instance string `json:"instance,omitempty"`
	// Keeps, the holder's: it keeps jobs a daemon started (OpKeep): it
	// runs on a kernel that tells it the exit of a process it did not
	// start; the daemon's: it would have it keep its jobs (version 3).
	Keeps bool `json:"keeps,omitempty"`
}

// Ops of a request.
const (
	OpHello = "hello" // the daemon's hello
	OpSpawn = "spawn"
	// OpStop stops a held job (Force, Grace). Of a kept job (version 4;
	// NoReply) it tells the holder that its daemon stops it, before the
	// daemon signals it: a holder that takes the job over goes on with
	// the stop (SIGKILL once the grace, counted from when the holder
	// read the line, is over; SIGINT is not sent again), and its end
	// says Stopped.
	OpStop = "stop"
	OpAck  = "ack"
	OpHeld = "held"
	OpQuit = "quit" // exit if no job is held
	// PTY sessions: start one; close its master once it exited; and, as
	// the first line of a connection of its own, ask for a duplicate of
	// its master (one byte with the descriptor, then the holder hangs up).
	OpPTYSpawn = "pty_spawn"
	OpPTYClose = "pty_close"
	OpFD       = "fd"
	// OpKeep (version 3): the daemon started a job itself and pumps and
	// waits for it; the holder keeps it, to take it over should the
	// daemon go. The line carries three descriptors (SCM_RIGHTS): the
	// leader's pidfd and read ends of its stdout and stderr pipes. No
	// answer is awaited. The daemon's ack of the job's end lets the
	// holder close them.
	OpKeep = "keep"
	// OpTake (version 3): the daemon lets its kept jobs go (a restart
	// that keeps them): the holder pumps and waits for each from the
	// counts given, and answers once it does; the daemon then exits.
	OpTake = "take"
	// OpKeptEnd (version 3): a kept job ended, as the daemon answers its
	// caller before its record is committed: the holder keeps this end
	// (End) until the ack, and tells it to the next daemon should this
	// one die first. No answer is awaited.
	OpKeptEnd = "kept_end"
	// OpKilled (version 3): was the cgroup the holder lent kept job ID
	// written cgroup.kill while it ran (Grace: how long to wait for the
	// write to be seen)? The answer's Killed says.
	OpKilled = "killed"
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
	// Keep is OpKeep's job; Take OpTake's jobs (their ids and the
	// counts of their streams as the daemon last wrote them).
	Keep *Kept   `json:"keep,omitempty"`
	Take []Job   `json:"take,omitempty"`
	End  *JobEnd `json:"end,omitempty"`
}

// Kept is a job a daemon started itself, as OpKeep tells the holder:
// its spec (id, files, index, cap, owner, leftover grace, limits,
// timeout; no command, environment or stdin) and its start (pid, start
// time, the cgroup it took from EvSpares, how its limits are enforced).
//
// Record (version 5) is the daemon's record of the running job, opaque
// to the holder (it has the job's command, not its environment): the
// holder lists it with the job (Job.Record) until the job's end is
// acked, for a next daemon to record the job from should this one die
// before it committed it.
type Kept struct {
	Spec   JobSpec         `json:"spec"`
	Start  JobStart        `json:"start"`
	Record json.RawMessage `json:"record,omitempty"`
}

// Events the holder sends on its own.
const (
	EvProgress = "progress"
	EvEnd      = "end"
	// EvSpares (version 3) lends the daemon cgroups for the jobs it
	// starts itself (Message.Spares; a job's JobStart.Cgroup names the
	// one it took); more come as it takes them.
	EvSpares = "spares"
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

	Ev     string   `json:"ev,omitempty"`
	ID     string   `json:"id,omitempty"`
	Stdout *Counts  `json:"stdout,omitempty"`
	Stderr *Counts  `json:"stderr,omitempty"`
	End    *JobEnd  `json:"end,omitempty"`
	Spares []string `json:"spares,omitempty"`
	// Void, with EvSpares: the spares lent before are no more to be used
	// (their generation was written cgroup.kill or cgroup.freeze): drop
	// them, take these.
	Void bool `json:"void,omitempty"`
	// Killed answers OpKilled.
	Killed bool `json:"killed,omitempty"`
}
