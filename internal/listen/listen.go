// Package listen sets up the unix sockets hive serves on (the daemon's
// hive.sock, the holder's holder.sock), the same way for both: dial
// first, where a live server means it is already running; then remove a
// stale file; then listen, with mode 0600 where the platform has modes.
package listen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// ErrLive is a socket a server answers on: it is already running.
var ErrLive = errors.New("a server answers on the socket")

// ErrLocked is a lock file (Lock) another process holds.
var ErrLocked = errors.New("held by another process")

// dialTimeout bounds the dial that looks for a live server.
const dialTimeout = time.Second

// Unix listens on the unix socket path. A server that accepts a
// connection there is left alone: the error is ErrLive (errors.Is), naming
// the socket. A file there that no server answers on is removed first,
// if it is a socket; any other kind of file is refused, never replaced.
// The listener does not remove the file when closed: the caller does,
// once it is sure no other server took the path over.
func Unix(path string) (net.Listener, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, dialTimeout); err == nil {
		c.Close()
		return nil, fmt.Errorf("listen on %q: %w", path, ErrLive)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%q exists and is not a socket: refusing to replace it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %q: %w", path, err)
	}
	return listen(path)
}
