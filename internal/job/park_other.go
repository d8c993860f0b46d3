//go:build !linux

package job

import "os"

// parkable: an idle pump keeps waiting here.
const parkable = false

// parkRead parks nothing here: an idle job's pumps keep their goroutines.
func parkRead(r *os.File, resume func()) (token uint32, ok bool) { return 0, false }

// unpark has nothing to resume here.
func unpark(token uint32) bool { return false }
