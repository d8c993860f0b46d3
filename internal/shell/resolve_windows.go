//go:build windows

package shell

import "os"

// Resolve returns the shell that runs commands. On Windows, requested "" picks
// the first found of Git Bash (%ProgramFiles%\Git\bin\bash.exe,
// %ProgramFiles(x86)%\Git\bin\bash.exe, %LOCALAPPDATA%\Programs\Git\bin\bash.exe,
// then a bash.exe on PATH that is not WSL's), PowerShell (pwsh.exe, then
// powershell.exe) and cmd (%ComSpec%, else cmd.exe). requested may also be "bash",
// "powershell", "pwsh" or "cmd" to pick one kind, or a path to one of those
// executables. Anything else fails with an error that names the field and matches
// ErrNotAllowed; a shell that cannot be found matches ErrNotFound.
func Resolve(requested string) (Shell, error) {
	return resolveWindows(requested, os.Getenv, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
}
