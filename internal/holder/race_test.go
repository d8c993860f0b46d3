//go:build race

package holder_test

// race: the tests run under the race detector (slow: some are skipped).
const race = true
