package shell

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// singleQuote quotes a for bash: every byte literal.
func singleQuote(a string) string {
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// within runs f and fails the test if it does not return within 10 s
// (an instrumented fuzz worker on a busy machine is slow, but not that
// slow for one command string).
func within(t *testing.T, f func(), format string, args ...any) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf(format+" did not return within 10 s", args...)
	}
}

// FuzzPlan: Plan never panics; a decision is either the shell (with a
// reason, no argv) or a direct argv whose command word is neither empty
// nor a builtin and no element of which holds a NUL (exec could not pass
// it); and a direct argv, each word single-quoted and joined by spaces,
// plans to the same argv again.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		"", "   ", "# only a comment", "ls -la", "git log --oneline -n 5", "echo 'a b' \"c d\" e\\ f",
		"ls | wc -l", "cd /tmp", "FOO=1 make", "ls *.go", "echo ~", "echo a=~", "echo {a,b}", "echo {}",
		"printf '%s\\n' $'x'", "cat <<EOF\nx\nEOF", "ls a\x00b", "echo 'it'\\''s'", "if true; then :; fi",
		"echo \"$(id)\"", "ls [", "ls [a]", "ls \\\n-l", "echo \xff\xfe", "((", "time ls",
		"true", "  go test ./... -run X  ", "make -j4 CC=gcc", "A=1", "a=b true", "if", "time", "echo a=b:c,d@e%f+g",
		"-", "ls -- -x", "x.y/z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		var d Decision
		within(t, func() { d = Plan(cmd) }, "Plan(%q)", cmd)
		if plain, ok := plainPlan(cmd); ok {
			if parsed := parsedPlan(cmd); !slices.Equal(plain.Argv, parsed.Argv) || plain.NeedsShell != parsed.NeedsShell || plain.Reason != parsed.Reason {
				t.Fatalf("%q: without the parser %#v, with it %#v", cmd, plain, parsed)
			}
		}
		if d.NeedsShell {
			if d.Argv != nil || d.Reason == "" {
				t.Fatalf("%q: shell decision %#v: want a reason and no argv", cmd, d)
			}
			return
		}
		if d.Reason != "" {
			t.Fatalf("%q: direct decision with a reason: %#v", cmd, d)
		}
		if len(d.Argv) == 0 {
			if d.Argv != nil {
				t.Fatalf("%q: blank command with a non-nil empty argv", cmd)
			}
			return
		}
		if d.Argv[0] == "" || builtins[d.Argv[0]] {
			t.Fatalf("%q: direct argv %q runs %q", cmd, d.Argv, d.Argv[0])
		}
		quoted := make([]string, len(d.Argv))
		for i, a := range d.Argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("%q: argv[%d] %q holds a NUL", cmd, i, a)
			}
			quoted[i] = singleQuote(a)
		}
		again := strings.Join(quoted, " ")
		d2 := Plan(again)
		if d2.NeedsShell || !slices.Equal(d2.Argv, d.Argv) {
			t.Fatalf("%q plans to %q, but its quoted argv %q plans to %#v", cmd, d.Argv, again, d2)
		}
	})
}

// maxFuzzCmd bounds the command strings FuzzWarning times.
const maxFuzzCmd = 16 << 10

// FuzzWarning: Warning never panics, answers within a few seconds for a
// command of up to 16 KiB, and its answer is "" or one line; for a plain
// command (walked without the parser) it is the parser's answer.
func FuzzWarning(f *testing.F) {
	for _, s := range []string{
		"", "rm -rf /", "echo 'rm -rf /'", "sudo -u root rm -fr ./build", "bash -c \"sh -c 'rm -rf x'\"",
		"find . -exec rm -rf {} +", "git push --force origin main", "dd if=/dev/zero of=/dev/sda",
		"dd 'of=/dev/sd\na'", "kubectl -n prod delete pod x", ":(){ :|:& };:", "chmod -R 777 /",
		"eval 'eval \"eval rm -rf y\"'", "echo x | mysql -e 'DROP TABLE t'", "terraform destroy -auto-approve",
		"rm -rf \"$(printf 'a\\nb')\"", "xargs rm -rf < list", "env -S 'rm -rf /' x", "rm -rf 'a\nb'",
		"rm  -rf  x", "sudo rm -fr ./build", "xargs rm -rf", "nice -n5 git push -f", "sh -c rm -rf x",
		"env A=1 rm -rf x", "timeout 5 dd of=/dev/sda", "find . -delete", "git clean -fdx", "true",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > maxFuzzCmd {
			return
		}
		var w string
		within(t, func() { w = Warning(cmd) }, "Warning(%q)", cmd)
		if strings.ContainsAny(w, "\n\r") {
			t.Fatalf("Warning(%q) = %q: more than one line", cmd, w)
		}
		if _, plain := plainArgv(cmd); plain {
			if parsed := parsedWarning(cmd); w != parsed {
				t.Fatalf("Warning(%q) = %q without the parser, %q with it", cmd, w, parsed)
			}
		}
	})
}

// FuzzSemantic: for any command and exit code 0..255, Semantic never
// panics and its kind is one of the defined statuses: ok for 0, a signal
// only above 128, and a message of one line.
func FuzzSemantic(f *testing.F) {
	for _, s := range []struct {
		cmd  string
		code byte
	}{
		{"grep x f", 1}, {"set -o pipefail; grep x f | cat", 1}, {"timeout 5 sleep 9", 124}, {"sleep 9", 137},
		{"nosuch", 127}, {"! grep x", 1}, {"git diff --exit-code", 1}, {"(( 0 ))", 1}, {"x", 0}, {"x", 255},
		{"kill -s RTMIN+3 $$", 165}, {"((", 2}, {"sudo env A=1 nice -n5 /usr/bin/grep -q x", 1},
	} {
		f.Add(s.cmd, s.code)
	}
	f.Fuzz(func(t *testing.T, cmd string, code byte) {
		var st Status
		within(t, func() { st = Semantic(cmd, int(code)) }, "Semantic(%q, %d)", cmd, code)
		switch st.Kind {
		case StatusOK, StatusError:
		case StatusSignal:
			if code <= 128 {
				t.Fatalf("Semantic(%q, %d) = %+v: a signal at or below 128", cmd, code, st)
			}
		default:
			t.Fatalf("Semantic(%q, %d) = %+v: unknown kind", cmd, code, st)
		}
		if code == 0 && st != (Status{Kind: StatusOK}) {
			t.Fatalf("Semantic(%q, 0) = %+v, want plain ok", cmd, st)
		}
		if strings.ContainsAny(st.Message, "\n\r") {
			t.Fatalf("Semantic(%q, %d) message %q: more than one line", cmd, code, st.Message)
		}
	})
}

// BenchmarkPlainPlan: Plan of a plain command without the parser and
// with it, taking turns in each iteration: plain-ns/op, parsed-ns/op and
// their ratio.
func BenchmarkPlainPlan(b *testing.B) {
	const cmd = "go test ./internal/shell -run TestPlan -count=1"
	var plain, parsed time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, ok := plainPlan(cmd); !ok {
			b.Fatal("not plain")
		}
		t1 := time.Now()
		parsedPlan(cmd)
		plain, parsed = plain+t1.Sub(t0), parsed+time.Since(t1)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
	b.ReportMetric(float64(parsed.Nanoseconds())/float64(b.N), "parsed-ns/op")
	b.ReportMetric(float64(plain)/float64(parsed), "plain/parsed")
}

// TestWarningPlain: plain commands, which Warning walks without the
// parser, warn as the parser's walk does, and the destructive ones do.
func TestWarningPlain(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"rm -rf x", "may force-remove files recursively (rm -rf)"},
		{"  sudo   rm -fr ./build ", "may force-remove files recursively (rm -rf)"},
		{"xargs rm -rf", "may force-remove files recursively (rm -rf)"},
		{"sh -c rm", ""},
		{"true", ""},
		{"ls -la", ""},
		{"go test ./... -run X", ""},
	} {
		if _, ok := plainArgv(c.cmd); !ok {
			t.Fatalf("%q: not plain", c.cmd)
		}
		got, parsed := Warning(c.cmd), parsedWarning(c.cmd)
		if got != parsed {
			t.Errorf("Warning(%q) = %q, the parser's walk %q", c.cmd, got, parsed)
		}
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("Warning(%q) = %q, want %q in it", c.cmd, got, c.want)
		}
		if c.want == "" && got != "" {
			t.Errorf("Warning(%q) = %q, want none", c.cmd, got)
		}
	}
	for _, cmd := range []string{"git push --force origin main", "dd if=/dev/zero of=/dev/sda", "kubectl -n prod delete pod x"} {
		if _, ok := plainArgv(cmd); !ok {
			t.Fatalf("%q: not plain", cmd)
		}
		if w := Warning(cmd); w == "" || w != parsedWarning(cmd) {
			t.Errorf("Warning(%q) = %q, the parser's walk %q", cmd, w, parsedWarning(cmd))
		}
	}
}

// BenchmarkWarningPlain: Warning of a plain command (its words walked)
// against the parser's walk of it, in the same loop.
func BenchmarkWarningPlain(b *testing.B) {
	const cmd = "go test ./internal/shell -run TestPlan -count=1"
	var plain, parsed time.Duration
	for b.Loop() {
		t0 := time.Now()
		w := Warning(cmd)
		t1 := time.Now()
		p := parsedWarning(cmd)
		plain, parsed = plain+t1.Sub(t0), parsed+time.Since(t1)
		if w != p {
			b.Fatalf("%q against %q", w, p)
		}
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
	b.ReportMetric(float64(parsed.Nanoseconds())/float64(b.N), "parsed-ns/op")
	b.ReportMetric(float64(plain)/float64(parsed), "plain/parsed")
}
