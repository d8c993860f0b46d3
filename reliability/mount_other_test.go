//go:build !linux

package reliability

import (
	"runtime"
	"testing"
)

// mountTmpfs skips the test: there is no tmpfs to mount here.
func mountTmpfs(t *testing.T, dir string, size int) (unmount func()) {
	t.Helper()
	t.Skipf("no tmpfs to mount on %s on %s", dir, runtime.GOOS)
	return nil
}
