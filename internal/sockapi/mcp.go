package sockapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/mcpline"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/tools"
)

// rwc joins the buffered reader of a connection with the connection.
type rwc struct {
	*bufio.Reader
	c net.Conn
}

func (r rwc) Close() error { return r.c.Close() }

// serveMCP serves one MCP session. With fds (a bridge's stdin and
// stdout, handed over with the request) the session runs on them directly
// and the connection only tells whether the bridge is still there: no
// bytes are copied through the bridge. Without, MCP runs over the
// connection itself.
//
// When a stdio session ends, the daemon says why on the connection (one
// Response line: OK when the client closed its input, else the reason)
// before it closes it, so the bridge can tell its user.
func (s *Server) serveMCP(ctx context.Context, c net.Conn, br *bufio.Reader, req proto.Request, fds []int) {
	sess := &tools.Session{Cwd: req.Cwd, Env: req.Env, ID: fmt.Sprintf("unix-%d", s.mcpSeq.Add(1)), Answers: req.Answers}
	srv, stop, err := tools.NewServer(s.svc, sess, req.Groups)
	if err != nil {
		closeFDs(fds)
		writeResp(c, proto.Fail(err))
		return
	}
	defer stop()
	lt := &mcpline.Transport{Reader: rwc{br, c}, Writer: deadlineWriter{c}, MaxLine: s.maxLine}
	var stdin, stdout *os.File
	if req.Stdio {
		if stdin, stdout, err = stdioFiles(fds); err != nil {
			writeResp(c, proto.Fail(err))
			return
		}
		defer stdin.Close()
		defer stdout.Close()
		lt = &mcpline.Transport{Reader: stdin, Writer: deadlineWriter{stdout}, MaxLine: s.maxLine}
	}
	if err := writeResp(c, proto.Response{OK: true, Version: s.svc.Version, PID: os.Getpid(), Stdio: req.Stdio}); err != nil {
		return
	}
	if d := tools.DirectOf(srv); d != nil && !s.noDirect.Load() {
		lt.Direct = d
	}
	// Counted before it connects: once connected it reads and answers
	// (initialize) at once, and whoever got an answer finds it counted.
	s.mcpSessions.Add(1)
	defer s.mcpSessions.Add(-1)
	ss, err := srv.Connect(ctx, lt, nil)
	if err != nil {
		s.log.Error("mcp connect", "err", err)
		return
	}
	lt.SetSession(ss)
	if f := s.onMCP.Load(); f != nil {
		(*f)(lt)
	}
	defer lt.WaitDirect()
	s.log.Info("mcp session open", "session", sess.ID, "cwd", sess.Cwd, "groups", req.Groups, "stdio", req.Stdio)
	// The daemon stopping ends the session (and says so).
	ended := make(chan struct{})
	go func() {
		select {
		case <-s.stopping:
			ss.Close()
		case <-ended:
		}
	}()
	if req.Stdio {
		// The bridge holds the connection open while it lives; when it
		// goes, so does the session. When the session ends first, the
		// goodbye line and the closed connection tell the bridge to exit.
		gone := make(chan struct{})
		var left atomic.Bool
		go func() {
			io.Copy(io.Discard, br)
			left.Store(true)
			ss.Close()
			close(gone)
		}()
		ss.Wait()
		close(ended)
		bridgeGone := left.Load()
		reason := s.endReason(lt)
		if !bridgeGone {
			resp := proto.Response{OK: reason == nil}
			if reason != nil {
				resp.Error = "the daemon ended the session: " + reason.Error()
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			writeResp(c, resp)
		}
		c.Close()
		<-gone
		s.logEnd(sess.ID, reason, bridgeGone)
		return
	}
	ss.Wait()
	close(ended)
	s.logEnd(sess.ID, s.endReason(lt), false)
}

// endReason says why a session's transport ended: nil for the client's
// end of input.
func (s *Server) endReason(lt *mcpline.Transport) error {
	select {
	case <-s.stopping:
		return errors.New("the daemon is stopping")
	default:
	}
	return lt.EndReason()
}

func (s *Server) logEnd(id string, reason error, bridgeGone bool) {
	switch {
	case bridgeGone:
		s.log.Info("mcp session closed", "session", id, "reason", "the bridge went away")
	case reason == nil:
		s.log.Info("mcp session closed", "session", id, "reason", "end of input")
	default:
		s.log.Warn("mcp session closed", "session", id, "reason", reason.Error())
	}
}
