//go:build !unix

package holder

// serveIfAsked: no holder process runs on this platform.
func serveIfAsked() {}

// guardIfAsked: no guard runs on this platform.
func guardIfAsked() {}
