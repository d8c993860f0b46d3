//go:build linux || darwin

package job_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/store"
)

// limitsManager is a manager of jobs with the limits policy p: it runs
// them itself, or (held) through a holder served in this process. No
// cgroups: the limits are rlimits.
func limitsManager(t *testing.T, held bool, p limits.Policy) (*job.Manager, *store.Store) {
	t.Helper()
	dir, sock, st := heldSetup(t, 0)
	o := job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Owner: dir, Limits: p}
	if held {
		c, err := holder.Open(holder.ClientOptions{Socket: sock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		o.Holder = c
	}
	m, err := job.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, st
}

func runToEnd(t *testing.T, m *job.Manager, spec job.Spec) (job.Info, string) {
	t.Helper()
	j, err := m.Start(spec)
	if err != nil {
		t.Fatalf("start %q: %v", spec.Cmd, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in, ended := j.Wait(ctx)
	if !ended {
		t.Fatalf("job %q did not end", spec.Cmd)
	}
	out := ""
	if s := j.Stdout(); s != nil {
		c, _ := s.Read(0, 1<<20)
		out = string(c.Data)
	}
	return in, out
}

// Without cgroups a job's limits are rlimits, which the command sees;
// the job tells how each is enforced, and its usage, in its snapshot and
// in its record. The hog (it doubles a string up to 256 MiB) cannot grow
// past RLIMIT_AS.
func TestLimitsByRlimit(t *testing.T) {
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "own", true: "held"}[held]
		t.Run(name, func(t *testing.T) {
			m, st := limitsManager(t, held, limits.Policy{Default: limits.Limits{Nofile: 100}})
			in, out := runToEnd(t, m, job.Spec{Cmd: "ulimit -n; ulimit -v", Limits: limits.Limits{MemoryMB: 64}})
			if got := strings.Fields(out); len(got) != 2 || got[0] != "100" || got[1] != "65536" {
				t.Errorf("ulimit -n, -v in the job: %q, want 100 (the default) and 65536 (KiB)", out)
			}
			want := limits.Enforced{limits.Memory: limits.ByRlimit, limits.Nofile: limits.ByRlimit}
			if in.State != job.Done || !equalBy(in.LimitsBy, want) || in.Limits != (limits.Limits{MemoryMB: 64, Nofile: 100}) {
				t.Errorf("job %s, limits %+v enforced by %v; want done, by %v", in.State, in.Limits, in.LimitsBy, want)
			}
			// A shell's own: below this process's, whose memory it ran in
			// until its exec (see TestUsageMemoryPeak).
			if in.Usage == nil || in.Usage.MemoryPeakBytes >= shellPeak {
				t.Errorf("usage %+v: want a memory peak under %d (a shell's, not this process's)", in.Usage, shellPeak)
			}
			if j, err := m.Get(in.ID); err != nil || m.Sync(j) != nil {
				t.Fatalf("sync job %s: %v", in.ID, err)
			}
			rec, err := st.GetJob(context.Background(), in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Limits != in.Limits || !equalBy(rec.LimitsBy, want) || rec.Usage == nil || *rec.Usage != *in.Usage {
				t.Errorf("record: limits %+v by %v usage %+v; the job's: %+v by %v usage %+v", rec.Limits, rec.LimitsBy, rec.Usage, in.Limits, in.LimitsBy, in.Usage)
			}

			in, out = runToEnd(t, m, job.Spec{Cmd: `awk 'BEGIN { s = "x"; while (length(s) < 256 * 1024 * 1024) s = s s; print "grew to", length(s) }'`,
				Limits: limits.Limits{MemoryMB: 32}})
			if in.ExitCode == nil || *in.ExitCode == 0 || strings.Contains(out, "grew to") {
				t.Errorf("a hog under RLIMIT_AS 32 MiB: exit %v, %q; want a failed allocation", in.ExitCode, out)
			}
		})
	}
}

// shellPeak bounds the memory peak a shell's usage may tell: more is
// its spawner's (the holder's 20 MiB or more, a test process's more).
const shellPeak = 10 << 20

// TestUsageMemoryPeak: a job's memory peak from rusage is its own. A
// child started with vfork runs in its spawner's memory until its exec,
// whose high-water mark the kernel records as the child's maxrss: a
// `true` was told the spawner's peak. Now a peak up to the spawner's is
// not told (0), one above it is: an awk that grows a 128 MiB string.
func TestUsageMemoryPeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux's vfork and maxrss")
	}
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "own", true: "held"}[held]
		t.Run(name, func(t *testing.T) {
			m, _ := limitsManager(t, held, limits.Policy{})
			in, _ := runToEnd(t, m, job.Spec{Cmd: "true"})
			if in.Usage == nil || in.Usage.MemoryPeakBytes >= shellPeak {
				t.Errorf("true: usage %+v; want a memory peak under %d, not its spawner's", in.Usage, shellPeak)
			}
			in, out := runToEnd(t, m, job.Spec{Cmd: `awk 'BEGIN { s = "x"; while (length(s) < 128 * 1024 * 1024) s = s s; print length(s) }'`})
			if strings.TrimSpace(out) != "134217728" || in.Usage == nil || in.Usage.MemoryPeakBytes < 128<<20 {
				t.Errorf("a 128 MiB string: %q, usage %+v; want a memory peak of 128 MiB or more", out, in.Usage)
			}
		})
	}
}

func equalBy(a, b limits.Enforced) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A request may lower a default, never raise a limit past the operator's
// ceiling: that is refused naming the field and the ceiling, and
// nothing runs. A job that asks nothing runs under the ceiling.
func TestLimitsCeiling(t *testing.T) {
	m, _ := limitsManager(t, false, limits.Policy{Default: limits.Limits{Pids: 100}, Max: limits.Limits{MemoryMB: 128, Pids: 200}})
	_, err := m.Start(job.Spec{Cmd: "true", Limits: limits.Limits{MemoryMB: 256}})
	if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "limits.memory_mb 256") || !strings.Contains(err.Error(), "limits.max_memory_mb = 128") {
		t.Fatalf("memory_mb 256 over a ceiling of 128: %v", err)
	}
	if _, err := m.Start(job.Spec{Cmd: "true", Limits: limits.Limits{Pids: -1}}); err == nil || !strings.Contains(err.Error(), "limits.pids -1") {
		t.Errorf("pids -1: %v", err)
	}
	in, _ := runToEnd(t, m, job.Spec{Cmd: "true", Limits: limits.Limits{Pids: 50}})
	if in.Limits != (limits.Limits{MemoryMB: 128, Pids: 50}) {
		t.Errorf("limits %+v, want the ceiling's memory and the request's pids", in.Limits)
	}
}

// oldHolder spawns as a holder of a build before limits: it drops them.
type oldHolder struct{ *holder.Client }

func (h oldHolder) Spawn(spec wire.JobSpec) (wire.JobStart, error) {
	spec.Limits = nil
	st, err := h.Client.Spawn(spec)
	st.LimitsBy = nil
	return st, err
}

// A holder of an older build runs a job without its limits: the job
// says they were not enforced.
func TestLimitsOlderHolder(t *testing.T) {
	dir, sock, st := heldSetup(t, 0)
	c, err := holder.Open(holder.ClientOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := job.New(job.Options{Dir: filepath.Join(dir, "tasks"), Store: st, Holder: oldHolder{c}, Owner: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	in, out := runToEnd(t, m, job.Spec{Cmd: "ulimit -n", Limits: limits.Limits{Nofile: 64, MemoryMB: 100}})
	want := limits.Enforced{limits.Nofile: limits.ByNone, limits.Memory: limits.ByNone}
	if !equalBy(in.LimitsBy, want) || strings.TrimSpace(out) == "64" {
		t.Errorf("limits enforced by %v, ulimit -n %q; want %v, and no limit", in.LimitsBy, out, want)
	}
}
