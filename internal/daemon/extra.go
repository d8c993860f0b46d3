package daemon

// registerExtra wires the engines beyond jobs and the inbox (terminal
// tools, PTYs, search) into the tools' Deps. It returns their closers.
func registerExtra(d *daemon) []func() { return nil }
