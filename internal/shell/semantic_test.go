package shell

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestSemantic(t *testing.T) {
	tests := []struct {
		cmd  string
		code int
		want Status
	}{
		{"grep x f", 0, Status{"ok", ""}},
		{"false", 0, Status{"ok", ""}},
		{"grep x f", 1, Status{"ok", "No matches found"}},
		{"egrep x f", 1, Status{"ok", "No matches found"}},
		{"fgrep x f", 1, Status{"ok", "No matches found"}},
		{"zgrep x f.gz", 1, Status{"ok", "No matches found"}},
		{"rg TODO", 1, Status{"ok", "No matches found"}},
		{"ag TODO", 1, Status{"ok", "No matches found"}},
		{"ack TODO", 1, Status{"ok", "No matches found"}},
		{"git grep TODO", 1, Status{"ok", "No matches found"}},
		{"pgrep nginx", 1, Status{"ok", "No processes matched"}},
		{"/usr/bin/grep x f", 1, Status{"ok", "No matches found"}},
		{"grep x f", 2, Status{"error", "Error (e.g. a file could not be read, or a bad pattern)"}},
		{"ls /nonexistent", 2, Status{"error", "Serious trouble (e.g. a file or directory given does not exist or cannot be read)"}},
		{"ls -R /", 1, Status{"error", "Minor problem (e.g. a subdirectory could not be read)"}},
		{"sort -c f", 1, Status{"ok", "Input is not sorted"}},
		{"sort f", 1, Status{"error", "General error"}},
		{"shift 5", 2, Status{"error", "Misuse of shell builtin / usage error"}},
		{"diff a b", 1, Status{"ok", "Files differ"}},
		{"cmp a b", 1, Status{"ok", "Files differ"}},
		{"diff a b", 2, Status{"error", "Trouble (e.g. a file is missing or unreadable)"}},
		{"test -f x", 1, Status{"ok", "Condition is false"}},
		{"[ -f x ]", 1, Status{"ok", "Condition is false"}},
		{"[[ -f x ]]", 1, Status{"ok", "Condition is false"}},
		{"(( n > 3 ))", 1, Status{"ok", "Arithmetic result is zero"}},
		{"expr 1 - 1", 1, Status{"ok", "Expression is null or zero"}},
		{"git diff --exit-code", 1, Status{"ok", "Differences found"}},
		{"git diff --quiet HEAD", 1, Status{"ok", "Differences found"}},
		{"git -C repo diff --stat --quiet", 1, Status{"ok", "Differences found"}},
		{"git diff", 1, Status{"error", "General error"}},
		{"git status", 1, Status{"error", "General error"}},
		{"timeout 5 sleep 10", 124, Status{"error", "Timed out (timeout)"}},
		{"timeout -s KILL 5 make", 124, Status{"error", "Timed out (timeout)"}},
		{"sudo timeout 5 make", 124, Status{"error", "Timed out (timeout)"}},
		{"timeout 5 grep x f", 1, Status{"ok", "No matches found"}},
		{"make", 124, Status{"error", ""}},
		{"./script.sh", 126, Status{"error", "Command found but not executable"}},
		{"nosuchcmd", 127, Status{"error", "Command not found"}},
		{"make", 1, Status{"error", "General error"}},
		{"make", 2, Status{"error", "Misuse of shell builtin / usage error"}},
		{"make", 3, Status{"error", ""}},
		{"make", 255, Status{"error", ""}},
		{"make", -1, Status{"error", ""}},
		{"sleep 100", 129, Status{"signal", "Hangup (SIGHUP, 1)"}},
		{"sleep 100", 130, Status{"signal", "Interrupted by SIGINT (2)"}},
		{"sleep 100", 131, Status{"signal", "Quit (SIGQUIT, 3)"}},
		{"./a.out", 132, Status{"signal", "Illegal instruction (SIGILL, 4)"}},
		{"./a.out", 134, Status{"signal", "Aborted (SIGABRT, 6)"}},
		{"./a.out", 135, Status{"signal", "Bus error (SIGBUS, 7)"}},
		{"./a.out", 136, Status{"signal", "Floating-point exception (SIGFPE, 8)"}},
		{"sleep 100", 137, Status{"signal", "Killed by SIGKILL (9)"}},
		{"sleep 100", 138, Status{"signal", "Killed by SIGUSR1 (10)"}},
		{"./a.out", 139, Status{"signal", "Segmentation fault (SIGSEGV, 11)"}},
		{"sleep 100", 140, Status{"signal", "Killed by SIGUSR2 (12)"}},
		{"yes", 141, Status{"signal", "Broken pipe (SIGPIPE, 13)"}},
		{"sleep 100", 142, Status{"signal", "Alarm clock (SIGALRM, 14)"}},
		{"sleep 100", 143, Status{"signal", "Terminated by SIGTERM (15)"}},
		{"sleep 100", 162, Status{"signal", "Killed by SIGRTMIN (34)"}},
		{"sleep 100", 160, Status{"error", ""}},
		{"sleep 100", 193, Status{"error", ""}},
		// which command is judged
		{"cd src && grep -r TODO .", 1, Status{"ok", "No matches found"}},
		{"grep -q x f && echo found", 1, Status{"error", "General error"}},
		{"make; diff -u a b", 1, Status{"ok", "Files differ"}},
		{"diff a b; make", 1, Status{"error", "General error"}},
		{"ps aux | grep -v grep | grep nginx", 1, Status{"ok", "No matches found"}},
		{"grep x f | sort", 1, Status{"error", "General error"}},
		{"{ make; test -f out; }", 1, Status{"ok", "Condition is false"}},
		{"(cd x; grep y z)", 1, Status{"ok", "No matches found"}},
		{"time grep x f", 1, Status{"ok", "No matches found"}},
		{"sudo -u app env -i LANG=C nice -n 5 grep x f", 1, Status{"ok", "No matches found"}},
		{"! grep x f", 1, Status{"error", "General error"}},
		{"FOO=1 grep x f", 1, Status{"ok", "No matches found"}},
		{"grep x 'unterminated", 1, Status{"error", "General error"}},
		{"if true; then grep x f; fi", 1, Status{"error", "General error"}},
		// pipefail: ok only if every command of the pipeline has the rule
		{"set -o pipefail; cat f | grep x", 1, Status{"error", "General error"}},
		{"set -euo pipefail; grep a f | grep b", 1, Status{"ok", "No matches found"}},
		{"set -eo pipefail\ngrep a f | rg b", 1, Status{"ok", "No matches found"}},
		{"set -o pipefail; set +o pipefail; cat f | grep x", 1, Status{"ok", "No matches found"}},
		{"cat f | grep x; set -o pipefail", 1, Status{"error", "General error"}},
		{"set -o pipefail; timeout 5 make | tee log", 124, Status{"error", "Timed out (timeout)"}},
		{"set -o pipefail; cat f | grep x", 141, Status{"signal", "Broken pipe (SIGPIPE, 13)"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.cmd, tt.code), func(t *testing.T) {
			if got := Semantic(tt.cmd, tt.code); got != tt.want {
				t.Errorf("Semantic(%q, %d) = %+v, want %+v", tt.cmd, tt.code, got, tt.want)
			}
		})
	}
}

func TestSignalName(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{1, "SIGHUP"}, {2, "SIGINT"}, {3, "SIGQUIT"}, {4, "SIGILL"}, {6, "SIGABRT"},
		{7, "SIGBUS"}, {8, "SIGFPE"}, {9, "SIGKILL"}, {10, "SIGUSR1"}, {11, "SIGSEGV"},
		{12, "SIGUSR2"}, {13, "SIGPIPE"}, {14, "SIGALRM"}, {15, "SIGTERM"}, {17, "SIGCHLD"},
		{19, "SIGSTOP"}, {31, "SIGSYS"}, {34, "SIGRTMIN"}, {35, "SIGRTMIN+1"},
		{49, "SIGRTMIN+15"}, {50, "SIGRTMAX-14"}, {63, "SIGRTMAX-1"}, {64, "SIGRTMAX"},
		{0, ""}, {-1, ""}, {32, ""}, {33, ""}, {65, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			if got := SignalName(tt.n); got != tt.want {
				t.Errorf("SignalName(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

// TestExitCodesDoc checks that docs/exit-codes.md documents the catalog: every
// command name and message of the code table, and every signal message.
func TestExitCodesDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range catalog {
		t.Run(fmt.Sprintf("%q/%d", r.cmd, r.code), func(t *testing.T) {
			if r.cmd != "" && !strings.Contains(doc, "| `"+r.cmd+"` |") {
				t.Errorf("docs/exit-codes.md has no table row for command `%s`", r.cmd)
			}
			if !strings.Contains(doc, "| "+r.msg+" |") {
				t.Errorf("docs/exit-codes.md lacks the message %q", r.msg)
			}
			for _, f := range r.flags {
				if !strings.Contains(doc, "`"+f+"`") {
					t.Errorf("docs/exit-codes.md lacks the condition flag %s of `%s`", f, r.cmd)
				}
			}
		})
	}
	for n := 1; n < len(signals); n++ {
		row := fmt.Sprintf("| %d | %d | %s | %s |", 128+n, n, SignalName(n), signalMessage(n))
		if !strings.Contains(doc, row) {
			t.Errorf("docs/exit-codes.md lacks the signal row %q", row)
		}
	}
}
