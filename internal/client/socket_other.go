//go:build !unix

package client

import "github.com/hivetools/hive/internal/paths"

// checkSocket has nothing to check here: who may connect is the state
// dir's ACLs' business, and the dial itself reports a missing socket.
func checkSocket(l paths.Layout) error { return nil }
