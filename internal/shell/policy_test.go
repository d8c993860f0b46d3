package shell

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestShellEnv(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SHELL is left alone on Windows")
	}
	bash := Shell{Path: "/bin/bash", Kind: KindBash}
	tests := []struct {
		name     string
		sh       Shell
		env, out []string
		same     bool // the input comes back as it is
	}{
		{"nil gets SHELL", bash, nil, []string{"SHELL=/bin/bash"}, false},
		{"client zsh replaced", bash, []string{"PATH=/bin", "SHELL=/bin/zsh", "HOME=/h"}, []string{"PATH=/bin", "HOME=/h", "SHELL=/bin/bash"}, false},
		{"zsh vars removed", bash, []string{"ZDOTDIR=/z", "PATH=/bin", "ZSH_THEME=x", "SHELL=/bin/bash"}, []string{"PATH=/bin", "SHELL=/bin/bash"}, false},
		{"twice set: one left", bash, []string{"SHELL=/bin/bash", "SHELL=/bin/zsh"}, []string{"SHELL=/bin/bash"}, false},
		{"already compliant", bash, []string{"PATH=/bin", "SHELL=/bin/bash"}, []string{"PATH=/bin", "SHELL=/bin/bash"}, true},
		{"SHELLX is another variable", bash, []string{"SHELLX=1"}, []string{"SHELLX=1", "SHELL=/bin/bash"}, false},
		// No program finds PowerShell (or cmd) through SHELL: the client's
		// zsh is no one's shell here either (TestSessionEnv says the same).
		{"powershell drops the client's SHELL", Shell{Path: `C:\pwsh.exe`, Kind: KindPowerShell}, []string{"SHELL=/bin/zsh", "ZSH_X=1"}, []string{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.env)
			got := tt.sh.Env(tt.env)
			if got == nil || !slices.Equal(got, tt.out) {
				t.Errorf("Env(%q) = %#v, want %#v", tt.env, got, tt.out)
			}
			if !slices.Equal(in, tt.env) {
				t.Errorf("Env modified its input: %q, was %q", tt.env, in)
			}
			if same := len(got) > 0 && len(tt.env) > 0 && &got[0] == &tt.env[0]; same != tt.same {
				t.Errorf("returned its input: %v, want %v", same, tt.same)
			}
		})
	}
}

// The default shell is /bin/bash, whatever bash comes first on PATH and
// whatever $SHELL says.
func TestDefaultIgnoresPathAndSHELL(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX policy")
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash here")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bash"), []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SHELL", "/bin/zsh")
	for name, f := range map[string]func() (Shell, error){"Resolve": func() (Shell, error) { return Resolve("") }, "Default": Default} {
		sh, err := f()
		if err != nil || sh != (Shell{Path: "/bin/bash", Kind: KindBash}) {
			t.Errorf("%s = %+v, %v; want /bin/bash", name, sh, err)
		}
	}
	if p := (Shell{Path: "/bin/bash", Kind: KindBash}).Prefix(); !slices.Equal(p, []string{"/bin/bash", "-c"}) {
		t.Errorf("Prefix = %q", p)
	}
}
