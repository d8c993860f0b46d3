//go:build !linux

package job

// newDirWatcher: directory watching is only implemented with inotify;
// elsewhere every lookup searches PATH.
func newDirWatcher(onChange func()) dirWatcher { return nil }
