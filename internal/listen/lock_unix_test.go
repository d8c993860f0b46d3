//go:build unix

package listen

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/paths"
)

// A lock is one holder's at a time, across processes; it carries the
// holder's pid; a symlink at its path is refused, not followed.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	release, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the lock file holds %q, want this pid", b)
	}
	// flock is per open file: a second open in this process conflicts too.
	if _, err := Lock(path); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Errorf("a second Lock: %v, want ErrLocked naming the path", err)
	}
	// Another process sees it held too (where flock(1) is installed).
	if _, err := exec.LookPath("flock"); err == nil {
		out, err := exec.Command("flock", "-n", path, "true").CombinedOutput()
		if err == nil {
			t.Errorf("flock -n of a held lock succeeded: %s", out)
		}
	}
	release()
	again, err := Lock(path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()

	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(link); !errors.Is(err, paths.ErrInsecure) {
		t.Errorf("Lock through a symlink: %v, want paths.ErrInsecure", err)
	}
}
