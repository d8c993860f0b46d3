//go:build unix && !linux

package holder

// canKeep: the holder keeps no job it did not start here (no pidfds to
// tell it their exits).
func canKeep() bool { return false }

func (s *server) welcome(sc *serverConn, pid int) {}

func (s *server) daemonWent(pid int) {}
