package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

func writeExec(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// waitPath polls lookPath until it answers want ("" for not found): the
// cache learns of a change from inotify, a moment after it happened.
func waitPath(t *testing.T, c *pathCache, env []string, want string) {
	t.Helper()
	hivetest.Eventually(t, 5*time.Second, fmt.Sprintf("lookPath to answer %q", want), func() error {
		got, err := c.lookPath("tool", env, "")
		if err != nil {
			got = ""
		}
		if got != want {
			return fmt.Errorf("lookPath = %q (%v), want %q", got, err, want)
		}
		return nil
	})
}

func TestPathCache(t *testing.T) {
	c := newPathCache()
	defer c.close()
	a, b := t.TempDir(), t.TempDir()
	env := []string{"HOME=/x", "PATH=" + a + string(filepath.ListSeparator) + b}
	writeExec(t, filepath.Join(b, "tool"))
	waitPath(t, c, env, filepath.Join(b, "tool"))

	if runtime.GOOS == "linux" {
		// Answers come from the cache: no more searches.
		c.mu.Lock()
		n := c.searches
		c.mu.Unlock()
		for range 10 {
			if p, err := c.lookPath("tool", env, ""); err != nil || p != filepath.Join(b, "tool") {
				t.Fatalf("cached lookPath = %q %v", p, err)
			}
		}
		c.mu.Lock()
		if c.searches != n {
			t.Errorf("%d searches for 10 cached lookups", c.searches-n)
		}
		c.mu.Unlock()
	}

	// A command installed earlier in PATH shadows the cached one...
	writeExec(t, filepath.Join(a, "tool"))
	waitPath(t, c, env, filepath.Join(a, "tool"))
	// ...removed, the later one is back...
	os.Remove(filepath.Join(a, "tool"))
	waitPath(t, c, env, filepath.Join(b, "tool"))
	// ...made not executable, it is not found...
	os.Chmod(filepath.Join(b, "tool"), 0o644)
	waitPath(t, c, env, "")
	// ...and a renamed one is found under its new name only.
	os.Chmod(filepath.Join(b, "tool"), 0o755)
	waitPath(t, c, env, filepath.Join(b, "tool"))
	os.Rename(filepath.Join(b, "tool"), filepath.Join(b, "tool2"))
	waitPath(t, c, env, "")

	// A PATH directory that does not exist yet (two levels missing) is
	// seen once it is created with a command in it.
	later := filepath.Join(t.TempDir(), "later", "bin")
	env2 := []string{"PATH=" + later + string(filepath.ListSeparator) + b}
	writeExec(t, filepath.Join(b, "tool"))
	waitPath(t, c, env2, filepath.Join(b, "tool"))
	if runtime.GOOS == "linux" {
		// Events of the write above may still arrive and clear the cache
		// once; after them the answer must come from the cache.
		if err := hivetest.Wait(5*time.Second, func() error {
			c.mu.Lock()
			n := c.searches
			c.mu.Unlock()
			c.lookPath("tool", env2, "")
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.searches != n {
				return errors.New("the lookup searched PATH")
			}
			return nil
		}); err != nil {
			t.Errorf("a PATH with a missing directory is not cached: %v", err)
		}
	}
	if err := os.MkdirAll(later, 0o755); err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(later, "tool"))
	waitPath(t, c, env2, filepath.Join(later, "tool"))
}

func TestPathOf(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"A=1", "PATH=/bin:/usr/bin"}, "/bin:/usr/bin"},
		{[]string{"PATH=/a", "PATH=/b"}, "/b"},
		{[]string{"PATH=/a", "PATH="}, ""},
		{[]string{"PATHX=/a", "MYPATH=/b"}, ""},
	} {
		if got := pathOf(tt.env); got != tt.want {
			t.Errorf("pathOf(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
