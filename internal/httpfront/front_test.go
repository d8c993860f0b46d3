package httpfront

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

func TestBearer(t *testing.T) {
	tests := []struct {
		values []string
		tok    string
		ok     bool
	}{
		{[]string{"Bearer abc"}, "abc", true},
		{[]string{"bearer abc"}, "abc", true},
		{[]string{"BEARER abc"}, "abc", true},
		{[]string{"Bearer   abc"}, "abc", true},
		{nil, "", false},
		{[]string{"abc"}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Bearer abc def"}, "", false},
		{[]string{"Bearer abc\tdef"}, "", false},
		{[]string{"Basic abc"}, "", false},
		{[]string{"Bearerabc"}, "", false},
		{[]string{"Bearer abc", "Bearer abc"}, "", false},
	}
	for _, tt := range tests {
		tok, ok := bearer(tt.values)
		if tok != tt.tok || ok != tt.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", tt.values, tok, ok, tt.tok, tt.ok)
		}
	}
}

// The listener accepts at most its cap of connections; closing one (even
// twice) makes room for exactly one more, and Close ends an Accept that
// waits at the cap.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 2)
	defer ln.Close()
	for range 4 { // all wait in the kernel's backlog until accepted
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	accept := func() net.Conn {
		t.Helper()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first, second := accept(), accept()
	if n := ln.open(); n != 2 {
		t.Fatalf("open %d, want 2", n)
	}
	first.Close()
	first.Close() // a second Close must not free a second slot
	if n := ln.open(); n != 1 {
		t.Fatalf("open %d after closing one connection twice, want 1", n)
	}
	third := accept()
	defer second.Close()
	defer third.Close()
	if n := ln.open(); n != 2 {
		t.Errorf("open %d, want 2", n)
	}
	// At the cap, Accept waits (a connection is pending) until Close.
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
			err = fmt.Errorf("accepted %v past the cap", c.RemoteAddr())
		}
		got <- err
	}()
	ln.Close()
	if err := <-got; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept at the cap, then Close: %v, want net.ErrClosed", err)
	}
}

// Each write has its own deadline: a client that stops reading makes a
// write fail after the timeout, while a handler that is silent for longer
// than the timeout before answering is not cut.
func TestHTTPDeadlineWriter(t *testing.T) {
	const timeout = 200 * time.Millisecond
	writeErr := make(chan error, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := newHTTPDeadlineWriter(w, timeout)
		if r.URL.Path == "/slow-start" {
			<-time.After(3 * timeout) // a long tool call
			fmt.Fprint(dw, "done")
			return
		}
		chunk := make([]byte, 64<<10)
		for {
			if _, err := dw.Write(chunk); err != nil {
				writeErr <- err
				return
			}
			if err := http.NewResponseController(dw).Flush(); err != nil {
				writeErr <- err
				return
			}
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	defer func() { srv.Close(); <-served }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/slow-start")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "done" {
		t.Errorf("slow start: %q %v, want the whole answer", b, err)
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
	bufio.NewReader(c).Peek(1) // the stream started; now read no more
	select {
	case err := <-writeErr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write to a client that stopped reading: %v, want a deadline error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a write to a client that stopped reading never failed")
	}
}
