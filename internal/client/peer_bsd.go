//go:build darwin || freebsd

package client

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerOf returns the credentials of the other end of c (LOCAL_PEERCRED;
// no pid), or ErrNoPeerCred if c is not a unix socket connection.
func PeerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, ErrNoPeerCred
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Xucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("peer credentials (LOCAL_PEERCRED): %w", cerr)
	}
	return Peer{UID: int(cred.Uid)}, nil
}
