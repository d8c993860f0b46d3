//go:build !linux

package proc

// Cgroup2 finds nothing: cgroups are Linux's.
func Cgroup2() (dir string, writable bool) { return "", false }
