package client

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PeerOf returns the credentials of the other end of c (SO_PEERCRED),
// or ErrNoPeerCred if c is not a unix socket connection.
func PeerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, ErrNoPeerCred
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return Peer{}, fmt.Errorf("peer credentials (SO_PEERCRED): %w", cerr)
	}
	return Peer{UID: int(cred.Uid), PID: int(cred.Pid)}, nil
}
