package holder

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/hivetest"
)

// TestMain runs the test binary as a holder process when a test asks for
// one (serveIfAsked, unix); else the tests, with a hive built on first use
// (the engine benchmark, hivetest.Main's build mode) and, once they
// passed, a check that every goroutine they started has ended.
func TestMain(m *testing.M) {
	guardIfAsked()
	serveIfAsked()
	keeperIfAsked()
	hivetest.Main(m, nil, func() error { return goleak.Find() })
}
