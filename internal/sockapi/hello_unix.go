//go:build unix

package sockapi

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readHello reads a connection's first line (readRequest) together with
// any file descriptors sent alongside it (SCM_RIGHTS: a bridge handing
// over its stdin and stdout). The returned reader continues after the
// line; the line is valid until br is read again.
func readHello(c net.Conn) (line []byte, br *bufio.Reader, fds []int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		br = bufio.NewReaderSize(c, 64<<10)
		line, err = readRequest(br)
		return line, br, nil, err
	}
	rr := &rightsReader{c: uc, oob: make([]byte, unix.CmsgSpace(4*4))}
	br = bufio.NewReaderSize(rr, 64<<10)
	line, err = readRequest(br)
	rr.plain = true // descriptors come with the first line only
	if err != nil {
		closeFDs(rr.fds)
		return nil, nil, nil, err
	}
	return line, br, rr.fds, nil
}

// rightsReader reads a unix connection and keeps the file descriptors
// that come with what it reads, until plain is set; then it reads plainly
// (the kernel closes descriptors sent later). A control message that
// cannot be parsed is a read error.
type rightsReader struct {
	c     *net.UnixConn
	oob   []byte
	fds   []int
	plain bool
}

func (r *rightsReader) Read(p []byte) (int, error) {
	if r.plain {
		return r.c.Read(p)
	}
	n, oobn, _, _, err := r.c.ReadMsgUnix(p, r.oob)
	if oobn > 0 {
		got, perr := parseRights(r.oob[:oobn])
		r.fds = append(r.fds, got...)
		if perr != nil {
			return 0, perr
		}
	}
	if n < 0 { // on an error (a deadline, a closed connection)
		n = 0
	}
	return n, err
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
