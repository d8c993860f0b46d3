package cli

import (
	"fmt"

	"github.com/hivetools/hive/internal/limits"
)

// limitFlags adds the daemon's flags of the jobs' resource limits to fs:
// hive.toml's [limits] table (memory_mb = 512 is --limits-memory-mb, its
// ceiling max_memory_mb is --limits-max-memory-mb). They fill p.
func limitFlags(fs *flagSet, p *limits.Policy) {
	for _, x := range []struct {
		l    *limits.Limits
		pre  string
		what string
	}{{&p.Default, "limits-", "default of each job's"}, {&p.Max, "limits-max-", "the most a job may ask as its"}} {
		fs.Int64Var(&x.l.MemoryMB, x.pre+"memory-mb", 0, x.what+" memory limit in MiB (0: none)")
		fs.Int64Var(&x.l.Pids, x.pre+"pids", 0, x.what+" limit of processes and threads at once (0: none)")
		fs.Float64Var(&x.l.CPUs, x.pre+"cpus", 0, x.what+" CPU limit, in cores (0.5 is half a core; 0: none)")
		fs.Int64Var(&x.l.Nofile, x.pre+"nofile", 0, x.what+" limit of open files per process (0: none)")
	}
}

// checkLimits checks the limits' settings: each in range, each default
// within its ceiling.
func (o *daemonOpts) checkLimits() error {
	if err := o.limits.Check(); err != nil {
		return fmt.Errorf("%w: %v%s", ErrUsage, err, o.from("limits-memory-mb", "limits-pids", "limits-cpus", "limits-nofile",
			"limits-max-memory-mb", "limits-max-pids", "limits-max-cpus", "limits-max-nofile"))
	}
	return nil
}
