package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroup2 finds the cgroup v2 directory of the calling process and
// reports whether it may create cgroups under it (the subtree is
// delegated to it, or it runs as root): where it may, each job could run
// in a cgroup of its own that no process can leave (docs/architecture.md).
// dir is "" when there is no cgroup v2 hierarchy.
func Cgroup2() (dir string, writable bool) {
	mnt := cgroup2Mount()
	if mnt == "" {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			dir = filepath.Join(mnt, filepath.Clean("/"+rest))
			return dir, unix.Access(dir, unix.W_OK) == nil
		}
	}
	return "", false
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted, from
// /proc/self/mountinfo ("" if nowhere).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup2" {
			if f := strings.Fields(pre); len(f) >= 5 {
				return f[4]
			}
		}
	}
	return ""
}
