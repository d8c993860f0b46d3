package client

import (
	"errors"
	"os"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proto"
)

// ErrNoHandOff means stdio cannot be handed to the daemon: forward bytes.
var ErrNoHandOff = errors.New("stdio cannot be handed over")

// OpenStdio is not available on Windows.
func OpenStdio(l paths.Layout, req proto.Request, stdin, stdout *os.File) (*Conn, error) {
	return nil, ErrNoHandOff
}
