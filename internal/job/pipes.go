package job

import (
	"fmt"
	"sync"
)

// makePipes makes a job's two output pipes (outputPipe).
func makePipes() (*jobPipes, error) {
	var err error
	p := &jobPipes{}
	if p.outR, p.outW, err = outputPipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = outputPipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return p, nil
}

// pipeSpare keeps one set of output pipes made ahead: a start takes it
// (take) and the next set is made once the job runs (refill), so the
// pipes' system calls (two pipe2, the read ends' change to non-blocking
// and their registration in the poller) are made while a job runs, not
// between a request and its fork, where they were a tenth of that step
// (bench/README, "Session 23"). The set is made with the manager, so a
// daemon's open descriptors count it from its start (reliability row 12).
// Its ends are close-on-exec, as every pipe's: no child inherits them.
type pipeSpare struct {
	mu     sync.Mutex
	set    *jobPipes
	closed bool
}

func newPipeSpare() *pipeSpare {
	s := &pipeSpare{}
	s.refill()
	return s
}

// empty reports whether no set is made ahead (a start took it) and one
// may be made.
func (s *pipeSpare) empty() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set == nil && !s.closed
}

// take returns the set made ahead, or a new one.
func (s *pipeSpare) take() (*jobPipes, error) {
	if s == nil {
		return makePipes()
	}
	s.mu.Lock()
	p := s.set
	s.set = nil
	s.mu.Unlock()
	if p != nil {
		return p, nil
	}
	return makePipes()
}

// refill makes the next set, if it is not made yet. A failure leaves it
// to the next start (take makes one then).
func (s *pipeSpare) refill() {
	if s == nil {
		return
	}
	s.mu.Lock()
	have := s.set != nil || s.closed
	s.mu.Unlock()
	if have {
		return
	}
	p, err := makePipes()
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.set == nil && !s.closed {
		s.set, p = p, nil
	}
	s.mu.Unlock()
	p.closeAll() // nil: nothing
}

// close closes the set made ahead; later takes make their own.
func (s *pipeSpare) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	p := s.set
	s.set, s.closed = nil, true
	s.mu.Unlock()
	p.closeAll()
}
