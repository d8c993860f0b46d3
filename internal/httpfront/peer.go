package httpfront

import (
	"errors"
	"net"
	"os"
	"time"
)

// loopbackPeerAllowed reports whether a TCP connection may be served: one
// from a loopback address must come from a socket of the daemon's own uid
// (on Linux, where the kernel lists socket owners). A token, a login code
// or a session cookie that leaked to another local user (a process
// command line, a browser that sends cookies to every port of a host) is
// then of no use to that user. Refusals are logged at most once a second.
func (f *Front) loopbackPeerAllowed(c net.Conn) bool {
	ra, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok || !ra.IP.IsLoopback() {
		return true // the token guards other addresses
	}
	uid, err := tcpPeerUID(c)
	if errors.Is(err, errNoPeerUID) {
		return true
	}
	euid := os.Geteuid()
	if err == nil && uid == euid {
		return true
	}
	if now := time.Now().UnixNano(); now-f.peerLogged.Load() > int64(time.Second) {
		f.peerLogged.Store(now)
		if err != nil {
			f.log.Warn("refused an http connection: cannot tell its owner", "remote", ra.String(), "err", err)
		} else {
			f.log.Warn("refused an http connection from another user", "remote", ra.String(), "uid", uid, "daemon_uid", euid)
		}
	}
	return false
}
