//go:build unix

package reliability

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Row 16: a file planted where the holder's socket or lock goes (a
// regular file at holder.sock, a symlink at holder.sock.lock) stops the
// daemon's start at once with an error that names the file and says what
// is wrong with it; the file, and what a symlink points to, are left as
// they are.
func TestRow16PlantedHolderFiles(t *testing.T) {
	var slowest time.Duration
	for _, c := range []struct {
		name, file, want string
		plant            func(path, canary string) error
	}{
		{"regular file at the socket", "holder.sock", "is a regular file, not a socket",
			func(path, _ string) error { return os.WriteFile(path, []byte("precious\n"), 0o600) }},
		{"symlink at the lock", "holder.sock.lock", "symlink",
			func(path, canary string) error { return os.Symlink(canary, path) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newStateDir(t)
			canary := filepath.Join(t.TempDir(), "canary")
			if err := os.WriteFile(canary, []byte("canary\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.file)
			if err := c.plant(path, canary); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(path)
			cmd := hivetest.Command(t, dir, "daemon")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			t0 := time.Now()
			err := cmd.Run()
			took := time.Since(t0)
			slowest = max(slowest, took)
			logb, _ := os.ReadFile(filepath.Join(dir, "daemon.log"))
			said := out.String() + string(logb)
			if err == nil || !strings.Contains(said, path) || !strings.Contains(said, c.want) {
				t.Errorf("hive daemon with %s: %v after %v; it said:\n%s\nwant an error naming %s, saying %q", c.name, err, took, said, path, c.want)
			}
			if took > 5*time.Second {
				t.Errorf("hive daemon with %s took %v to give up", c.name, took)
			}
			after, err := os.Lstat(path)
			if err != nil || !os.SameFile(before, after) || after.ModTime() != before.ModTime() {
				t.Errorf("the planted %s was changed: %v", c.file, err)
			}
			if b, _ := os.ReadFile(canary); string(b) != "canary\n" {
				t.Errorf("the file the symlink points to holds %q", b)
			}
		})
	}
	figure(t, 16, "planted holder.sock (a regular file) and holder.sock.lock (a symlink): the daemon stops at once (slowest %v) naming the file, which is left as it is", slowest.Round(time.Millisecond))
}
