package sockapi

import (
	"errors"
	"net"
	"os"

	"github.com/hivetools/hive/internal/client"
)

// peerAllowed reports whether the process that connected c runs as the
// daemon's effective uid, and logs a refusal. The socket's 0600 mode in
// a 0700 dir already keeps other users out; this is the second lock.
// Where the platform cannot tell (client.ErrNoPeerCred), every peer is
// allowed.
func (s *Server) peerAllowed(c net.Conn) bool {
	p, err := client.PeerOf(c)
	if errors.Is(err, client.ErrNoPeerCred) {
		return true
	}
	if err != nil {
		s.log.Warn("refused a connection: cannot read its credentials", "err", err)
		return false
	}
	if euid := os.Geteuid(); p.UID != euid {
		s.log.Warn("refused a connection from another user", "uid", p.UID, "pid", p.PID, "daemon_uid", euid)
		return false
	}
	return true
}
