//go:build unix

package cli

import (
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// dropSignals's stop returns once its goroutine has ended.
func TestDropSignalsStops(t *testing.T) {
	before := goleak.IgnoreCurrent()
	// A SIGHUP to this process is caught by seen as well, so it never
	// takes its default action (the end of the test process).
	seen := make(chan os.Signal, 1)
	signal.Notify(seen, syscall.SIGHUP)
	stop := dropSignals(syscall.SIGHUP)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	<-seen
	stop()
	signal.Stop(seen)
	goleak.VerifyNone(t, before)
}
