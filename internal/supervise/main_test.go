package supervise_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, once the tests passed, that every goroutine they
// started (a holder's, its client's) has ended.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
