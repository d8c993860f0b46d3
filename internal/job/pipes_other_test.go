//go:build !linux

package job

import (
	"os"
	"testing"
)

func closeOnExec(t *testing.T, f *os.File) bool { return true }
