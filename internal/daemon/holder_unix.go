//go:build unix

package daemon

import (
	"log/slog"
	"os"
	"time"

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

// lostHolder reads the note the guard of a holder that died leaves
// (holder.ReadLost): reason gives its death as the error of a job the
// store records running that started before it (the holder held it, or
// the daemon did, and the daemon died first: then the holder's death
// ended it all the same); "" for others. forget removes the note once the
// records are made.
func lostHolder(l paths.Layout) (reason func(started time.Time) string, forget func()) {
	lost, ok := holder.ReadLost(l.Dir)
	if !ok {
		return nil, func() {}
	}
	return func(started time.Time) string {
			if started.After(lost.Died) {
				return ""
			}
			return lost.Reason()
		}, func() {
			os.Remove(holder.LostNote(l.Dir))
		}
}

// isGuard reports whether pid is the holder's guard (holder.IsGuard).
func isGuard(pid int) bool { return holder.IsGuard(pid) }
