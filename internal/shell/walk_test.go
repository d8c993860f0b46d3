package shell

import (
	"strings"
	"testing"
)

// render is a call as a test reads it: its words, an unknown one in
// <…> (with … after it when it may spread), then @dir.
func render(c *Call) string {
	var b strings.Builder
	for i, w := range c.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case w.Known:
			b.WriteString(w.Text)
		case w.Spread:
			b.WriteString("<" + w.Text + ">…")
		default:
			b.WriteString("<" + w.Text + ">")
		}
	}
	return b.String() + " @" + c.Dir
}

func walkAll(cmd string) []string {
	var out []string
	Walk(cmd, "/w", Visitor{Call: func(c *Call) { out = append(out, render(c)) }})
	return out
}

func TestWalk(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{`git push --force`, []string{"git push --force @/w"}},
		{`"g"'i't\ push $'--\x66orce'`, []string{"git push --force @/w"}},
		{`F=--force; git push $F`, []string{"git push --force @/w"}},
		{`A="push --force"; git $A`, []string{"git push --force @/w"}},
		{`A="push --force"; git "$A"`, []string{"git push --force @/w"}},
		{`export P=/usr/bin/git && $P push`, []string{"/usr/bin/git push @/w"}},
		{`git push $UNSET`, []string{"git push <*>… @/w"}},
		{`git push "$UNSET"`, []string{"git push <*> @/w"}},
		{`X=1 git push $X`, []string{"git push <*>… @/w"}},
		{`$(command -v git) push --force`, []string{"<*>… push --force @/w"}}, // command -v runs nothing
		{`sudo -u root env A=1 nice -n 5 timeout 9 git push`, []string{"git push @/w"}},
		{`cd /tmp && rm -rf x; cd sub; ls`, []string{"cd /tmp @/w", "rm -rf x @/tmp", "cd sub @/tmp", "ls @/tmp/sub"}},
		{`cd "$D" && ls`, []string{"cd <*> @/w", "ls @"}},
		{`(cd /a); ls`, []string{"cd /a @/w", "ls @/w"}},
		{`true || cd /a; ls`, []string{"true @/w", "cd /a @/w", "ls @"}},
		{`bash -c 'git push "$1"' x --force`, []string{"bash -c git push \"$1\" x --force @/w", "git push --force @/w"}},
		{`eval "git push --force"`, []string{"eval git push --force @/w", "git push --force @/w"}},
		{`eval "$y"`, []string{"eval <*> @/w", "<*>… @/w"}},
		{`f() { git push "$@"; }; f --force`, []string{"f --force @/w", "git push --force @/w"}},
		{`f() { git push "$@"; }`, []string{"git push <*>… @/w"}},
		{`bash <<< 'git push -f'`, []string{"bash @/w", "git push -f @/w"}},
		{`echo 'git push -f' | sh`, []string{"echo git push -f @/w", "sh @/w", "git push -f @/w"}},
		{`find /x -exec rm -rf {} +`, []string{"find /x -exec rm -rf {} + @/w", "rm -rf <*> @"}},
		{`ls | xargs rm -rf`, []string{"ls @/w", "rm -rf <*>… @/w"}},
		{`rm -rf ~/x *.o {a,b}/c`, []string{"rm -rf <*/x> <*.o> <*/c> @/w"}},
		{`echo $(git push -f) <(rm x)`, []string{"git push -f @/w", "rm x @/w", "echo <*>… <*>… @/w"}},
		{`for i in 1; do cd /a; done; ls`, []string{"cd /a @", "ls @"}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			got := walkAll(tt.cmd)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Walk(%q):\n got %q\nwant %q", tt.cmd, got, tt.want)
			}
		})
	}
}

// TestWalkArgv: an argv is one simple command, its shell strings walked.
func TestWalkArgv(t *testing.T) {
	var got []string
	WalkArgv([]string{"sudo", "sh", "-c", "git push -f"}, "/w", Visitor{Call: func(c *Call) { got = append(got, render(c)) }})
	want := []string{"sh -c git push -f @/w", "git push -f @/w"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("WalkArgv: got %q, want %q", got, want)
	}
}

// TestWalkBounded: functions and aliases that call each other, and
// substitutions piped into shells, are walked a bounded number of times
// (past the budget, as an unknown command line).
func TestWalkBounded(t *testing.T) {
	for _, cmd := range []string{
		"alias x='x x x x x x x x'\n" + strings.Repeat("x\n", 500),
		"alias a='b b b b'; alias b='a a a a'\n" + strings.Repeat("a;", 500),
		"f(){ g;g;g;g; }; g(){ h;h;h;h; }; h(){ f;f;f;f; }; " + strings.Repeat("f;", 300),
		strings.Repeat("echo $(echo $(echo $(echo $(echo x)))) | sh; ", 100),
	} {
		n, unknown := 0, false
		Walk(cmd, "/", Visitor{Call: func(c *Call) {
			n++
			unknown = unknown || !c.Args[0].Known
		}})
		if n > 5000 || !unknown {
			t.Errorf("Walk of %.40q: %d calls (unknown among them: %v), want at most 5000 and an unknown one", cmd, n, unknown)
		}
	}
}
