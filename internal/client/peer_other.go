//go:build !linux && !darwin && !freebsd

package client

import "net"

// PeerOf returns ErrNoPeerCred: this platform does not tell who is at
// the other end of a unix socket.
func PeerOf(c net.Conn) (Peer, error) { return Peer{}, ErrNoPeerCred }
