//go:build unix

package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readHello reads a connection's first line together with any file
// descriptors sent alongside it (SCM_RIGHTS: a bridge handing over its
// stdin and stdout). The returned reader continues after the line.
func readHello(c net.Conn) (line []byte, br *bufio.Reader, fds []int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		br = bufio.NewReaderSize(c, 64<<10)
		line, err = readLine(br)
		return line, br, nil, err
	}
	buf := make([]byte, 0, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, oobn, _, _, rerr := uc.ReadMsgUnix(buf[len(buf):cap(buf)], oob)
		if oobn > 0 {
			got, perr := parseRights(oob[:oobn])
			fds = append(fds, got...)
			if perr != nil {
				closeFDs(fds)
				return nil, nil, nil, perr
			}
		}
		if n > 0 { // on an error (a deadline, a closed connection) n may be -1
			buf = buf[:len(buf)+n]
		}
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			if i > maxRequestLine {
				closeFDs(fds)
				return nil, nil, nil, errRequestTooLong
			}
			rest := append([]byte(nil), buf[i+1:]...)
			br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(rest), c), 64<<10)
			return buf[:i+1], br, fds, nil
		}
		if len(buf) > maxRequestLine {
			closeFDs(fds)
			return nil, nil, nil, errRequestTooLong
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) && len(bytes.TrimSpace(buf)) > 0 {
				// A last line without a newline: the client half-closed.
				return buf, bufio.NewReader(c), fds, nil
			}
			closeFDs(fds)
			return nil, nil, nil, rerr
		}
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range got {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

// stdioFiles makes pollable files of a bridge's stdin and stdout.
func stdioFiles(fds []int) (in, out *os.File, err error) {
	if len(fds) != 2 {
		closeFDs(fds)
		return nil, nil, fmt.Errorf("stdio: want 2 file descriptors, got %d", len(fds))
	}
	for _, fd := range fds {
		if err := syscall.SetNonblock(fd, true); err != nil {
			closeFDs(fds)
			return nil, nil, fmt.Errorf("stdio: set non-blocking: %w", err)
		}
	}
	return os.NewFile(uintptr(fds[0]), "bridge-stdin"), os.NewFile(uintptr(fds[1]), "bridge-stdout"), nil
}
