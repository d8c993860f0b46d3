//go:build unix

package listen

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sockDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "hive-l-") // short: socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// answers reports whether a server accepts on path.
func answers(path string) bool {
	c, err := net.Dial("unix", path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func TestUnix(t *testing.T) {
	dir := sockDir(t)
	p := filepath.Join(dir, "s.sock")
	ln, err := Unix(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	// A live server is left alone.
	_, err = Unix(p)
	if !errors.Is(err, ErrLive) || !strings.Contains(err.Error(), p) {
		t.Errorf("Unix on a live socket: %v, want ErrLive naming %q", err, p)
	}
	if !answers(p) {
		t.Fatal("the live server's socket was taken")
	}

	// Closed, its file stays (the caller removes it) and is stale: the
	// next Unix replaces it.
	ln.Close()
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("the socket file after Close: %v", err)
	}
	ln2, err := Unix(p)
	if err != nil {
		t.Fatalf("Unix on a stale socket: %v", err)
	}
	defer ln2.Close()
	go func() {
		if c, err := ln2.Accept(); err == nil {
			c.Close()
		}
	}()
	if !answers(p) {
		t.Error("no server on the replaced socket")
	}
}

// What is not a socket is never removed; a path too long for a socket is
// refused with the limit.
func TestUnixRefuses(t *testing.T) {
	dir := sockDir(t)
	p := filepath.Join(dir, "file")
	if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Unix(p); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Unix on a regular file: %v", err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
		t.Errorf("the regular file after Unix: %q, %v", b, err)
	}
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := Unix(long); err == nil || !strings.Contains(err.Error(), "unix sockets allow 103") {
		t.Errorf("Unix on a path of %d bytes: %v", len(long), err)
	}
}
