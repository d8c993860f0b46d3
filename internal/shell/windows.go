package shell

import (
	"fmt"
	"strings"
)

// resolveWindows implements Resolve for Windows. The environment and the file
// system come in as functions so that the search order is testable on any
// platform; paths are built with Windows separators whatever GOOS is.
func resolveWindows(requested string, getenv func(string) string, isFile func(string) bool) (Shell, error) {
	find := func(kind string) (Shell, bool) {
		var p string
		switch kind {
		case KindBash:
			p = gitBash(getenv, isFile)
		case KindPowerShell:
			p = powerShell(getenv, isFile)
		case KindCmd:
			p = cmdExe(getenv, isFile)
		}
		return Shell{Path: p, Kind: kind}, p != ""
	}
	notFound := func(what string) error {
		return &ruleError{fmt.Sprintf("shell %q: %s not found", requested, what), ErrNotFound}
	}
	name := strings.TrimSuffix(strings.ToLower(winBase(requested)), ".exe")
	isPath := strings.ContainsAny(requested, `\/`)
	switch {
	case requested == "":
		for _, kind := range []string{KindBash, KindPowerShell, KindCmd} {
			if s, ok := find(kind); ok {
				return s, nil
			}
		}
		return Shell{}, notFound("no Git Bash, PowerShell or cmd")
	case isPath && (name == "bash" || name == "pwsh" || name == "powershell" || name == "cmd"):
		kind := name
		if name == "pwsh" {
			kind = KindPowerShell
		}
		if kind == KindBash && wsl(requested) {
			return Shell{}, &ruleError{fmt.Sprintf("shell %q: WSL's bash is not allowed; use Git Bash", requested), ErrNotAllowed}
		}
		if !isFile(requested) {
			return Shell{}, notFound("file")
		}
		return Shell{Path: requested, Kind: kind}, nil
	case !isPath && name == "bash":
		if s, ok := find(KindBash); ok {
			return s, nil
		}
		return Shell{}, notFound("Git Bash")
	case !isPath && (name == "pwsh" || name == "powershell"):
		if s, ok := find(KindPowerShell); ok {
			return s, nil
		}
		return Shell{}, notFound("PowerShell")
	case !isPath && name == "cmd":
		if s, ok := find(KindCmd); ok {
			return s, nil
		}
		return Shell{}, notFound("cmd")
	}
	why := "the command checks are bash-shaped"
	if name == "zsh" {
		why = zshReason
	}
	return Shell{}, &ruleError{fmt.Sprintf("shell %q: only bash (Git Bash), powershell or cmd is allowed on this platform (%s)", requested, why), ErrNotAllowed}
}

func gitBash(getenv func(string) string, isFile func(string) bool) string {
	for _, p := range []string{
		winJoin(getenv("ProgramFiles"), `Git\bin\bash.exe`),
		winJoin(getenv("ProgramFiles(x86)"), `Git\bin\bash.exe`),
		winJoin(getenv("LOCALAPPDATA"), `Programs\Git\bin\bash.exe`),
	} {
		if p != "" && isFile(p) {
			return p
		}
	}
	for _, dir := range winPath(getenv("PATH")) {
		if p := winJoin(dir, "bash.exe"); !wsl(p) && isFile(p) {
			return p
		}
	}
	return ""
}

func powerShell(getenv func(string) string, isFile func(string) bool) string {
	return first(isFile,
		onPath(getenv, "pwsh.exe"),
		[]string{winJoin(getenv("ProgramFiles"), `PowerShell\7\pwsh.exe`)},
		onPath(getenv, "powershell.exe"),
		[]string{winJoin(getenv("SystemRoot"), `System32\WindowsPowerShell\v1.0\powershell.exe`)})
}

func cmdExe(getenv func(string) string, isFile func(string) bool) string {
	return first(isFile,
		[]string{getenv("ComSpec"), winJoin(getenv("SystemRoot"), `System32\cmd.exe`)},
		onPath(getenv, "cmd.exe"))
}

// first returns the first non-empty candidate that is a file.
func first(isFile func(string) bool, lists ...[]string) string {
	for _, list := range lists {
		for _, p := range list {
			if p != "" && isFile(p) {
				return p
			}
		}
	}
	return ""
}

func onPath(getenv func(string) string, exe string) []string {
	var out []string
	for _, dir := range winPath(getenv("PATH")) {
		out = append(out, winJoin(dir, exe))
	}
	return out
}

// wsl reports whether a bash.exe path is WSL's launcher (System32, Sysnative or
// the WindowsApps alias) rather than a real bash.
func wsl(p string) bool {
	dir := strings.ToLower(p[:max(strings.LastIndexAny(p, `\/`), 0)])
	dir = strings.ReplaceAll(dir, "/", `\`)
	return strings.HasSuffix(dir, `\system32`) || strings.HasSuffix(dir, `\sysnative`) ||
		strings.HasSuffix(dir, `\windowsapps`)
}

func winPath(path string) []string {
	var out []string
	for dir := range strings.SplitSeq(path, ";") {
		if dir = strings.Trim(dir, `"`); dir != "" {
			out = append(out, dir)
		}
	}
	return out
}

func winJoin(dir, name string) string {
	if dir == "" {
		return ""
	}
	return strings.TrimRight(dir, `\/`) + `\` + name
}

func winBase(p string) string {
	return p[strings.LastIndexAny(p, `\/`)+1:]
}
