package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

func TestRotatingLog(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no rotation on Windows")
	}
	path := filepath.Join(t.TempDir(), "daemon.log")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	stderr, stdout := open(), open()
	other, err := os.CreateTemp(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if newRotatingLog(path, 1000, other) != nil {
		t.Fatal("a stderr that is not daemon.log was taken over")
	}
	r := newRotatingLog(path, 1000, stderr, stdout, stderr, other)
	if r == nil {
		t.Fatal("no rotating log for the daemon's own daemon.log")
	}
	if len(r.targets) != 2 {
		t.Fatalf("%d targets, want stderr and stdout only", len(r.targets))
	}
	line := strings.Repeat("x", 99) + "\n"
	for range 25 { // 2500 bytes: two rotations
		if _, err := r.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := os.ReadFile(path)
	prev, _ := os.ReadFile(path + ".1")
	if len(cur) == 0 || len(cur) > 1000 || len(prev) == 0 || len(prev) > 1000 {
		t.Fatalf("daemon.log %d bytes, daemon.log.1 %d bytes; want each 1..1000", len(cur), len(prev))
	}
	if len(cur)+len(prev) != 500+1000 {
		t.Errorf("the two files hold %d bytes, want the last 1500", len(cur)+len(prev))
	}
	// What else writes to the daemon's stdout (a panic goes to stderr
	// the same way) lands in the new file.
	stdout.WriteString("from stdout\n")
	cur, _ = os.ReadFile(path)
	if !strings.HasSuffix(string(cur), "from stdout\n") {
		t.Errorf("stdout still writes to the rotated file")
	}
}

// A line that reaches the log in two writes (a buffer boundary) is not
// split across the two files.
func TestRotatingLogKeepsLinesWhole(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no rotation on Windows")
	}
	path := filepath.Join(t.TempDir(), "daemon.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newRotatingLog(path, 1000, f, f)
	line := strings.Repeat("x", 99) + "\n"
	for range 9 {
		r.Write([]byte(line)) // 900 bytes
	}
	r.Write([]byte("first half, "))         // 912
	r.Write([]byte("second half\n" + line)) // past 1000, but the line is open
	r.Write([]byte(line))                   // rotates here
	prev, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if !strings.Contains(string(prev), "first half, second half\n") || string(cur) != line {
		t.Errorf("a line was split by the rotation: daemon.log.1 ends %q, daemon.log %q", prev[max(0, len(prev)-130):], cur)
	}
}

// A daemon.log that is a symlink is not the daemon's own log, even when
// it points at the daemon's stderr; and rotation replaces a symlink at
// daemon.log.1 instead of writing through it.
func TestRotatingLogIgnoresSymlinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no rotation on Windows")
	}
	dir := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.log")
	f, err := os.OpenFile(elsewhere, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link := filepath.Join(dir, "daemon.log")
	hivetest.Symlink(t, elsewhere, link)
	if newRotatingLog(link, 1000, f, f) != nil {
		t.Error("a daemon.log symlink was taken for the daemon's own log")
	}

	path := filepath.Join(t.TempDir(), "daemon.log")
	lf, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	target := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(target, []byte("precious"), 0o644)
	hivetest.Symlink(t, target, path+".1")
	r := newRotatingLog(path, 100, lf, lf)
	line := strings.Repeat("x", 59) + "\n"
	for range 3 {
		r.Write([]byte(line))
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("rotation wrote through the daemon.log.1 symlink: %q", b)
	}
	if fi, err := os.Lstat(path + ".1"); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("daemon.log.1 after rotation: %v %v, want the old log", fi.Mode(), err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("new daemon.log: %v %v, want a 0600 file", fi.Mode(), err)
	}
}
