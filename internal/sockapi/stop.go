package sockapi

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/proto"
)

// serveStop answers a stop request: an error if it is malformed, or if
// the daemon refuses it (Daemon.Stop: a busy daemon asked to stop if
// idle); else OK at once, and stop ends Serve. It keeps the connection:
// AnswerStopped answers it again (one more OK line) once the daemon has
// stopped.
func (s *Server) serveStop(c net.Conn, req proto.Request, stop func()) (kept bool) {
	g := req.GraceSecs
	if g < 0 || g > 1e6 || g != g {
		writeResp(c, proto.Fail(errdefs.Newf(errdefs.ErrInvalid, "grace_secs %v: must be 0..1e6 (0: the daemon's --grace)", g)))
		return false
	}
	grace := time.Duration(g * float64(time.Second))
	if err := s.d.Stop(StopRequest{Grace: grace, IfIdle: req.IfIdle, KeepJobs: req.KeepJobs}); err != nil {
		resp := proto.Fail(err)
		if busy, ok := errors.AsType[*BusyError](err); ok {
			resp.Activity = &busy.Activity
		}
		writeResp(c, resp)
		return false
	}
	if err := writeResp(c, proto.Response{OK: true, PID: os.Getpid()}); err != nil {
		return false
	}
	s.mu.Lock()
	s.stopWaiters = append(s.stopWaiters, c)
	s.mu.Unlock()
	s.log.Info("stop requested", "grace", grace)
	stop()
	return true
}

// AnswerStopped tells every stop request's connection that the daemon has
// stopped, and closes it. The daemon calls it last, once another daemon
// may take the state dir.
func (s *Server) AnswerStopped() {
	s.mu.Lock()
	ws := s.stopWaiters
	s.stopWaiters = nil
	s.mu.Unlock()
	for _, c := range ws {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeResp(c, proto.Response{OK: true, PID: os.Getpid()})
		c.Close()
	}
}
