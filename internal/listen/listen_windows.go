package listen

import (
	"fmt"
	"net"
)

func checkPath(string) error { return nil }

// listen listens; Windows guards the socket with the directory's ACL, not
// a mode.
func listen(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", path, err)
	}
	return ln, nil
}
