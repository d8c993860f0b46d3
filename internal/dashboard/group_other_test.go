//go:build !unix

package dashboard_test

import "github.com/hivetools/hive/internal/hivetest"

// processGone reports whether the job's leader pgid has ended: there are
// no process groups here to ask about the rest of its tree.
func processGone(pgid int) bool {
	return !hivetest.Alive(pgid)
}
