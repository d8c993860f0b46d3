// Package holder is the process that holds a daemon's jobs, so that they
// outlive it: `hive holder`, one per state directory, started by the
// daemon and talked to over <state>/holder.sock (0600, same uid only).
// The holder is the parent (and child subreaper) of every job, pumps
// their pipes into the stream files, and keeps each end until the daemon
// acknowledges it; the daemon keeps the records, the loose ends and
// every surface. See docs/architecture.md.
//
// What crosses the socket, and how the two sides agree on a version, is
// package wire (internal/holder/wire): Serve is the holder's side of it,
// Client the daemon's.
package holder

import (
	"errors"
	"fmt"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
)

// ErrNotAnswering is wrapped by the error of a call the holder gave no
// answer to in time (ClientOptions.Timeout, SpawnTimeout): it is stopped
// (SIGSTOP) or stuck. It is job.ErrHolderNotAnswering, which the job
// manager tests for.
var ErrNotAnswering = job.ErrHolderNotAnswering

// ErrIncompatible is a holder whose protocol versions do not overlap the
// daemon's.
var ErrIncompatible = errors.New("the holder of the jobs speaks an incompatible protocol")

// compatible returns the version two hellos have in common.
func compatible(a, b wire.Hello) (int, error) {
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
