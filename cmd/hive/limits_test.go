//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// With cgroups off (HIVE_CGROUPS=off) a job's limits are rlimits, which
// the command sees; hive inspect tells how they were enforced and what
// the job used, and hive ps shows its memory and CPU. The defaults of
// hive.toml [limits] apply, and a request above a max_* ceiling is
// refused, naming the field and the ceiling; nothing runs.
func TestLimitsRlimitsWithoutCgroups(t *testing.T) {
	for _, hold := range []string{"--hold-jobs=true", "--hold-jobs=false"} {
		t.Run(strings.TrimPrefix(hold, "--"), func(t *testing.T) {
			t.Setenv("HIVE_CGROUPS", "off") // the daemon and its holder inherit it
			state := hivetest.StateDir(t)
			toml := "[limits]\nnofile = 200\nmax_memory_mb = 512\n"
			if err := os.WriteFile(filepath.Join(state, "hive.toml"), []byte(toml), 0o600); err != nil {
				t.Fatal(err)
			}
			hivetest.StartDaemon(t, state, hold)

			id, err := hivetest.Run(t, state, "run", "--memory", "64MiB", "--", "sh", "-c", "ulimit -n; ulimit -v")
			if err != nil {
				t.Fatalf("hive run: %v: %s", err, id)
			}
			id = strings.TrimSpace(id)
			if out, err := hivetest.Run(t, state, "wait", id); err != nil {
				t.Fatalf("hive wait: %v: %s", err, out)
			}
			if out, _ := hivetest.Run(t, state, "logs", id); strings.Join(strings.Fields(out), " ") != "200 65536" {
				t.Errorf("ulimit -n, -v in the job: %q; want 200 (hive.toml's default) and 65536 KiB (--memory 64MiB)", out)
			}
			j := inspectJob(t, state, id)
			if j.Limits == nil || j.Limits.MemoryMB != 64 || j.Limits.Nofile != 200 ||
				j.LimitsEnforcedBy["memory_mb"] != "rlimit" || j.LimitsEnforcedBy["nofile"] != "rlimit" {
				t.Errorf("limits %+v enforced by %v; want memory_mb 64 and nofile 200, both by rlimit", j.Limits, j.LimitsEnforcedBy)
			}
			// A shell's own peak, not the holder's whose memory it ran in
			// until its exec (internal/job TestUsageMemoryPeak).
			if j.Usage == nil || j.Usage.MemoryPeakBytes >= 10<<20 {
				t.Errorf("usage %+v: want a memory peak under 10 MiB (a shell's, not the holder's)", j.Usage)
			}
			if out, err := hivetest.Run(t, state, "ps", "-a"); err != nil || !strings.Contains(out, "MEM") || !strings.Contains(out, "CPU") {
				t.Errorf("hive ps -a: %v: %s; want MEM and CPU columns", err, out)
			}

			// cpus without a cgroup: RLIMIT_CPU = cpus × the timeout (1 s
			// here); the busy loop gets SIGXCPU past it (or the 100 s
			// timeout ends it).
			id, err = hivetest.Run(t, state, "run", "--cpus", "0.01", "--timeout", "100", "--", "sh", "-c", "while :; do :; done")
			if err != nil {
				t.Fatalf("hive run: %v: %s", err, id)
			}
			id = strings.TrimSpace(id)
			hivetest.Run(t, state, "wait", id)
			j = inspectJob(t, state, id)
			if j.LimitHit != "cpus" || j.SemanticStatus != "error" || !strings.Contains(j.SemanticMessage, "Killed by the CPU time limit") || j.LimitsEnforcedBy["cpus"] != "rlimit" {
				t.Errorf("busy loop under cpus 0.01 for 100 s: %s, signal %v, limit_hit %q, %s: %q (cpus by %q); want the CPU time limit's kill",
					j.State, j.Signal, j.LimitHit, j.SemanticStatus, j.SemanticMessage, j.LimitsEnforcedBy["cpus"])
			}

			out, err := hivetest.Run(t, state, "run", "--memory", "1GiB", "--", "touch", filepath.Join(state, "ran"))
			if err == nil || !strings.Contains(out, "limits.memory_mb 1024") || !strings.Contains(out, "limits.max_memory_mb = 512") {
				t.Errorf("--memory 1GiB over max_memory_mb 512: %v: %s; want a refusal naming the field and the ceiling", err, out)
			}
			if _, err := os.Stat(filepath.Join(state, "ran")); err == nil {
				t.Error("the refused job ran")
			}
		})
	}
}
