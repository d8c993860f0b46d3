package sockapi

import (
	"bufio"
	"errors"
	"net"
	"os"
)

func readHello(c net.Conn) ([]byte, *bufio.Reader, []int, error) {
	br := bufio.NewReaderSize(c, 64<<10)
	line, err := readRequest(br)
	return line, br, nil, err
}

func closeFDs(fds []int) {}

func stdioFiles(fds []int) (*os.File, *os.File, error) {
	return nil, nil, errors.New("stdio: handing over file descriptors is not supported on Windows")
}
