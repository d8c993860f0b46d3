package main

import (
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// The test binary doubles as the hive binary (hivetest.Main): the bridge,
// the daemon it starts and the CLI are all real processes of this very
// code.
func TestMain(m *testing.M) {
	hivetest.Main(m, main)
}
