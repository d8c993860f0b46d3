// Package wire is the format of the holder's socket (internal/holder):
// every value that crosses it, each way, as JSON. It depends on no
// engine, so that the engines (internal/job, internal/pty) can speak in
// its terms while the holder imports them.
//
// The protocol is one JSON object a line each way. The holder speaks
// first with its hello ({"hello":{"proto":N,"min":M,...}}); the daemon
// answers with its own. A daemon takes over a holder whose range of
// versions overlaps its own; otherwise it reports the holder as
// incompatible and leaves it (and its jobs) alone. New fields are
// optional; a new meaning gets a new version. An encoding never changes
// within a version: wire_test.go pins it.
package wire
