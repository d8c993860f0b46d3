//go:build unix && !linux

package holder

import "net"

// checkPeer: the socket's mode (0600 in a 0700 directory) is the check here.
func checkPeer(c net.Conn) error { return nil }
