//go:build unix

package listen

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// maxPath is the longest unix socket path Linux and macOS accept.
const maxPath = 103

func checkPath(path string) error {
	if len(path) > maxPath {
		return fmt.Errorf("socket path %q is %d bytes, unix sockets allow %d: use a shorter --state-dir", path, len(path), maxPath)
	}
	return nil
}

// listen makes the socket with mode 0600 from its start (the umask), so
// no other user can connect in between, and sets the mode again in case
// the platform ignores the umask for sockets.
func listen(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket %q: %w", path, err)
	}
	return ln, nil
}
