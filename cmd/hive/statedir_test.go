package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// runBounded runs hive ARGS on state and returns its combined output and
// exit code; a hive that does not end within 30 s is killed (-1).
func runBounded(t *testing.T, state string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := hivetest.Command(t, state, args...)
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	out, _ := c.CombinedOutput()
	if ctx.Err() != nil {
		t.Errorf("hive %s did not end within 30 s", strings.Join(args, " "))
		return string(out), -1
	}
	return string(out), c.ProcessState.ExitCode()
}

// A state dir someone else could write to, or that is not ours, is
// refused by the daemon, the bridge and the CLI alike, with an error
// that says what is wrong and how to fix it, and nothing is made in it.
func TestUnsafeStateDirRefused(t *testing.T) {
	tests := []struct {
		name  string
		root  bool
		setup func(t *testing.T, base string) string // returns the state dir
		want  string                                 // %[1]s is the state dir, %[2]s base
	}{
		{"group-writable", false, func(t *testing.T, base string) string {
			d := filepath.Join(base, "hive")
			os.Mkdir(d, 0o700)
			os.Chmod(d, 0o770)
			return d
		}, `state dir "%[1]s": mode 0770 lets group or others write to it; chmod 700 %[1]s`},
		{"world-writable parent", false, func(t *testing.T, base string) string {
			os.Chmod(base, 0o777)
			d := filepath.Join(base, "hive")
			os.Mkdir(d, 0o700)
			return d
		}, `state dir "%[1]s": "%[2]s" on its path has mode 0777`},
		{"another uid's", true, func(t *testing.T, base string) string {
			d := filepath.Join(base, "hive")
			os.Mkdir(d, 0o700)
			os.Chown(d, 65534, 65534)
			return d
		}, `state dir "%[1]s": owned by uid 65534, not by you (uid 0)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to make a dir of uid 65534")
			}
			base, err := os.MkdirTemp("", "hive-e2e-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hivetest.StopState(t, filepath.Join(base, "hive")); os.RemoveAll(base) })
			state := tc.setup(t, base)
			want := fmt.Sprintf(tc.want, state, base)
			for _, args := range [][]string{{"daemon"}, {"mcp"}, {"ps"}, {"run", "--", "true"}} {
				out, code := runBounded(t, state, args...)
				if code <= 0 || !strings.Contains(out, want) {
					t.Errorf("hive %s: exit %d, %q; want a refusal saying %q", strings.Join(args, " "), code, out, want)
				}
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Errorf("refused state dir holds %d entries", len(ents))
			}
		})
	}
}

// A hive.sock that is a symlink to someone else's socket is never
// connected to: the CLI and the bridge refuse, and that listener sees
// nothing.
func TestPlantedSocketRefused(t *testing.T) {
	state := hivetest.StateDir(t)
	other := filepath.Join(t.TempDir(), "other.sock")
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	hivetest.Symlink(t, other, filepath.Join(state, "hive.sock"))
	want := fmt.Sprintf("socket %q: is a symlink (to %q), not the daemon's socket: refusing to connect", filepath.Join(state, "hive.sock"), other)
	for _, args := range [][]string{{"ps"}, {"mcp"}} {
		out, code := runBounded(t, state, args...)
		if code <= 0 || !strings.Contains(out, want) {
			t.Errorf("hive %s: exit %d, %q; want a refusal saying %q", strings.Join(args, " "), code, out, want)
		}
	}
	ln.Close()
	<-done
	if n := conns.Load(); n != 0 {
		t.Errorf("the listener behind the symlink got %d connections", n)
	}
}

// After a session through the bridge every file hive made in the state
// dir is 0600 and every dir 0700, the store's -wal included (it has no
// -shm: the daemon's store is exclusive, its index in memory).
func TestStateDirIsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes on Windows")
	}
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	s.MustCall("run", map[string]any{"cmd": "echo out; echo err >&2", "wait_seconds": 20}, nil)
	s.MustCall("set_status", map[string]any{"text": "private"}, nil)
	for _, name := range []string{"hive.db", "hive.db-wal", "daemon.lock", "daemon.log", "hive.sock", "hyperhive-status"} {
		if _, err := os.Lstat(filepath.Join(state, name)); err != nil {
			t.Errorf("%s missing after a session: %v", name, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(state, "hive.db-shm")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hive.db-shm after a session (%v): the store is not exclusive", err)
	}
	filepath.WalkDir(state, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		want := fs.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		return nil
	})
}
