//go:build unix

package pty

import (
	"context"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Timing of SendReady.
const (
	// readySettle is how long the program must stay waiting for input,
	// with no new output, before SendReady believes it: the last output
	// it wrote may still be on its way through the terminal.
	readySettle = 5 * time.Millisecond
	// inputSettle is readySettle for a program that waits for input with
	// no prompt at the cursor (cat, a read with no prompt): nothing shows
	// its output is all there.
	inputSettle = 50 * time.Millisecond
	// promptSettle is readySettle when only the screen tells (a prompt at
	// the cursor) and the process state cannot be read.
	promptSettle = 20 * time.Millisecond
	// readyQuiet is the quiet after which SendReady gives up telling
	// whether the program waits for input and returns.
	readyQuiet = 100 * time.Millisecond
	// probeMax is the longest pause between two looks at the program.
	probeMax = 20 * time.Millisecond
	// setupMax bounds the wait of a session's first input for its
	// program to set up its terminal (see awaitSetup).
	setupMax = time.Second
)

// fgState is what the terminal's foreground program is doing.
type fgState int

const (
	fgUnknown fgState = iota // cannot tell: no /proc, or not allowed to look
	fgBusy                   // running, or waiting for something other than the terminal
	fgInput                  // blocked waiting for input from the terminal
)

// fgProbe is one look at the terminal's foreground process group.
type fgProbe struct {
	pid      int    // the group (its leader's pid), 0 if unknown
	switches uint64 // its leader's voluntary context switches, over its threads
	state    fgState
}

// probe looks at the terminal's foreground process group.
func (s *Session) probe() fgProbe {
	pg := 0
	if rc, err := s.master.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil {
				pg = v
			}
		})
	}
	if pg <= 0 {
		return fgProbe{}
	}
	return lookAtGroup(pg, s.tty)
}

// lookAtGroup is probeGroup; tests replace it to see SendReady without
// /proc.
var lookAtGroup = probeGroup

// outputPending tells whether output the program wrote is not yet in the
// stream: in the terminal (the master side has bytes to read) or in the
// reader's hands.
func (s *Session) outputPending() bool {
	if s.reading.Load() || s.heldPending() {
		return true
	}
	n := 0
	if rc, err := s.master.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			n, _ = unix.IoctlGetInt(int(fd), ioctlInQueue)
		})
	}
	return n > 0 || s.reading.Load()
}

// promptRE matches the text before the cursor that ends in a prompt:
// "$ ", "# ", "% ", "> " (">>> ", "sqlite> "), ": ", "? ", "(Pdb) ",
// "In [1]: ", "... " (a REPL's continuation), "❯ ", "» ".
var promptRE = regexp.MustCompile(`(?:[$#%>:?)\]❯»]|\.\.\.) ?$`)

// promptAtCursor tells whether the screen's cursor stands right after a
// prompt, with nothing after it on its line.
func (s *Session) promptAtCursor() bool {
	s.emuMu.Lock()
	defer s.emuMu.Unlock()
	s.feedLocked()
	pos := s.emu.CursorPosition()
	w := s.emu.Width()
	var b strings.Builder
	for x := 0; x < w; x++ {
		c := s.emu.CellAt(x, pos.Y)
		blank := c == nil || c.Content == "" || c.Content == " "
		if x >= pos.X {
			if !blank {
				return false
			}
			continue
		}
		switch {
		case c == nil, c.Content == "":
			if c == nil || !c.IsZero() {
				b.WriteByte(' ')
			}
		default:
			b.WriteString(c.Content)
		}
	}
	before := b.String()
	return strings.TrimSpace(before) != "" && promptRE.MatchString(before)
}

// SendReady sends input, then waits until the program is waiting for
// input again, and returns the output that arrived since the write (as
// SendWait does). The program waits for input when the terminal's
// foreground process is blocked reading the terminal (a read, select,
// poll or epoll on it, seen in /proc on Linux) after it woke up for the
// input, and stays so with no new output for a moment: readySettle when
// the screen shows a prompt at the cursor ("$ ", ">>> ", "(Pdb) "…),
// inputSettle otherwise. Where the process cannot be seen, a prompt at
// the cursor after some output (promptSettle) tells. A program that is
// busy (running, sleeping, writing, waiting for a child, a pipe or the
// network) is waited for, printing or not; when nothing tells, or the
// program did not wake for the input, readyQuiet of quiet ends the wait.
// It also returns once the process has exited and its output is read, or
// the output ends. The wait is bounded by ctx: when ctx ends first the
// result is still filled in and the error is ctx.Err().
func (s *Session) SendReady(ctx context.Context, input string) (ReadResult, error) {
	s.awaitSetup() // before the first look: the setup is not the input's answer
	from := s.stream.Stats().Total
	before := s.probe()
	if err := s.Send(input); err != nil {
		return ReadResult{}, err
	}
	w := waiter{s: s, res: ReadResult{Offset: from, Next: from}, next: from, startsLine: s.lineStartAt(from)}

	lastSign := time.Now() // the last output, or the last look that saw the program busy
	var cand fgProbe       // the look that found the program ready, while candAt is set
	var candAt time.Time
	step := time.Millisecond
	timer := time.NewTimer(step)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			w.catchUp()
			return w.result(), ctx.Err()
		}
		grew, err := w.catchUp()
		if err != nil {
			return w.result(), err
		}
		if w.res.EOF {
			return w.result(), nil
		}
		now := time.Now()
		p := s.probe()
		pending := s.outputPending()
		if pending {
			// Still printing, or done but its output is not all read:
			// not ready, and not quiet.
			p.state = fgBusy
		}
		if grew || p.state == fgBusy {
			lastSign = now
		}
		printed := w.res.Next > from
		ready, settle := false, readySettle
		select {
		case <-s.exited:
			// No input is wanted any more; what it printed is read.
			ready = !pending
		default:
			switch p.state {
			case fgInput:
				// It woke up since the write: the input was read, not
				// still on its way to a program asleep on the terminal.
				ready = p.pid != before.pid || p.switches != before.switches
				if !printed || !s.promptAtCursor() {
					// Its last output may still be on its way.
					settle = inputSettle
				}
			case fgUnknown:
				// The echo (at least) came back and a prompt waits.
				ready, settle = printed && s.promptAtCursor(), promptSettle
			}
		}
		if !ready && p.state != fgBusy && now.Sub(lastSign) >= readyQuiet {
			// Nothing tells, or the program did not wake for the input
			// (half a line to a program reading whole lines).
			return w.result(), nil
		}
		next := step
		switch {
		case !ready:
			candAt = time.Time{}
			step = min(2*step, probeMax)
		case candAt.IsZero() || cand != p || grew:
			cand, candAt = p, now
			next = settle
		case now.Sub(candAt) >= settle:
			return w.result(), nil
		default:
			next = settle - now.Sub(candAt)
		}
		timer.Reset(next)
	}
}

// awaitSetup waits, before the session's first input, until its program
// has set up its terminal: it left the line mode the terminal starts in
// (a shell's line editor, a REPL, a full-screen program turn echo or
// canonical input off before their prompt), or it waits for input from
// the terminal (cat, a read), or it ended. Input written before that is
// echoed by the terminal itself, ahead of the program's prompt, and the
// line editor then echoes it again. The wait is bounded by setupMax (a
// program busy at first, or one where nothing tells, gets its input
// then); later inputs do not wait.
func (s *Session) awaitSetup() {
	if s.setUp.Load() {
		return
	}
	defer s.setUp.Store(true)
	bound := time.NewTimer(setupMax)
	defer bound.Stop()
	step := time.Millisecond
	for {
		if cooked, ok := lineMode(s.master); ok && !cooked {
			return
		}
		if s.probe().state == fgInput && !s.outputPending() {
			return
		}
		t := time.NewTimer(step)
		select {
		case <-s.exited:
		case <-s.closing:
		case <-bound.C:
		case <-t.C:
			step = min(2*step, probeMax)
			continue
		}
		t.Stop()
		return
	}
}
