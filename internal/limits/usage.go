package limits

import (
	"fmt"
	"strconv"
)

// Usage is what a job used: at its end, in all (its cgroup's
// memory.peak and cpu.stat, else the leader's rusage, which counts the
// descendants it waited for); while it runs, so far, with its memory
// now.
type Usage struct {
	// MemoryPeakBytes is the most memory the job had at once (cgroup
	// memory.peak; without a memory controller, the largest resident
	// set of one process, rusage's maxrss, when it is known to be the
	// job's: see job.rusageOf). 0: unknown (not told).
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty"`
	CPUUserMS       int64 `json:"cpu_user_ms"`
	CPUSystemMS     int64 `json:"cpu_system_ms"`
	// MemoryBytes is a running job's memory now (cgroup memory.current,
	// else the leader's resident set); 0 once it ended.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// OOMKills counts the processes the memory limit killed (cgroup
	// memory.events oom_kill).
	OOMKills int64 `json:"oom_kills,omitempty"`
	// PidsRefused counts the forks the pids limit refused (cgroup
	// pids.events max).
	PidsRefused int64 `json:"pids_refused,omitempty"`
	// Throttled counts the periods the cpus limit held the job back
	// (cgroup cpu.stat nr_throttled).
	Throttled int64 `json:"cpu_throttled,omitempty"`
}

// Hit is the limit that ended or held back a job, by field name (Memory,
// Pids, CPUs), and what to tell of it ("" and "" for none). Memory: a
// process of it was killed for memory; Pids: forks were refused; CPUs:
// the CPU time rlimit killed it (sigxcpu). Throttling by cpu.max is no
// hit: it is what cpus asks.
func Hit(l Limits, u Usage, sigxcpu bool) (field, message string) {
	switch {
	case u.OOMKills > 0:
		return Memory, fmt.Sprintf("killed by the memory limit (%s)", FormatMB(l.MemoryMB))
	case sigxcpu && l.CPUs > 0:
		return CPUs, fmt.Sprintf("killed by the CPU time limit (cpus %g × its timeout)", l.CPUs)
	case u.PidsRefused > 0:
		return Pids, fmt.Sprintf("%d fork(s) refused by the pids limit (%d)", u.PidsRefused, l.Pids)
	}
	return "", ""
}

// AppendJSON appends u as json.Marshal writes it (the omitempty fields
// left out when 0), for the encoders of hot answers that write their
// JSON directly (TestUsageAppendJSON holds it to json.Marshal).
func (u Usage) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if u.MemoryPeakBytes != 0 {
		b = append(b, `"memory_peak_bytes":`...)
		b = strconv.AppendInt(b, u.MemoryPeakBytes, 10)
		b = append(b, ',')
	}
	b = append(b, `"cpu_user_ms":`...)
	b = strconv.AppendInt(b, u.CPUUserMS, 10)
	b = append(b, `,"cpu_system_ms":`...)
	b = strconv.AppendInt(b, u.CPUSystemMS, 10)
	for _, f := range [...]struct {
		name string
		v    int64
	}{{`,"memory_bytes":`, u.MemoryBytes}, {`,"oom_kills":`, u.OOMKills}, {`,"pids_refused":`, u.PidsRefused}, {`,"cpu_throttled":`, u.Throttled}} {
		if f.v != 0 {
			b = append(b, f.name...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	return append(b, '}')
}
