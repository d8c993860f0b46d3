// Package lineio reads newline-terminated lines of a bounded length from
// a *bufio.Reader: the framing of hive's socket protocols (the daemon's
// socket, the MCP line transport, the holder's socket), where one line is
// one message and a peer must not make the reader hold more than a limit.
//
// A line is counted with its '\n'. Memory stays within the limit plus
// the reader's buffer, whatever the peer sends.
package lineio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// TooLongError is a line longer than Limit bytes.
type TooLongError struct{ Limit int }

func (e *TooLongError) Error() string { return fmt.Sprintf("line longer than %d bytes", e.Limit) }

// Read reads one line, up to and including the next '\n', of at most max
// bytes. As with bufio.Reader.ReadBytes, err is nil if and only if the
// line ends in '\n': at the end of input, a last line without one comes
// with io.EOF (and is empty when there was nothing left); after another
// read error, what was read of the line comes with the error.
//
// A line longer than max gives a *TooLongError as soon as more than max
// bytes are read; the rest of it is left unread (for a peer that is
// answered and let go; see ReadSkip for one that reads on).
//
// The line may point into r's buffer: it is valid until the next read
// from r.
func Read(r *bufio.Reader, max int) ([]byte, error) {
	line, _, err := read(r, max)
	return line, err
}

// ReadSkip is Read for a reader that goes on to the next line after a
// line longer than max: it reads that line through its end, keeping
// none of it, before it returns the *TooLongError. A read error while it
// skips (other than the end of input, which the next call returns) comes
// instead of the *TooLongError.
func ReadSkip(r *bufio.Reader, max int) ([]byte, error) {
	line, ended, err := read(r, max)
	if _, long := err.(*TooLongError); !long || ended {
		return line, err
	}
	for {
		_, serr := r.ReadSlice('\n')
		switch {
		case serr == nil:
			return nil, err
		case errors.Is(serr, bufio.ErrBufferFull):
			continue
		case errors.Is(serr, io.EOF):
			return nil, err
		default:
			return nil, serr
		}
	}
}

// read is Read; ended tells, with a *TooLongError, whether the line was
// read through its end ('\n' or the end of input) already.
func read(r *bufio.Reader, max int) (line []byte, ended bool, err error) {
	part, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		// The common case: the whole line was in the buffer; no copy.
		if len(part) > max {
			return nil, err == nil || errors.Is(err, io.EOF), &TooLongError{max}
		}
		return part, false, err
	}
	line = append([]byte(nil), part...) // part is overwritten by the next read
	for {
		if len(line) > max {
			return nil, false, &TooLongError{max}
		}
		part, err = r.ReadSlice('\n')
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > max {
				return nil, err == nil || errors.Is(err, io.EOF), &TooLongError{max}
			}
			return line, false, err
		}
	}
}
