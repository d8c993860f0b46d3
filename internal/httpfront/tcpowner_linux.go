package httpfront

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// errNoPeerUID: the platform cannot tell who owns a TCP peer.
var errNoPeerUID = errors.New("socket owners are not listed here")

// errNoOwner is a connection whose peer socket the kernel does not list
// (it closed already).
var errNoOwner = errors.New("peer socket not found in /proc/net/tcp{,6}")

// tcpPeerUID is the uid owning the other end of a loopback TCP connection
// c: the kernel lists every socket with its owner in /proc/net/tcp and
// /proc/net/tcp6, and the peer's socket is the one whose local address is
// c's remote address and whose remote address is c's local one.
func tcpPeerUID(c net.Conn) (int, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("not a TCP connection: %T", c.LocalAddr())
	}
	missing := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, err := findSocketOwner(file, remote, local)
		switch {
		case err == nil:
			return uid, nil
		case errors.Is(err, os.ErrNotExist):
			missing++
		case !errors.Is(err, errNoOwner):
			return 0, err
		}
	}
	if missing == 2 {
		return 0, errNoPeerUID // no /proc here
	}
	return 0, errNoOwner
}

// findSocketOwner scans one /proc/net/tcp* file for the socket with
// local address l and remote address r, and returns its uid.
func findSocketOwner(file string, l, r *net.TCPAddr) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		if !procAddrIs(fs[1], l) || !procAddrIs(fs[2], r) {
			continue
		}
		uid, err := strconv.Atoi(fs[7])
		if err != nil {
			return 0, fmt.Errorf("%s: uid %q: %w", file, fs[7], err)
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", file, err)
	}
	return 0, errNoOwner
}

// procAddrIs reports whether a /proc/net/tcp address ("0100007F:1F90":
// the IP as 32-bit words in host byte order, the port in hex) is a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
