package shell

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestPlanDirect(t *testing.T) {
	tests := []struct {
		cmd  string
		argv []string
	}{
		{`ls -la "my dir"`, []string{"ls", "-la", "my dir"}},
		{`git status`, []string{"git", "status"}},
		{`echo 'a|b'`, []string{"echo", "a|b"}},
		{`  go   test ./...  `, []string{"go", "test", "./..."}},
		{`printf '%s\n' "a b" c`, []string{"printf", `%s\n`, "a b", "c"}},
		{`echo a\ b \* \~ \$HOME`, []string{"echo", "a b", "*", "~", "$HOME"}},
		{`echo "q\"uote" "back\\slash" "keep\x"`, []string{"echo", `q"uote`, `back\slash`, `keep\x`}},
		{`echo '' ""`, []string{"echo", "", ""}},
		{`echo "a"'b'c`, []string{"echo", "abc"}},
		{`git log HEAD~1 --format=%H`, []string{"git", "log", "HEAD~1", "--format=%H"}},
		{`find . -name x -exec echo {} \;`, []string{"find", ".", "-name", "x", "-exec", "echo", "{}", ";"}},
		{"echo a\\\nb", []string{"echo", "ab"}},
		{`ls # a comment`, []string{"ls"}},
		{`/usr/bin/env -i ls`, []string{"/usr/bin/env", "-i", "ls"}},
		{`echo "*.go" '$HOME' "{a,b}"`, []string{"echo", "*.go", "$HOME", "{a,b}"}},
		{`grep -- --opt=~ file`, []string{"grep", "--", "--opt=~", "file"}},
		{`echo {} {x} [ a] a[`, []string{"echo", "{}", "{x}", "[", "a]", "a["}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			d := Plan(tt.cmd)
			if d.NeedsShell || d.Reason != "" || !slices.Equal(d.Argv, tt.argv) {
				t.Errorf("Plan(%q) = %+v, want direct %q", tt.cmd, d, tt.argv)
			}
		})
	}
}

func TestPlanShell(t *testing.T) {
	tests := []struct{ cmd, reason string }{
		{`ps aux | grep x`, "pipeline"},
		{`make |& tee log`, "pipeline"},
		{`echo hi > out`, "redirect"},
		{`cat < in`, "redirect"},
		{`cmd 2>&1`, "redirect"},
		{`make && make install`, "&& / || list"},
		{`false || true`, "&& / || list"},
		{`cd /tmp; ls`, "command list"},
		{"ls\npwd", "command list"},
		{`sleep 1 &`, "background (&)"},
		{`ls *.go`, "glob"},
		{`ls file?.txt`, "glob"},
		{`ls [ab].txt`, "glob"},
		{`echo $HOME`, "parameter expansion"},
		{`echo ${HOME}`, "parameter expansion"},
		{`echo "$HOME/x"`, "parameter expansion"},
		{`echo $(date)`, "command substitution"},
		{"echo `date`", "command substitution"},
		{`echo "today: $(date)"`, "command substitution"},
		{`diff <(ls a) <(ls b)`, "process substitution"},
		{`echo $((1+2))`, "arithmetic expansion"},
		{`echo {a,b}.txt`, "brace expansion"},
		{`echo {1..3}`, "brace expansion"},
		{`ls ~`, "tilde expansion"},
		{`ls ~/src`, "tilde expansion"},
		{`printf %s a=~`, "tilde expansion"},
		{`FOO=1 env`, "variable assignment"},
		{`FOO=1`, "variable assignment"},
		{"cat <<EOF\nhi\nEOF", "heredoc"},
		{`cat <<< hi`, "here-string"},
		{`(cd x && ls)`, "subshell"},
		{`{ ls; }`, "block"},
		{`if true; then ls; fi`, "control flow"},
		{`for f in a b; do echo $f; done`, "control flow"},
		{`while true; do :; done`, "control flow"},
		{`case x in x) ls;; esac`, "control flow"},
		{`f() { ls; }`, "function definition"},
		{`(( x = 1 ))`, "arithmetic"},
		{`let x=1`, "arithmetic"},
		{`[[ -f x ]]`, "[[ test ]]"},
		{`export A=1`, "builtin export"},
		{`declare -a x`, "builtin declare"},
		{`local x`, "builtin local"},
		{`time ls`, "keyword time"},
		{`! ls`, "negation (!)"},
		{`echo $'a\tb'`, "ANSI-C quoting ($'...')"},
		{`ls @(a|b)`, "extended glob"},
		{`cd /tmp`, "builtin cd"},
		{`"cd" /tmp`, "builtin cd"},
		{`source ~/.bashrc`, "tilde expansion"},
		{`source env.sh`, "builtin source"},
		{`. env.sh`, "builtin ."},
		{`set -e`, "builtin set"},
		{`alias ll=ls`, "builtin alias"},
		{`exit 3`, "builtin exit"},
		{`eval ls`, "builtin eval"},
		{`exec ls`, "builtin exec"},
		{`ulimit -n`, "builtin ulimit"},
		{`umask 022`, "builtin umask"},
		{`read x`, "builtin read"},
		{`wait`, "builtin wait"},
		{`type ls`, "builtin type"},
		{`test -f x`, "builtin test"},
		{`[ -f x ]`, "builtin ["},
		{`"" ls`, "empty command name"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			d := Plan(tt.cmd)
			if !d.NeedsShell || d.Reason != tt.reason || d.Argv != nil {
				t.Errorf("Plan(%q) = %+v, want NeedsShell with reason %q", tt.cmd, d, tt.reason)
			}
		})
	}
}

func TestPlanParseError(t *testing.T) {
	for _, cmd := range []string{`echo "unterminated`, `ls |`, `if true; then`, `(ls`} {
		t.Run(cmd, func(t *testing.T) {
			d := Plan(cmd)
			if !d.NeedsShell || !strings.HasPrefix(d.Reason, "parse error: ") {
				t.Errorf("Plan(%q) = %+v, want NeedsShell with a parse error", cmd, d)
			}
		})
	}
}

func TestPlanBlank(t *testing.T) {
	for _, cmd := range []string{"", "   ", "\n\t", "# only a comment"} {
		t.Run(cmd, func(t *testing.T) {
			if d := Plan(cmd); d.NeedsShell || len(d.Argv) != 0 || d.Reason != "" {
				t.Errorf("Plan(%q) = %+v, want the zero Decision", cmd, d)
			}
		})
	}
}

// TestPlanMatchesBash runs each direct command both ways, through bash -c and as
// its Argv, and checks that a user sees the same output and status.
func TestPlanMatchesBash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("compares with POSIX programs (printf, ls)")
	}
	bash, err := Resolve("")
	if err != nil {
		t.Skip(err)
	}
	cmds := []string{
		`printf '%s\n' "a b" c`,
		`echo 'a|b' "c;d" e\&f`,
		`printf '[%s]\n' '' "" x`,
		`printf '%s\n' a\ b\ \ c "q\"uote" 'it'\''s' "back\\slash" "keep\x" \*`,
		`printf '%s\n' HEAD~1 --opt=~ "~" '{a,b}' '$HOME'`,
		"printf '%s\\n' line\\\ncontinued",
		`echo {} {x} [ a] a[`,
		`ls -d /`,
		`ls /nonexistent-hive-test-dir`,
	}
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			d := Plan(cmd)
			if d.NeedsShell {
				t.Fatalf("Plan(%q) needs the shell (%s), want direct", cmd, d.Reason)
			}
			viaBash := run(t, bash.Args(cmd))
			direct := run(t, d.Argv)
			if viaBash != direct {
				t.Errorf("bash -c %q:\n%s\ndirect %q:\n%s", cmd, viaBash, d.Argv, direct)
			}
		})
	}
}

// run runs argv and returns its stdout, stderr and exit status as one string.
func run(t *testing.T, argv []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = &stdout, &stderr
	code := 0
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run %q: %v", argv, err)
		}
		code = exit.ExitCode()
	}
	return fmt.Sprintf("stdout:\n%sstderr:\n%sstatus: %d", stdout.String(), stderr.String(), code)
}
