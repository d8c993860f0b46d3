//go:build !linux

package httpfront

import (
	"errors"
	"net"
)

// tcpPeerUID: only Linux lists socket owners (/proc/net/tcp).
func tcpPeerUID(c net.Conn) (int, error) { return 0, errNoPeerUID }

var errNoPeerUID = errors.New("socket owners are not listed here")
