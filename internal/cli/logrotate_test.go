package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
