package shell

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestResolveWindows checks the Windows search order with a fake environment
// and file system (it cannot run Windows here).
func TestResolveWindows(t *testing.T) {
	env := map[string]string{
		"ProgramFiles":      `C:\Program Files`,
		"ProgramFiles(x86)": `C:\Program Files (x86)`,
		"LOCALAPPDATA":      `C:\Users\me\AppData\Local`,
		"SystemRoot":        `C:\Windows`,
		"ComSpec":           `C:\Windows\system32\cmd.exe`,
		"PATH":              `C:\Windows\system32;C:\Users\me\AppData\Local\Microsoft\WindowsApps;"C:\tools\bin";C:\Program Files\PowerShell\7\`,
	}
	const (
		gitBash    = `C:\Program Files\Git\bin\bash.exe`
		gitBash86  = `C:\Program Files (x86)\Git\bin\bash.exe`
		userBash   = `C:\Users\me\AppData\Local\Programs\Git\bin\bash.exe`
		wslBash    = `C:\Windows\system32\bash.exe`
		appsBash   = `C:\Users\me\AppData\Local\Microsoft\WindowsApps\bash.exe`
		pathBash   = `C:\tools\bin\bash.exe`
		pwsh       = `C:\Program Files\PowerShell\7\pwsh.exe`
		winPS      = `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`
		pathPS     = `C:\Windows\system32\powershell.exe`
		comSpec    = `C:\Windows\system32\cmd.exe`
		systemCmd  = `C:\Windows\System32\cmd.exe`
		everything = "everything"
	)
	tests := []struct {
		name      string
		requested string
		files     []string
		env       map[string]string // overrides
		want      Shell
		err       error
	}{
		{"git bash first", "", []string{gitBash, gitBash86, userBash, pwsh, comSpec}, nil, Shell{gitBash, KindBash}, nil},
		{"git bash x86", "", []string{gitBash86, userBash, pwsh}, nil, Shell{gitBash86, KindBash}, nil},
		{"git bash per user", "", []string{userBash, pathBash}, nil, Shell{userBash, KindBash}, nil},
		{"bash on PATH, not WSL", "", []string{wslBash, appsBash, pathBash, pwsh}, nil, Shell{pathBash, KindBash}, nil},
		{"only WSL bash: pwsh", "", []string{wslBash, appsBash, pwsh, winPS, comSpec}, nil, Shell{pwsh, KindPowerShell}, nil},
		{"powershell on PATH", "", []string{pathPS, winPS, comSpec}, nil, Shell{pathPS, KindPowerShell}, nil},
		{"windows powershell", "", []string{winPS, comSpec}, nil, Shell{winPS, KindPowerShell}, nil},
		{"cmd from ComSpec", "", []string{comSpec}, nil, Shell{comSpec, KindCmd}, nil},
		{"cmd without ComSpec", "", []string{systemCmd}, map[string]string{"ComSpec": ""}, Shell{systemCmd, KindCmd}, nil},
		{"nothing", "", nil, nil, Shell{}, ErrNotFound},
		{"bash only", "bash", []string{pwsh, comSpec}, nil, Shell{}, ErrNotFound},
		{"pwsh requested", "pwsh", []string{gitBash, pwsh}, nil, Shell{pwsh, KindPowerShell}, nil},
		{"powershell requested", "powershell", []string{gitBash, winPS}, nil, Shell{winPS, KindPowerShell}, nil},
		{"cmd requested", "cmd", []string{gitBash, comSpec}, nil, Shell{comSpec, KindCmd}, nil},
		{"bash path", `D:\git\bin\bash.exe`, []string{`D:\git\bin\bash.exe`}, nil, Shell{`D:\git\bin\bash.exe`, KindBash}, nil},
		{"missing bash path", `D:\git\bin\bash.exe`, nil, nil, Shell{}, ErrNotFound},
		{"WSL bash path", wslBash, []string{wslBash}, nil, Shell{}, ErrNotAllowed},
		{"zsh", "zsh", []string{everything}, nil, Shell{}, ErrNotAllowed},
		{"sh path", `C:\msys\bin\sh.exe`, []string{everything}, nil, Shell{}, ErrNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if v, ok := tt.env[k]; ok {
					return v
				}
				return env[k]
			}
			isFile := func(p string) bool {
				for _, f := range tt.files {
					if f == everything || strings.EqualFold(f, p) {
						return true
					}
				}
				return false
			}
			got, err := resolveWindows(tt.requested, getenv, isFile)
			if !errors.Is(err, tt.err) || !strings.EqualFold(got.Path, tt.want.Path) || got.Kind != tt.want.Kind {
				t.Fatalf("resolveWindows(%q) = %+v, %v; want %+v, %v", tt.requested, got, err, tt.want, tt.err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), fmt.Sprintf("shell %q: ", tt.requested)) {
				t.Errorf("error %q does not name the shell field", err)
			}
		})
	}
}
