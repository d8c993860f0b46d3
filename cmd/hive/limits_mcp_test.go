//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// usageOut is an answer's usage, pointers to tell an absent field.
type usageOut struct {
	MemoryPeakBytes *int64 `json:"memory_peak_bytes"`
	CPUUserMS       *int64 `json:"cpu_user_ms"`
	CPUSystemMS     *int64 `json:"cpu_system_ms"`
	MemoryBytes     int64  `json:"memory_bytes"`
}

// limitsAnswer is what an answer about a job tells of its limits.
type limitsAnswer struct {
	ID               string            `json:"id"`
	JobID            string            `json:"job_id"`
	Status           string            `json:"status"`
	ExitCode         *int              `json:"exit_code"`
	SemanticStatus   string            `json:"semantic_status"`
	SemanticMessage  *string           `json:"semantic_message"`
	Stdout           string            `json:"stdout"`
	Stderr           string            `json:"stderr"`
	LimitsEnforcedBy map[string]string `json:"limits_enforced_by"`
	LimitHit         string            `json:"limit_hit"`
	Usage            *usageOut         `json:"usage"`
}

// The MCP surface of per-job limits, with cgroups off (rlimits, as on
// this machine's CI): the limits argument reaches the command, answers
// say how each limit is enforced and what the job used, a request above
// the operator's ceiling is refused naming the field and the ceiling, a
// misspelt key is refused, and a running job's usage so far is in status
// and terminal_job_list.
func TestLimitsThroughMCP(t *testing.T) {
	t.Setenv("HIVE_CGROUPS", "off") // the daemon and its holder inherit it
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--limits-max-memory-mb", "512")
	dir := t.TempDir()
	s := hivetest.Connect(t, state, dir)

	t.Run("nofile reaches the command", func(t *testing.T) {
		var e limitsAnswer
		s.MustCall("terminal_exec", map[string]any{"cmd": "ulimit -n", "limits": map[string]any{"nofile": 64}}, &e)
		if strings.TrimSpace(e.Stdout) != "64" || e.ExitCode == nil || *e.ExitCode != 0 {
			t.Errorf("ulimit -n under limits.nofile 64: exit %v, stdout %q; want 64", e.ExitCode, e.Stdout)
		}
		if e.LimitsEnforcedBy["nofile"] != "rlimit" {
			t.Errorf("limits_enforced_by %v; want nofile: rlimit", e.LimitsEnforcedBy)
		}
		if e.Usage == nil || e.Usage.CPUUserMS == nil || e.Usage.CPUSystemMS == nil {
			t.Errorf("usage %+v; want the ended job's usage in the envelope", e.Usage)
		}
	})

	t.Run("above the ceiling", func(t *testing.T) {
		marker := filepath.Join(dir, "ran")
		text, isErr := s.Call("run", map[string]any{"cmd": "touch " + marker, "limits": map[string]any{"memory_mb": 1024}}, nil)
		if !isErr || !strings.Contains(text, "limits.memory_mb 1024") || !strings.Contains(text, "limits.max_memory_mb = 512") {
			t.Errorf("run with memory_mb 1024 over max 512: error %v: %s; want a tool error naming the field and the ceiling", isErr, text)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the refused command ran")
		}
	})

	t.Run("misspelt key", func(t *testing.T) {
		text, isErr := s.Call("terminal_exec", map[string]any{"cmd": "true", "limits": map[string]any{"memory": 64}}, nil)
		if !isErr || !strings.Contains(text, `"memory"`) || !strings.Contains(text, "memory_mb") {
			t.Errorf("limits.memory (not a key): error %v: %s; want a tool error naming it and the keys", isErr, text)
		}
	})

	t.Run("memory under an rlimit", func(t *testing.T) {
		// tail keeps a line without a newline whole: 300 MiB of zeros
		// is more than the 64 MiB address space it may have.
		var e limitsAnswer
		s.MustCall("terminal_exec", map[string]any{"cmd": "head -c 300M /dev/zero | tail", "limits": map[string]any{"memory_mb": 64}}, &e)
		if e.ExitCode == nil || *e.ExitCode == 0 || e.SemanticStatus != "error" || !strings.Contains(e.Stderr, "memory exhausted") {
			t.Errorf("300 MiB under memory_mb 64: exit %v, %s, stderr %q; want tail's failure", e.ExitCode, e.SemanticStatus, e.Stderr)
		}
		// An rlimit makes the allocation fail; nothing tells hive it was
		// the limit (no cgroup's oom_kill): limit_hit stays empty.
		if e.LimitsEnforcedBy["memory_mb"] != "rlimit" {
			t.Errorf("limits_enforced_by %v; want memory_mb: rlimit", e.LimitsEnforcedBy)
		}
		t.Logf("limit_hit %q, semantic_message %v", e.LimitHit, deref(e.SemanticMessage))
	})

	t.Run("usage of an ended job", func(t *testing.T) {
		var r limitsAnswer
		s.MustCall("run", map[string]any{"cmd": "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done", "wait_seconds": 30,
			"limits": map[string]any{"nofile": 100}}, &r)
		var st limitsAnswer
		s.MustCall("status", map[string]any{"id": r.ID}, &st)
		// Its memory peak is told where a cgroup's memory.peak knows it;
		// rusage cannot tell a shell's from the holder's, whose memory it
		// ran in until its exec: never the holder's 20 MiB.
		if st.Status != "done" || st.Usage == nil || st.Usage.CPUUserMS == nil || st.Usage.CPUSystemMS == nil ||
			*st.Usage.CPUUserMS+*st.Usage.CPUSystemMS <= 0 || (st.Usage.MemoryPeakBytes != nil && *st.Usage.MemoryPeakBytes >= 10<<20) {
			t.Errorf("status of a busy loop that ended: %s, usage %+v; want its CPU time, and a memory peak under 10 MiB if any", st.Status, st.Usage)
		}
		if st.LimitsEnforcedBy["nofile"] != "rlimit" {
			t.Errorf("status: limits_enforced_by %v; want nofile: rlimit", st.LimitsEnforcedBy)
		}
	})

	t.Run("text form", func(t *testing.T) {
		// No structuredContent there: the text tells limits and usage.
		st := hivetest.Connect(t, state, dir, "--answers", "text")
		// A 64 MiB string: a memory peak above the holder's, which rusage
		// tells as the job's (a small one's it cannot tell from the holder's).
		grow := `awk 'BEGIN { s = "x"; while (length(s) < 64 * 1024 * 1024) s = s s; print length(s) }'`
		text := st.MustCall("terminal_exec", map[string]any{"cmd": grow, "limits": map[string]any{"nofile": 64}}, nil)
		if !strings.Contains(text, "nofile by rlimit") || !strings.Contains(text, "usage: cpu ") || !strings.Contains(text, "memory peak") {
			t.Errorf("terminal_exec in the text form: %q; want its limits and usage", text)
		}
		st.MustCall("run", map[string]any{"cmd": "true", "name": "text-form", "wait_seconds": 30, "limits": map[string]any{"nofile": 100}}, nil)
		if text := st.MustCall("status", map[string]any{"id": "text-form"}, nil); !strings.Contains(text, "nofile by rlimit") || !strings.Contains(text, "usage: cpu ") {
			t.Errorf("status in the text form: %q; want its limits and usage", text)
		}
	})

	t.Run("usage of a running job", func(t *testing.T) {
		var started limitsAnswer
		s.MustCall("terminal_job_start", map[string]any{"cmd": "exec sleep 60"}, &started)
		t.Cleanup(func() { s.TryCall("terminal_job_kill", map[string]any{"job_id": started.JobID, "force": true}, nil) })
		hivetest.Eventually(t, 10*time.Second, "the running job's memory in status", func() error {
			var st limitsAnswer
			if _, _, err := s.TryCall("status", map[string]any{"id": started.JobID}, &st); err != nil {
				return err
			}
			if st.Status != "running" || st.Usage == nil || st.Usage.MemoryBytes <= 0 {
				return fmt.Errorf("status %s, usage %+v", st.Status, st.Usage)
			}
			return nil
		})
		var list struct {
			Jobs []struct {
				JobID  string    `json:"job_id"`
				Status string    `json:"status"`
				Usage  *usageOut `json:"usage"`
			} `json:"jobs"`
		}
		s.MustCall("terminal_job_list", map[string]any{"state": "running"}, &list)
		found := false
		for _, j := range list.Jobs {
			if j.JobID == started.JobID {
				found = true
				if j.Usage == nil || j.Usage.MemoryBytes <= 0 {
					t.Errorf("terminal_job_list: %s's usage %+v; want its memory now", j.JobID, j.Usage)
				}
			}
		}
		if !found {
			t.Errorf("terminal_job_list state=running: %+v; want %s", list.Jobs, started.JobID)
		}
		st := hivetest.Connect(t, state, dir, "--answers", "text")
		if text := st.MustCall("terminal_job_list", map[string]any{"state": "running"}, nil); !strings.Contains(text, started.JobID+"\trunning\t-\tmem ") {
			t.Errorf("terminal_job_list in the text form: %q; want %s with its memory now", text, started.JobID)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// terminal_pty_open takes limits too: the session's shell, and what it
// runs, get them as rlimits (a session has no cgroup), whether the daemon
// or its holder runs the session; the soft limit of open files stays the
// one a job gets when only another limit is set; a request above a
// ceiling is refused.
func TestLimitsOfPTYSession(t *testing.T) {
	for _, hold := range []string{"--hold-jobs=true", "--hold-jobs=false"} {
		t.Run(strings.TrimPrefix(hold, "--"), func(t *testing.T) {
			state := hivetest.StateDir(t)
			// A soft limit of open files below the hard one, as on most
			// machines: a Go program (the daemon, the rlimits' wrapper)
			// raises its own, its children start with this one.
			cmd := hivetest.Command(t, state, "daemon", hold, "--limits-max-memory-mb", "512")
			cmd.Args = append([]string{"bash", "-c", `ulimit -Sn 1000 && exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
			cmd.Path = "/bin/bash"
			hivetest.StartDaemonCmd(t, state, cmd)
			s := hivetest.Connect(t, state, t.TempDir())
			var job limitsAnswer
			s.MustCall("terminal_exec", map[string]any{"cmd": "ulimit -n", "limits": map[string]any{"memory_mb": 256}}, &job)
			if strings.TrimSpace(job.Stdout) != "1000" {
				t.Fatalf("ulimit -n in a job under memory_mb 256: %q; want the daemon's children's 1000", job.Stdout)
			}
			for _, c := range []struct {
				limits map[string]any
				want   string
			}{
				{map[string]any{"nofile": 64, "memory_mb": 256}, "n=64 v=262144"},
				{map[string]any{"memory_mb": 256}, "n=" + strings.TrimSpace(job.Stdout) + " v=262144"},
			} {
				var open struct {
					SessionID        string            `json:"session_id"`
					LimitsEnforcedBy map[string]string `json:"limits_enforced_by"`
				}
				s.MustCall("terminal_pty_open", map[string]any{"limits": c.limits}, &open)
				t.Cleanup(func() { s.TryCall("terminal_pty_close", map[string]any{"session_id": open.SessionID}, nil) })
				if open.LimitsEnforcedBy["memory_mb"] != "rlimit" || (c.limits["nofile"] != nil) != (open.LimitsEnforcedBy["nofile"] == "rlimit") {
					t.Errorf("limits %v: limits_enforced_by %v; want each by rlimit", c.limits, open.LimitsEnforcedBy)
				}
				out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": open.SessionID,
					"input": "echo n=$(ulimit -n) v=$(ulimit -v)\n", "wait_for": `(?m)^n=\d+ v=\d+`})
				if !strings.Contains(out.Data, c.want+"\n") {
					t.Errorf("limits %v: ulimit -n, -v in the session: %q; want %s (v in KiB)", c.limits, out.Data, c.want)
				}
			}
			text, isErr := s.Call("terminal_pty_open", map[string]any{"limits": map[string]any{"memory_mb": 1024}}, nil)
			if !isErr || !strings.Contains(text, "limits.memory_mb 1024") || !strings.Contains(text, "limits.max_memory_mb = 512") {
				t.Errorf("terminal_pty_open with memory_mb 1024 over max 512: error %v: %s; want a refusal naming the field and the ceiling", isErr, text)
			}
		})
	}
}
