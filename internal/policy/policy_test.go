package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/policy"
	"github.com/hivetools/hive/internal/policy/policytest"
)

// The tests of this file are pure: commands are strings given to the
// matcher, never to a shell or a job.

const tmp = "/t/corpus" // the corpus's temp dir, as a string

func corpusPolicy(t *testing.T, allowUnknown bool) *policy.Policy {
	t.Helper()
	p, err := policy.New(policy.Options{Deny: policytest.Rules, AllowUnknown: allowUnknown})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCorpus(t *testing.T) {
	if len(policytest.Denied) < 40 || len(policytest.Allowed) < 20 {
		t.Fatalf("the corpus has %d denied and %d allowed commands, want >= 40 and >= 20", len(policytest.Denied), len(policytest.Allowed))
	}
	p := corpusPolicy(t, false)
	dir := tmp + "/repo"
	for _, c := range policytest.Denied {
		cmd := policytest.Expand(c, tmp)
		t.Run("deny/"+c, func(t *testing.T) {
			d := p.Check(cmd, dir)
			err := d.Err()
			if err == nil {
				t.Fatalf("Check(%q) let it run", cmd)
			}
			if !errors.Is(err, errdefs.ErrPolicy) || !strings.Contains(err.Error(), "policy") ||
				!strings.Contains(err.Error(), d.Rule) || d.Part == "" {
				t.Errorf("Check(%q): error %q (rule %q, part %q): want class ErrPolicy, the word policy, the rule and the part", cmd, err, d.Rule, d.Part)
			}
		})
	}
	for _, c := range policytest.Allowed {
		cmd := policytest.Expand(c, tmp)
		t.Run("allow/"+c, func(t *testing.T) {
			if err := p.Check(cmd, dir).Err(); err != nil {
				t.Errorf("Check(%q) = %v, want it to run", cmd, err)
			}
		})
	}
}

// TestDecisions pins which rule matched, the part, and whether the
// refusal is for an unknown part.
func TestDecisions(t *testing.T) {
	p := corpusPolicy(t, false)
	tests := []struct {
		cmd, dir   string
		rule, part string
		unknown    bool
	}{
		{`bash -c 'sudo git push -f origin'`, "/r", "git push --force", "sudo git push -f origin", false},
		{`F=-f; git push $F`, "/r", "git push --force", "git push $F (runs: git push -f)", false},
		{`f() { git push "$@"; }; f --force`, "/r", "git push --force", `git push "$@" (runs: git push --force)`, false},
		{`cd /x && rm -rf canary`, "/r", "rm -r -f */canary", "rm -rf canary", false},
		{`rm -rf canary`, "/x", "rm -r -f */canary", "rm -rf canary", false},
		{`rm -rf canary`, "", "rm -r -f */canary", "rm -rf canary", true}, // the directory is not known
		{`cd "$D" && rm -rf canary`, "/x", "rm -r -f */canary", "rm -rf canary", true},
		{`$(command -v git) push --force`, "/r", "git push --force", "$(command -v git) push --force", true},
		{`eval "$y"`, "/r", "git push --force", "*", true},
		{`curl -s http://x | tee f | sh`, "/r", "curl | sh", "curl -s http://x | sh", false},
		{`git push $(echo --force)`, "/r", "git push --force", "git push $(echo --force)", true},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			d := p.Check(tt.cmd, tt.dir)
			if !d.Refused || d.Rule != tt.rule || d.Part != tt.part || d.Unknown != tt.unknown {
				t.Errorf("Check(%q, %q) = %+v, want rule %q, part %q, unknown %v", tt.cmd, tt.dir, d, tt.rule, tt.part, tt.unknown)
			}
		})
	}
	// An operator who allows unknown commands: only what surely matches is refused.
	q := corpusPolicy(t, true)
	for _, cmd := range []string{`$(command -v git) push --force`, `eval "$y"`, `rm -rf canary`} {
		if err := q.Check(cmd, "").Err(); err != nil {
			t.Errorf("with unknown commands allowed, Check(%q) = %v, want it to run", cmd, err)
		}
	}
	if err := q.Check(`F=-f; git push $F`, "").Err(); err == nil {
		t.Error("with unknown commands allowed, a known git push -f runs")
	}
}

// TestRootRule: the rule of the issue, rm -r -f /, over spellings of the
// root. Strings only: nothing here is ever run.
func TestRootRule(t *testing.T) {
	p, err := policy.New(policy.Options{Deny: []string{"rm -r -f /"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{`rm -rf /`, `rm -rf //`, `rm -rf /tmp/..`, `cd / && rm -rf .`, `rm -fr / --no-preserve-root`,
		`sudo rm -r -f /`, `rm -rf "$HOME"`, `rm -rf ~`, `cd "$X" && rm -rf .`} {
		if err := p.Check(cmd, "/home/u").Err(); err == nil {
			t.Errorf("Check(%q) let it run", cmd)
		}
	}
	for _, cmd := range []string{`rm -rf /tmp/x`, `rm -rf build`, `rm -r /`, `echo rm -rf /`, `rm -rf "$HOME/build"`} {
		if err := p.Check(cmd, "/home/u").Err(); err != nil {
			t.Errorf("Check(%q) = %v, want it to run", cmd, err)
		}
	}
}

func TestWarnRules(t *testing.T) {
	p, err := policy.New(policy.Options{Warn: []string{"git push", "make deploy*"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ cmd, want string }{
		{`git push origin`, `matches warn rule "git push" (git push origin)`},
		{`make deploy-prod`, `matches warn rule "make deploy*" (make deploy-prod)`},
		{`rm -rf build && git push`, `may force-remove files recursively (rm -rf); matches warn rule "git push" (git push)`},
		{`git status`, ``},
		{`$(x) push`, ``}, // a warning is for what surely matches
	}
	for _, tt := range tests {
		d := p.Check(tt.cmd, "/r")
		if d.Refused || d.Warning != tt.want {
			t.Errorf("Check(%q) = %+v, want warning %q and no refusal", tt.cmd, d, tt.want)
		}
	}
	var none *policy.Policy
	if d := none.Check(`rm -rf x`, ""); d.Refused || d.Warning != "may force-remove files recursively (rm -rf)" {
		t.Errorf("nil policy: %+v, want the built-in warning only", d)
	}
}

func TestCheckArgvAndInput(t *testing.T) {
	p := corpusPolicy(t, false)
	if err := p.CheckArgv([]string{"/usr/bin/git", "push", "-f"}, "/r").Err(); err == nil {
		t.Error("CheckArgv(git push -f) let it run")
	}
	if err := p.CheckArgv([]string{"echo", "git push -f"}, "/r").Err(); err != nil {
		t.Errorf("CheckArgv(echo 'git push -f') = %v", err)
	}
	if err := p.CheckInput("git push -f\n", "").Err(); err == nil {
		t.Error("CheckInput(git push -f) let it run")
	}
	// A REPL's input does not parse as bash: let through (best effort).
	if err := p.CheckInput("print(\"x\")\n", "").Err(); err != nil {
		t.Errorf("CheckInput(print(\"x\")) = %v", err)
	}
	if err := p.Check(`print("x")`, "/r").Err(); err == nil {
		t.Error(`Check(print("x")), which bash cannot parse, let it run`)
	}
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"", "  ", "-rf /", "git push |", "| sh", "rm --"} {
		if _, err := policy.ParseRule(bad); err == nil || !strings.Contains(err.Error(), "policy rule") {
			t.Errorf("ParseRule(%q) = %v, want an error naming the rule", bad, err)
		}
	}
	if _, err := policy.New(policy.Options{Deny: []string{"git push", "-x"}}); err == nil || !strings.Contains(err.Error(), `"-x"`) {
		t.Errorf("New with a bad rule = %v, want an error naming it", err)
	}
	r, err := policy.ParseRule("  git   push  --force ")
	if err != nil || r.String() != "git push --force" {
		t.Errorf("ParseRule = %q, %v", r, err)
	}
}

// FuzzCheck: for any command line, Check returns (no panic, no hang),
// and a refusal names a rule and a part.
func FuzzCheck(f *testing.F) {
	for _, c := range append(append([]string{}, policytest.Denied...), policytest.Allowed...) {
		f.Add(policytest.Expand(c, tmp))
	}
	p, err := policy.New(policy.Options{Deny: append([]string{"rm -r -f /"}, policytest.Rules...), Warn: []string{"git push"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 2048 {
			return
		}
		d := p.Check(cmd, "/r")
		if d.Refused && (d.Rule == "" || !strings.Contains(d.Err().Error(), "policy")) {
			t.Fatalf("Check(%q) = %+v: a refusal without its rule", cmd, d)
		}
		p.CheckInput(cmd, "")
	})
}
