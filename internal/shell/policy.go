package shell

import (
	"runtime"
	"strings"
	"sync"
)

// The shell policy: every command line hive runs (run, terminal_exec,
// terminal_job_start, hive run) and every PTY shell runs under [Default],
// with an environment passed through [Shell.Env]. The client's $SHELL
// plays no part in either.

var defaultShell struct {
	mu sync.Mutex
	sh Shell // set once found
}

// Default returns the shell that runs command lines: Resolve(""), which on
// POSIX is /bin/bash (the first bash on the daemon's PATH only where
// /bin/bash does not exist) and on Windows Git Bash, else PowerShell, else
// cmd. $SHELL is never consulted. A shell once found is kept for the life
// of the process; an error (no shell at all) is not, so a shell installed
// later is found by the next call. Safe for concurrent use.
func Default() (Shell, error) {
	defaultShell.mu.Lock()
	defer defaultShell.mu.Unlock()
	if defaultShell.sh.Path != "" {
		return defaultShell.sh, nil
	}
	sh, err := Resolve("")
	if err != nil {
		return Shell{}, err
	}
	defaultShell.sh = sh
	return sh, nil
}

// Prefix is the argv that runs a command line with s when the command line
// is appended as the last element: Args(cmd) without cmd.
func (s Shell) Prefix() []string {
	a := s.Args("")
	return a[:len(a)-1]
}

// Env returns env ("KEY=value" entries) under the shell policy for commands
// run with s: without ZDOTDIR and ZSH_* (see [CleanEnv]) and without the
// client's SHELL: when s is bash and the platform is not Windows,
// SHELL=s.Path takes its place, so a program that starts "$SHELL" (make,
// script, an editor's :!) gets the same bash and never the client's zsh or
// fish; on Windows (a path of its own, or cmd, or PowerShell, which no
// program finds through SHELL) there is none. The
// input is not modified; when it already complies it is returned as it is
// (callers must not modify the result's elements). The result is never nil.
func (s Shell) Env(env []string) []string {
	want := ""
	if s.Kind == KindBash && s.Path != "" && runtime.GOOS != "windows" {
		want = "SHELL=" + s.Path
	}
	has := want == ""
	clean := true
	for _, kv := range env {
		switch {
		case zshVar(kv):
			clean = false
		case strings.HasPrefix(kv, "SHELL="):
			if want != "" && kv == want && !has {
				has = true
			} else {
				clean = false
			}
		}
	}
	if clean && has && env != nil {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if zshVar(kv) || strings.HasPrefix(kv, "SHELL=") {
			continue
		}
		out = append(out, kv)
	}
	if want != "" {
		out = append(out, want)
	}
	return out
}

// zshVar reports whether kv sets ZDOTDIR or a ZSH_* variable.
func zshVar(kv string) bool {
	key, _, _ := strings.Cut(kv, "=")
	return key == "ZDOTDIR" || strings.HasPrefix(key, "ZSH_")
}
