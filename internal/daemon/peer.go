package daemon

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/hivetools/hive/internal/client"
)

// peerAllowed reports whether the process that connected c runs as the
// daemon's effective uid, and logs a refusal. The socket's 0600 mode in
// a 0700 dir already keeps other users out; this is the second lock.
// Where the platform cannot tell (client.ErrNoPeerCred), every peer is
// allowed.
func (d *daemon) peerAllowed(c net.Conn) bool {
	p, err := client.PeerOf(c)
	if errors.Is(err, client.ErrNoPeerCred) {
		return true
	}
	if err != nil {
		d.log.Warn("refused a connection: cannot read its credentials", "err", err)
		return false
	}
	if euid := os.Geteuid(); p.UID != euid {
		d.log.Warn("refused a connection from another user", "uid", p.UID, "pid", p.PID, "daemon_uid", euid)
		return false
	}
	return true
}

// loopbackPeerAllowed reports whether a TCP connection may be served: one
// from a loopback address must come from a socket of the daemon's own uid
// (on Linux, where the kernel lists socket owners). A token, a login code
// or a session cookie that leaked to another local user (a process
// command line, a browser that sends cookies to every port of a host) is
// then of no use to that user. Refusals are logged at most once a second.
func (d *daemon) loopbackPeerAllowed(c net.Conn) bool {
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
	if now := time.Now().UnixNano(); now-d.peerLogged.Load() > int64(time.Second) {
		d.peerLogged.Store(now)
		if err != nil {
			d.log.Warn("refused an http connection: cannot tell its owner", "remote", ra.String(), "err", err)
		} else {
			d.log.Warn("refused an http connection from another user", "remote", ra.String(), "uid", uid, "daemon_uid", euid)
		}
	}
	return false
}
