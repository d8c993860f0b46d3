package reliability

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes, mode 0700, on dir (root, in a
// mount namespace of the test's own), and returns what unmounts it.
func mountTmpfs(t *testing.T, dir string, size int) (unmount func()) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	return func() { unix.Unmount(dir, unix.MNT_DETACH) }
}
