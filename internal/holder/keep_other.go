//go:build unix && !linux

package holder

import "net"

// canKeep: the holder keeps no job it did not start here (no pidfds to
// tell it their exits).
func canKeep() bool { return false }

func (s *server) welcome(sc *serverConn, pid int) {}

func (s *server) daemonWent(pid int) {}

// peerHungUp is told by poll's POLLRDHUP on Linux; here the holder's
// process says whether it is gone (HolderGone).
func peerHungUp(conn net.Conn) bool { return false }
