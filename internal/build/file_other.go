//go:build !unix

package build

import (
	"fmt"
	"io/fs"
)

// fileID is a file's size and modification time.
func fileID(fi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano())
}
