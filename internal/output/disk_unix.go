//go:build linux || darwin || freebsd

package output

import (
	"os"

	"golang.org/x/sys/unix"
)

// DiskFree is the free space of dir's filesystem for this process (root
// may use the reserved blocks); ok false when it cannot be told.
func DiskFree(dir string) (free int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	avail := max(int64(st.Bavail), 0) // signed on FreeBSD: below 0 past the reserve
	if os.Geteuid() == 0 {
		avail = int64(st.Bfree)
	}
	return avail * int64(st.Bsize), true
}
