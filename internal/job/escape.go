package job

import (
	"time"

	"github.com/hivetools/hive/internal/proc"
)

// sweepEscapes ends what is left of the job outside its group once its
// leader (pid pgid) has exited and its group was cleaned up: processes
// that left the group (setsid, a double fork into another session, …)
// but provably belong to the job (see escapees). They get SIGTERM, up to
// grace, then SIGKILL, like the group's leftovers; it returns how many
// there were, and whether anything of the job may still run (orphans):
// with a reaper, only if an adopted process is alive (whatever a job
// leaves running once its leader is gone is adopted, or descends from
// one that was). With a reaper the adopted ones are reaped before it
// returns, so a job that has ended leaves no zombie.
//
// The process table is scanned only when there may be something to find:
// with a reaper, when a live adopted child carries the job's marks (every
// process that outlived its parent and left the group is adopted, so the
// top of any escaped tree is one); without one, when the job was stopped
// or its group had leftovers (hadLeft).
func (c *child) sweepEscapes(pgid int, grace time.Duration, hadLeft bool) (n int, orphans bool) {
	since := c.pidStart.Load()
	if c.owner == "" || since == 0 {
		return 0, true // nothing to prove a process is this job's by
	}
	r := c.reaper
	need := false
	if r == nil {
		orphans = true
		need = hadLeft || c.stopped()
	} else {
		// The pass also reaps what the group cleanup killed.
		for _, pid := range r.Reap() {
			orphans = true
			if v, ok := proc.Getenv(pid, EnvJobID); ok && v == c.id {
				need = true
				break
			}
		}
	}
	if !need {
		return 0, orphans
	}
	n = terminateEscapees(c.id, c.owner, since, pgid, grace)
	if n > 0 {
		c.logger.Info("terminated processes that left a job's group", "job", c.id, "count", n)
	}
	r.Reap() // what else was killed (Terminate reaped the escapees by their pidfds)
	return n, true
}

// terminateEscapees terminates the processes outside group pgid proven
// job id's (escapees), and returns how many. Up to a few rounds: a
// process may have forked between a scan and its signal (what it forked
// carries the marks too).
func terminateEscapees(id, owner string, since uint64, pgid int, grace time.Duration) int {
	n := 0
	for round := 0; round < 3; round++ {
		found := escapees(id, owner, since, pgid)
		if len(found) == 0 {
			break
		}
		n += proc.Terminate(found, grace)
		grace = 0 // the rest of a tree that kept forking gets no more time
	}
	return n
}
