//go:build unix

package daemon

import (
	"log/slog"

	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/paths"
)

// HolderSocket is the holder's socket in a state directory.
func HolderSocket(l paths.Layout) string { return l.Dir + "/holder.sock" }

// openHolder connects to the state dir's holder, starting one with argv
// if none answers.
func openHolder(l paths.Layout, argv []string, build string, log *slog.Logger) (jobHolder, error) {
	return holder.Open(holder.ClientOptions{Socket: HolderSocket(l), Command: argv, Log: l.Log(), Build: build, Logger: log})
}
