//go:build unix

package reliability

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hivetools/hive/internal/hivetest"
)

// Row 15: text from elsewhere (a job's command and output, a message from
// chat) reaches the operator's terminal escaped: no `hive ps -a`,
// `todo ls`, `inbox ls`, `inbox next` or error line holds an ESC, BEL or
// C1 byte, and `hive logs` escapes them on a terminal by default (colours
// pass) while a pipe gets the bytes as they are.
func TestRow15EscapesNeverReachTheTerminal(t *testing.T) {
	dir := newStateDir(t)
	startDaemon(t, dir)
	const title = "\x1b]0;PWNED\a"              // sets the window's title
	const clip = "\x1b]52;c;cm0gLXJmIH4=\x1b\\" // writes the clipboard
	const c1 = "\u009b2J"                       // clears the screen, as a C1 CSI
	const colour = "\x1b[31mred\x1b[0m"
	run := func(stdin string, args ...string) (stdout, stderr string, err error) {
		cmd := hivetest.Command(t, dir, args...)
		var o, e bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}
	// A message from chat, a job whose command and output carry the
	// sequences (its end is a loose end, its summary the output's tail).
	if _, e, err := run(title+clip+c1+" hello", "wake", "--from", "chat"); err != nil {
		t.Fatalf("wake: %v %s", err, e)
	}
	cmd := fmt.Sprintf("printf '%%s' '%s%s%s'; echo; printf '%s\\n'", title, clip, c1, colour)
	id, e, err := run("", "run", "--notify", "--name", "esc", "--", cmd)
	if err != nil {
		t.Fatalf("run: %v %s", err, e)
	}
	id = strings.TrimSpace(id)
	if _, e, err := run("", "wait", id); err != nil {
		t.Fatalf("wait: %v %s", err, e)
	}
	bad := func(s string) bool { return strings.ContainsAny(s, "\x1b\a\u009b") }
	outputs := 0
	for _, args := range [][]string{
		{"ps", "-a"}, {"todo", "ls"}, {"inbox", "ls"}, {"inbox", "next"},
		{"kill", "nosuch" + title}, {"logs", "--raw=false", id},
	} {
		o, e, _ := run("", args...)
		outputs++
		if bad(strings.ReplaceAll(o, colour, "")) || bad(e) {
			t.Errorf("hive %s prints a control sequence:\nstdout %q\nstderr %q", strings.Join(args, " "), o, e)
		}
		if args[0] == "logs" && !strings.Contains(o, colour) {
			t.Errorf("hive logs --raw=false dropped the colours: %q", o)
		}
	}
	// A pipe gets the bytes as they are.
	raw, e, err := run("", "logs", id)
	if err != nil || !strings.Contains(raw, title+clip+c1) {
		t.Errorf("hive logs to a pipe: %q %v %s, want the output's bytes", raw, err, e)
	}
	// A terminal gets them escaped, unless --raw.
	onTerm := func(args ...string) string {
		c := hivetest.Command(t, dir, args...)
		f, err := pty.Start(c)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&b, f); close(done) }() // ends with EIO once the command exits
		werr := c.Wait()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			f.Close()
			<-done
		}
		if werr != nil {
			t.Errorf("hive %s on a terminal: %v %q", strings.Join(args, " "), werr, b.String())
		}
		return b.String()
	}
	if o := onTerm("logs", id); bad(strings.ReplaceAll(o, colour, "")) || !strings.Contains(o, `\x1b]0;PWNED\x07`) {
		t.Errorf("hive logs on a terminal: %q, want the sequences escaped", o)
	} else {
		outputs++
	}
	if o := onTerm("logs", "--raw", id); !strings.Contains(o, "\x1b]0;PWNED") {
		t.Errorf("hive logs --raw on a terminal: %q, want the bytes", o)
	}
	figure(t, 15, "escapes: %d human outputs of a hostile command, output and message: 0 control sequences reached the terminal (colours kept); a pipe and --raw get the bytes", outputs)
}
