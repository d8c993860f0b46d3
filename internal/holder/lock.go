//go:build unix

package holder

import (
	"errors"
	"fmt"

	"github.com/hivetools/hive/internal/listen"
)

// ErrRunning is a holder that finds another one holding the state dir.
var ErrRunning = errors.New("another holder runs for this state directory")

// lock takes the holder's lock file for its lifetime (listen.Lock): one
// holder per state directory, so a second one never replaces a live
// one's socket.
func lock(path string) (func(), error) {
	release, err := listen.Lock(path)
	if errors.Is(err, listen.ErrLocked) {
		return nil, fmt.Errorf("%w: %w", ErrRunning, err)
	}
	return release, err
}
