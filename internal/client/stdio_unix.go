//go:build unix

package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// ErrNoHandOff means stdio cannot be handed to the daemon (not pipes or
// sockets, or a daemon that does not take it): forward bytes instead.
var ErrNoHandOff = errors.New("stdio cannot be handed over")

// handOffable reports whether f is a pipe or a socket: the only kinds the
// daemon may switch to non-blocking mode without disturbing anyone else.
func handOffable(f *os.File) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	m := st.Mode & unix.S_IFMT
	return m == unix.S_IFIFO || m == unix.S_IFSOCK
}

// OpenStdio sends an mcp request with stdin and stdout attached
// (SCM_RIGHTS), so the daemon serves the session on them directly. The
// returned connection stays open while the session lives: the daemon
// closes it when the session ends, and a closed connection on this side
// ends the session.
func OpenStdio(l paths.Layout, req proto.Request, stdin, stdout *os.File) (*Conn, error) {
	if !handOffable(stdin) || !handOffable(stdout) {
		return nil, ErrNoHandOff
	}
	nc, err := Dial(l)
	if err != nil {
		return nil, err
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, ErrNoHandOff
	}
	req.Stdio = true
	b, _ := json.Marshal(req)
	rights := unix.UnixRights(int(stdin.Fd()), int(stdout.Fd()))
	uc.SetDeadline(time.Now().Add(ResponseTimeout))
	if _, _, err := uc.WriteMsgUnix(append(b, '\n'), rights, nil); err != nil {
		nc.Close()
		return nil, fmt.Errorf("send mcp request: %w", err)
	}
	c := &Conn{Conn: nc, r: newReader(nc)}
	resp, err := c.readResponse(req.Cmd)
	if err != nil {
		nc.Close()
		return nil, err
	}
	uc.SetDeadline(time.Time{}) // the session lives on
	if !resp.Stdio {
		nc.Close()
		return nil, ErrNoHandOff
	}
	return c, nil
}
