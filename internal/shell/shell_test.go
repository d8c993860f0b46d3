package shell

import (
	"slices"
	"testing"
)

func TestCleanEnv(t *testing.T) {
	tests := []struct {
		name     string
		env, out []string
	}{
		{"nil", nil, []string{}},
		{"nothing to strip", []string{"PATH=/bin", "HOME=/root"}, []string{"PATH=/bin", "HOME=/root"}},
		{"zdotdir and zsh vars", []string{"ZDOTDIR=/z", "PATH=/bin", "ZSH_THEME=x", "ZSH_=y", "HOME=/h"},
			[]string{"PATH=/bin", "HOME=/h"}},
		{"exact key match", []string{"ZDOTDIR_OLD=1", "MY_ZSH_X=1", "ZSH=/oh-my-zsh", "zsh_x=1", "XZDOTDIR=1", "ZDOTDIR="},
			[]string{"ZDOTDIR_OLD=1", "MY_ZSH_X=1", "ZSH=/oh-my-zsh", "zsh_x=1", "XZDOTDIR=1"}},
		{"value mentions zsh", []string{"SHELL=/bin/zsh", "X=ZSH_FOO=1"}, []string{"SHELL=/bin/zsh", "X=ZSH_FOO=1"}},
		{"entry without =", []string{"ZSH_NOVALUE", "KEEP"}, []string{"KEEP"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.env)
			got := CleanEnv(tt.env)
			if got == nil || !slices.Equal(got, tt.out) {
				t.Errorf("CleanEnv(%q) = %#v, want %#v", tt.env, got, tt.out)
			}
			if !slices.Equal(in, tt.env) {
				t.Errorf("CleanEnv modified its input: %q, was %q", tt.env, in)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		shell Shell
		want  []string
	}{
		{Shell{"/bin/bash", KindBash}, []string{"/bin/bash", "-c", "ls | wc"}},
		{Shell{`C:\pwsh.exe`, KindPowerShell}, []string{`C:\pwsh.exe`, "-NoProfile", "-NonInteractive", "-Command", "ls | wc"}},
		{Shell{`C:\cmd.exe`, KindCmd}, []string{`C:\cmd.exe`, "/C", "ls | wc"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell.Kind, func(t *testing.T) {
			if got := tt.shell.Args("ls | wc"); !slices.Equal(got, tt.want) {
				t.Errorf("%+v.Args = %q, want %q", tt.shell, got, tt.want)
			}
		})
	}
}

// Builtin tells a shell's own commands from programs: what Windows has no
// program for runs through the shell (issue 21: `echo hi` was "not found").
func TestBuiltin(t *testing.T) {
	for _, c := range []struct {
		kind, name string
		want       bool
	}{
		{KindCmd, "echo", true}, {KindCmd, "DIR", true}, {KindCmd, "copy", true}, {KindCmd, "mkdir", true},
		{KindCmd, "type", true}, {KindCmd, "git", false}, {KindCmd, "ping", false}, {KindCmd, "cmd", false},
		{KindPowerShell, "echo", true}, {KindPowerShell, "Get-ChildItem", true}, {KindPowerShell, "ls", true},
		{KindPowerShell, "git", false}, {KindPowerShell, `C:\tools\my-tool.exe`, false},
		{KindBash, "echo", true}, {KindBash, "cd", true}, {KindBash, "printf", true}, {KindBash, "ls", false},
	} {
		if got := (Shell{Kind: c.kind}).Builtin(c.name); got != c.want {
			t.Errorf("%s: Builtin(%q) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}
