//go:build !windows

package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Resolve returns the shell that runs commands. On POSIX systems only bash is
// allowed: requested may be "" or "bash" (/bin/bash, else bash on PATH) or a path
// whose base name is bash, which must be an existing executable file. Anything
// else (zsh, /bin/zsh, sh, fish…) fails with an error that names the field and
// matches ErrNotAllowed; a missing bash matches ErrNotFound. The returned Path is
// absolute.
func Resolve(requested string) (Shell, error) {
	switch {
	case requested == "" || requested == KindBash:
		if executable("/bin/bash") == nil {
			return Shell{Path: "/bin/bash", Kind: KindBash}, nil
		}
		p, err := exec.LookPath("bash")
		if err != nil {
			return Shell{}, &ruleError{fmt.Sprintf("shell %q: no bash found (/bin/bash is missing and bash is not on PATH)", requested), ErrNotFound}
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return Shell{Path: p, Kind: KindBash}, nil
	case strings.ContainsRune(requested, '/') && filepath.Base(requested) == "bash":
		if err := executable(requested); err != nil {
			return Shell{}, &ruleError{fmt.Sprintf("shell %q: must be an existing executable file: %v", requested, err), ErrNotFound}
		}
		p, err := filepath.Abs(requested)
		if err != nil {
			return Shell{}, fmt.Errorf("shell %q: %w", requested, err)
		}
		return Shell{Path: p, Kind: KindBash}, nil
	}
	why := "the command checks are bash-shaped"
	if filepath.Base(requested) == "zsh" {
		why = zshReason
	}
	return Shell{}, &ruleError{fmt.Sprintf("shell %q: only bash is allowed on this platform (%s)", requested, why), ErrNotAllowed}
}

// executable returns nil if p is a regular file with an execute bit set.
func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}
