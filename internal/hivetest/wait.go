package hivetest

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// ErrTimeout is what Wait returns (wrapped, with the condition's last
// error) when the condition did not hold within the timeout.
var ErrTimeout = errors.New("timed out")

// The pause between two calls of a condition starts at firstPause and
// doubles up to maxPause: a condition that holds at once costs nothing,
// one that takes a while is polled at most 50 times a second.
const (
	firstPause = time.Millisecond
	maxPause   = 20 * time.Millisecond
)

// abortError marks an error that ends a Wait at once.
type abortError struct{ err error }

func (a *abortError) Error() string { return a.err.Error() }
func (a *abortError) Unwrap() error { return a.err }

// Abort wraps err so that a Wait or Eventually whose condition returns it
// stops polling at once and reports err (unwrapped): for a condition that
// can no longer come true, e.g. the process it waits on has exited.
// Abort(nil) is nil.
func Abort(err error) error {
	if err == nil {
		return nil
	}
	return &abortError{err}
}

// Wait calls cond until it returns nil, pausing between calls (1 ms,
// doubling to at most 20 ms). It returns nil once cond has returned nil;
// the error cond wrapped with Abort, as soon as it returns one; or, once
// timeout has passed since the first call, an error that wraps both
// ErrTimeout and cond's last error (errors.Is works for either). cond is
// called at least once, and once more at the deadline, whatever it costs.
//
// Wait does not touch a testing.TB: it is safe in any goroutine, and for
// a wait whose timeout a test does not treat as a failure.
func Wait(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if a := (*abortError)(nil); errors.As(err, &a) {
			if err == error(a) {
				return a.err
			}
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, err)
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, maxPause)
	}
}

// Eventually is Wait that fails the test: if cond does not return nil
// within timeout (or returns an Abort error) it calls tb.Fatalf with what
// (what is waited for, e.g. "the daemon to exit") and cond's last error.
// Like tb.Fatalf it must be called from the test's own goroutine.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func() error) {
	tb.Helper()
	if err := Wait(timeout, cond); err != nil {
		tb.Fatalf("waiting for %s: %v", what, err)
	}
}
