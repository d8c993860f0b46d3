package client

import "errors"

// ErrNoPeerCred means the platform (or the connection) cannot tell who is
// at the other end.
var ErrNoPeerCred = errors.New("peer credentials are not available")

// Peer is who is at the other end of a unix socket connection: for a
// client, the process that listens; for a server, the one that connected.
type Peer struct {
	UID int
	PID int // 0 where the platform does not say
}
