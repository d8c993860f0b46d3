package pty

import (
	"fmt"

	"github.com/hivetools/hive/internal/output"
)

// chunkReader reads raw output at an offset: a live session's stream, or
// the file of one that ended (see ReadEnded).
type chunkReader func(off int64, max int) (output.Chunk, error)

// readText is Read on raw output from read (see Session.Read); it leaves
// Running and ExitCode to the caller. Bad arguments give ErrInvalid.
func readText(read chunkReader, since int64, raw bool, maxBytes int) (ReadResult, error) {
	if since < 0 {
		return ReadResult{}, fmt.Errorf("since_offset %d: must be >= 0: %w", since, ErrInvalid)
	}
	if maxBytes < 0 {
		return ReadResult{}, fmt.Errorf("max_bytes %d: must be >= 0: %w", maxBytes, ErrInvalid)
	}
	if maxBytes == 0 {
		maxBytes = DefaultReadBytes
	}
	c, err := read(since, maxBytes)
	if err != nil {
		return ReadResult{}, err
	}
	r := ReadResult{Offset: c.Offset, Next: c.Next, Skipped: c.Skipped, EOF: c.EOF}
	if raw {
		r.Data = string(c.Data)
		return r, nil
	}
	// A chunk that is all one unfinished sequence as long as the limit
	// would never move on: take it as final.
	lineStart := lineStartAt(read, c.Offset)
	text, used := strip(c.Data, c.EOF, lineStart)
	if used == 0 && len(c.Data) == maxBytes {
		text, used = strip(c.Data, true, lineStart)
	}
	r.Data = string(text)
	r.Next = c.Offset + int64(used)
	r.EOF = c.EOF && used == len(c.Data)
	return r, nil
}

// lineStartAt tells whether the text before offset off ends a line: it
// strips a few bytes before off.
func lineStartAt(read chunkReader, off int64) bool {
	if off <= 0 {
		return true
	}
	from := max(off-64, 0)
	c, err := read(from, int(off-from))
	if err != nil || c.Offset != from {
		return true
	}
	t, _ := strip(c.Data, true, true)
	return len(t) == 0 || t[len(t)-1] == '\n'
}
