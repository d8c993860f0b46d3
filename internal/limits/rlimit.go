package limits

import (
	"math"
	"time"
)

// Rlimits are the rlimits a job's process gets (soft and hard alike, but
// CPU's hard limit is a second more: SIGXCPU at the soft one, not
// SIGKILL), for the limits no cgroup enforces. A zero field is left as
// it is.
type Rlimits struct {
	AS     uint64 // RLIMIT_AS and RLIMIT_DATA, bytes
	Nproc  uint64 // RLIMIT_NPROC
	CPU    uint64 // RLIMIT_CPU, seconds
	Nofile uint64 // RLIMIT_NOFILE
	// NofileSoft, with Nofile 0, is the soft RLIMIT_NOFILE the command
	// gets: the one the spawner's children start with (a Go program
	// raises its own at start and gives its children the one it had,
	// which it does not tell; the wrapper execs without the runtime's
	// help). 0 leaves the wrapper's, raised to its hard limit.
	NofileSoft uint64
}

// IsZero reports whether r sets nothing (NofileSoft is no limit).
func (r Rlimits) IsZero() bool { r.NofileSoft = 0; return r == Rlimits{} }

// Split divides l between cgroups that enforce the fields in cg (by
// name: Memory, Pids, CPUs; the value is which cgroup, ByCgroup or
// ByCgroupV1) and rlimits, which take the rest; nofile is always an
// rlimit. timeout is the job's (RLIMIT_CPU is cpus × timeout:
// with none, cpus without a cgroup is not enforced). It returns the
// rlimits and how each limit l sets is enforced (nil if l is zero);
// where Wrap sets no rlimits (Windows), those are none.
func Split(l Limits, cg Enforced, timeout time.Duration) (Rlimits, Enforced) {
	if l.IsZero() {
		return Rlimits{}, nil
	}
	var r Rlimits
	by := Enforced{}
	if l.MemoryMB > 0 {
		if b := cg[Memory]; b != "" {
			by[Memory] = b
		} else {
			r.AS, by[Memory] = uint64(l.MemoryMB)<<20, ByRlimit
		}
	}
	if l.Pids > 0 {
		switch {
		case cg[Pids] != "":
			by[Pids] = cg[Pids]
		case nprocBinds():
			r.Nproc, by[Pids] = uint64(l.Pids), ByRlimit
		default: // root: RLIMIT_NPROC does not bind it
			by[Pids] = ByNone
		}
	}
	if l.CPUs > 0 {
		switch {
		case cg[CPUs] != "":
			by[CPUs] = cg[CPUs]
		case timeout > 0:
			r.CPU, by[CPUs] = uint64(math.Ceil(l.CPUs*timeout.Seconds())), ByRlimit
		default:
			by[CPUs] = ByNone
		}
	}
	if l.Nofile > 0 {
		r.Nofile, by[Nofile] = uint64(l.Nofile), ByRlimit
	}
	if !canRlimit {
		for f, b := range by {
			if b == ByRlimit {
				by[f] = ByNone
			}
		}
		r = Rlimits{}
	}
	return r, by
}

// NoneOf says of each limit l sets that it is not enforced: what a
// holder of an older build, which knows no limits, does with them.
func NoneOf(l Limits) Enforced {
	if l.IsZero() {
		return nil
	}
	by := Enforced{}
	for _, f := range []struct {
		name string
		set  bool
	}{{Memory, l.MemoryMB > 0}, {Pids, l.Pids > 0}, {CPUs, l.CPUs > 0}, {Nofile, l.Nofile > 0}} {
		if f.set {
			by[f.name] = ByNone
		}
	}
	return by
}
