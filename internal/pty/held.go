package pty

import (
	"os"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
)

// A Holder runs sessions' processes for a Manager in a process that
// outlives the daemon (internal/holder). The holder is the process's
// parent, holds the pty's master side and copies the output into the
// session's file; the daemon holds a duplicate of the master (input,
// resize, the foreground group), follows the file and keeps the screen.
// A daemon that comes after replays the file into a new screen.
type Holder interface {
	SpawnPTY(wire.PTYSpec) (wire.PTYSession, error)
	// MasterPTY returns a duplicate of a held session's master side.
	MasterPTY(id string) (*os.File, error)
	// ClosePTY closes the holder's master once the process has exited,
	// and returns once the holder has the last output in the file, with
	// its count.
	ClosePTY(id string) (output.Stats, error)
	// AckPTY: the session's end is recorded; the holder forgets it.
	AckPTY(id string) error
	// HeldPTYs lists the sessions the holder holds.
	HeldPTYs() ([]wire.PTYSession, error)
}

// PTYSink hears a holder's events about sessions: see Manager.
type PTYSink interface {
	PTYProgress(id string, at output.Stats)
	PTYExited(id string, code int)
	PTYHolderLost()
}
