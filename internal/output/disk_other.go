//go:build !linux && !darwin && !freebsd

package output

// DiskFree cannot tell here: a stream writes until the disk refuses.
func DiskFree(dir string) (free int64, ok bool) { return 0, false }
