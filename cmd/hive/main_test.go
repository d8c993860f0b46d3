package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/hivetest"
)

// The test binary doubles as the hive binary (hivetest.Main): the bridge,
// the daemon it starts and the CLI are all real processes of this very
// code. Once they passed, every goroutine they started has ended (the
// bridge's, the daemons' and the CLI's run in processes of their own:
// this checks the harness and the MCP client).
func TestMain(m *testing.M) {
	hivetest.Main(m, main, func() error { return goleak.Find() })
}
