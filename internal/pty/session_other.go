//go:build !unix

package pty

import (
	"context"
	"regexp"
	"runtime"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/supervise"
)

// Session is one process on a pseudo-terminal. On this platform none can
// be opened; the methods exist so that callers compile.
type Session struct {
	id, name string
}

func start(*Manager, string, OpenOptions) (*Session, error) {
	return nil, unsupportedError{}
}

// unsupportedError names the platform and wraps ErrUnsupported.
type unsupportedError struct{}

func (unsupportedError) Error() string {
	if runtime.GOOS == "windows" {
		return "PTY sessions are unsupported on Windows"
	}
	return "PTY sessions are unsupported on " + runtime.GOOS
}

func (unsupportedError) Unwrap() error { return ErrUnsupported }

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Exited returns a channel closed once the session's process has exited.
func (s *Session) Exited() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Info describes the session.
func (s *Session) Info() Info { return Info{ID: s.id, Name: s.name} }

// Send fails with ErrUnsupported.
func (s *Session) Send(string) error { return ErrUnsupported }

// SendWait fails with ErrUnsupported.
func (s *Session) SendWait(context.Context, string, time.Duration, *regexp.Regexp) (ReadResult, error) {
	return ReadResult{}, ErrUnsupported
}

// SendReady fails with ErrUnsupported.
func (s *Session) SendReady(context.Context, string) (ReadResult, error) {
	return ReadResult{}, ErrUnsupported
}

// Read fails with ErrUnsupported.
func (s *Session) Read(int64, bool, int) (ReadResult, error) { return ReadResult{}, ErrUnsupported }

// Screen returns an empty screen.
func (s *Session) Screen() Screen { return Screen{} }

// Resize fails with ErrUnsupported.
func (s *Session) Resize(int, int) error { return ErrUnsupported }

// Close does nothing.
func (s *Session) Close() error { return nil }

func (s *Session) end(string) error { return nil }

// newSupervisor: no holder of sessions on this platform.
func newSupervisor(*Manager) *supervise.Core[*Session, wire.PTYSession, int] { return nil }

// adoptHeld: no holder of sessions on this platform.
func (m *Manager) adoptHeld(recs []store.PTY) []store.PTY { return recs }

// Release is Close here: no holder keeps sessions on this platform.
func (m *Manager) Release() error { return m.Close() }

// PTYProgress, PTYExited and PTYHolderLost: no holder here (PTYSink).
func (m *Manager) PTYProgress(id string, at output.Stats) {}
func (m *Manager) PTYExited(id string, code int)          {}
func (m *Manager) PTYHolderLost()                         {}
