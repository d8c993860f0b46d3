//go:build !unix

package holder

// serveIfAsked: no holder process runs on this platform.
func serveIfAsked() {}
