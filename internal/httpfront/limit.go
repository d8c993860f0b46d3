package httpfront

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener accepts at most cap connections at once. At the cap it
// stops calling Accept, so further connections wait in the kernel's
// backlog and cost the daemon no file descriptor; each Close of an
// accepted connection (the first one; later ones are no-ops for the
// count) makes room for one more. Close of the listener ends a pending
// Accept. Safe for concurrent use.
type limitListener struct {
	net.Listener
	sem       chan struct{} // one token per accepted connection still open
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	// admit, if set, decides on each accepted connection before it is
	// served (set before the first Accept).
	admit func(net.Conn) bool
}

func newLimitListener(ln net.Listener, cap int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, cap), done: make(chan struct{})}
}

// Accept waits for room under the cap, then for a connection that admit
// (if set) lets in; the others are closed at once.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		if l.admit == nil || l.admit(c) {
			return &limitConn{Conn: c, l: l}, nil
		}
		c.Close()
	}
}

// Close closes the listener and ends a pending Accept.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// open is the number of accepted connections not yet closed.
func (l *limitListener) open() int { return len(l.sem) }

// limitConn gives its listener's slot back on its first Close.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.l.sem })
	return err
}

// CloseWrite half-closes a TCP connection: net/http uses it to let the
// client read a response before the connection is closed.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// httpDeadlineWriter gives every write to an HTTP client its own deadline:
// a client that stops reading for timeout loses its response or stream
// (the write fails and the connection is closed), while a response that
// is slow to start, such as a long tool call's, is never cut. It keeps
// Flush and Unwrap so http.ResponseController and SSE flushing work
// through it.
type httpDeadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController // of the wrapped writer
	timeout time.Duration
}

func newHTTPDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *httpDeadlineWriter {
	return &httpDeadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

// arm sets the deadline of the next write.
func (w *httpDeadlineWriter) arm() { w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *httpDeadlineWriter) WriteHeader(code int) {
	w.arm()
	w.ResponseWriter.WriteHeader(code)
}

func (w *httpDeadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (w *httpDeadlineWriter) Flush() { w.FlushError() }

// FlushError is the Flush http.ResponseController uses: it reports the error.
func (w *httpDeadlineWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Unwrap gives http.ResponseController the wrapped writer.
func (w *httpDeadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
