package paths

import (
	"path/filepath"
	"testing"
)

// The state dir's default is the platform's place for a program's state:
// ~/.local/state/hive (XDG) on unix, %LOCALAPPDATA%\hive on Windows.
func TestStateDirDefault(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	home := func() (string, error) { return "/home/u", nil }
	for _, c := range []struct {
		name, flag, goos string
		getenv           func(string) string
		want             string
	}{
		{"flag", "/x", "linux", env("HIVE_STATE_DIR", "/y"), "/x"},
		{"HIVE_STATE_DIR", "", "windows", env("HIVE_STATE_DIR", "/y", "LOCALAPPDATA", "/l"), "/y"},
		{"XDG on unix", "", "linux", env("XDG_STATE_HOME", "/s"), filepath.Join("/s", "hive")},
		{"home on unix", "", "darwin", env(), filepath.Join("/home/u", ".local", "state", "hive")},
		{"LOCALAPPDATA on Windows", "", "windows", env("LOCALAPPDATA", "/l"), filepath.Join("/l", "hive")},
		{"XDG set on Windows", "", "windows", env("XDG_STATE_HOME", "/s", "LOCALAPPDATA", "/l"), filepath.Join("/s", "hive")},
		{"home on Windows", "", "windows", env(), filepath.Join("/home/u", "AppData", "Local", "hive")},
	} {
		if got, err := stateDir(c.flag, c.goos, c.getenv, home); err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}
