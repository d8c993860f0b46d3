// Package errdefs sorts hive's errors into a few classes by what a caller
// can do about them, and keeps that class when an error crosses a
// process boundary (the daemon's socket, the holder's): the sending side
// puts Code(err) on the wire beside the text, the receiving side turns
// the two back into an error with FromWire, and errors.Is(err,
// errdefs.ErrNotFound) holds on both sides.
//
// An engine declares its sentinels in a class, as docker's errdefs does:
//
//	var ErrNotFound = errdefs.New(errdefs.ErrNotFound, "no such job")
//
// errors.Is(err, job.ErrNotFound) then holds in the daemon, and
// errors.Is(err, errdefs.ErrNotFound) wherever the error went.
package errdefs

import (
	"errors"
	"fmt"
)

// The classes. Each is also a sentinel: errors.Is(err, ErrNotFound)
// reports whether err is of that class.
var (
	// ErrNotFound: the thing asked for (a job, a session, a todo) is not known.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request clashes with the current state (a name in
	// use, a job not ended yet, already ended).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: a field of the request breaks a rule; the text names
	// the field and the rule.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable: a process the request needs does not answer or is
	// closing (the holder of the jobs, a daemon shutting down). Trying
	// again later may succeed.
	ErrUnavailable = errors.New("unavailable")
	// ErrLimit: a limit was reached (too many sessions, todos, bytes).
	ErrLimit = errors.New("limit reached")
	// ErrPolicy: the operator's command policy refuses the command
	// (internal/policy); the text names the rule and the part that matched.
	ErrPolicy = errors.New("refused by policy")
)

// The wire codes of the classes (Code, FromWire).
const (
	CodeNotFound    = "not_found"
	CodeConflict    = "conflict"
	CodeInvalid     = "invalid"
	CodeUnavailable = "unavailable"
	CodeLimit       = "limit"
	CodePolicy      = "policy"
)

var classes = []struct {
	code string
	err  error
}{
	{CodeNotFound, ErrNotFound},
	{CodeConflict, ErrConflict},
	{CodeInvalid, ErrInvalid},
	{CodeUnavailable, ErrUnavailable},
	{CodeLimit, ErrLimit},
	{CodePolicy, ErrPolicy},
}

// classed is an error of a class: it prints msg (or err's text), and is
// both its class and, if set, err.
type classed struct {
	class error
	msg   string
	err   error
}

func (e *classed) Error() string {
	if e.msg != "" || e.err == nil {
		return e.msg
	}
	return e.err.Error()
}

func (e *classed) Is(target error) bool { return target == e.class }

func (e *classed) Unwrap() error { return e.err }

// New returns an error whose text is msg and which is of class (one of
// the Err variables above): errors.Is(New(c, m), c) is true. Each call
// returns a distinct error, so a package can declare its sentinels with it.
func New(class error, msg string) error { return &classed{class: class, msg: msg} }

// Newf is New with fmt.Errorf's formatting: a %w verb keeps the wrapped
// error in the chain (errors.Is finds both it and class).
func Newf(class error, format string, a ...any) error {
	return &classed{class: class, err: fmt.Errorf(format, a...)}
}

// Wrap returns err, with its text and chain unchanged, marked as of
// class. Wrap(class, nil) is nil.
func Wrap(class error, err error) error {
	if err == nil {
		return nil
	}
	return &classed{class: class, err: err}
}

// Code returns the wire code of err's class, the outermost along its
// chain, or "" for an error of no class (and for nil).
func Code(err error) string {
	if err == nil {
		return ""
	}
	var ce *classed
	if errors.As(err, &ce) {
		err = ce.class
	}
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return ""
}

// FromWire returns the error a peer sent as its text msg and its code:
// it prints msg and is of the code's class. An empty or unknown code (an
// older peer's answer) gives a plain error with msg.
func FromWire(code, msg string) error {
	for _, c := range classes {
		if c.code == code {
			return New(c.err, msg)
		}
	}
	return errors.New(msg)
}
