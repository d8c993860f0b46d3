package httpfront

import "os"

const (
	openNoFollow = 0
	openNonBlock = 0
)

// checkTokenPerm accepts any mode: Windows guards files with ACLs, which
// the mode bits do not show.
func checkTokenPerm(fi os.FileInfo) error { return nil }
