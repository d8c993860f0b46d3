//go:build !linux && !darwin && !freebsd

package job

// diskFull knows nothing here; the store's own errors will tell.
func diskFull(dir string) error { return nil }
