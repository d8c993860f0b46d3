package tools

import (
	"testing"
	"time"

	"github.com/hivetools/hive/internal/job"
)

func TestMeaningOf(t *testing.T) {
	code := func(n int) *int { return &n }
	tests := []struct {
		name string
		in   job.Info
		want meaning
	}{
		{"running", job.Info{State: job.Running, Cmd: "grep x f"}, meaning{}},
		{"grep no match", job.Info{State: job.Done, Cmd: "grep x f", ExitCode: code(1)}, meaning{Status: "ok", Message: "No matches found"}},
		{"ok", job.Info{State: job.Done, Cmd: "true", ExitCode: code(0)}, meaning{Status: "ok"}},
		{"signal", job.Info{State: job.Done, Cmd: "sleep 9", ExitCode: code(137)}, meaning{Status: "signal", Message: "Killed by SIGKILL (9)"}},
		{"failed", job.Info{State: job.Failed, Cmd: "nope", Error: `exec "nope": not found`},
			meaning{Status: "error", Message: `Could not start: exec "nope": not found`}},
		{"timed out", job.Info{State: job.TimedOut, Cmd: "grep x f", ExitCode: code(1), Timeout: 2 * time.Second},
			meaning{Status: "error", Message: "Timed out after 2s; its process group was stopped", TimedOut: true}},
		{"killed by SIGINT", job.Info{State: job.Killed, Cmd: "sleep 9", ExitCode: code(130)},
			meaning{Status: "signal", Message: "Stopped on request: Interrupted by SIGINT (2)"}},
		{"killed, exited 0", job.Info{State: job.Killed, Cmd: "trap 'exit 0' INT; sleep 9", ExitCode: code(0)},
			meaning{Status: "signal", Message: "Stopped on request"}},
		{"interrupted", job.Info{State: job.Interrupted, Cmd: "sleep 9", Error: "the daemon stopped while the job was running"},
			meaning{Status: "error", Message: "Interrupted: the daemon stopped while the job was running"}},
		{"interrupted, no reason", job.Info{State: job.Interrupted, Cmd: "sleep 9"}, meaning{Status: "error", Message: "Interrupted: the daemon stopped"}},
		{"done without a status", job.Info{State: job.Done, Cmd: "x", Error: "wait: boom"}, meaning{Status: "error", Message: "wait: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := meaningOf(tt.in.View()); got != tt.want {
				t.Errorf("meaningOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
