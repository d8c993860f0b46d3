package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/inbox"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "wake", usage: "wake (--from LABEL | --to AGENT) [--json|-q] [BODY | -]   put a message in the agent's inbox, or (--to) another agent's of the swarm (no BODY or -: stdin)", run: runWake})
}

// runWake queues a message. The inbox is durable, so with no daemon
// running one is started (like hive run): the message waits for the agent.
func runWake(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("wake", e)
	from := fs.String("from", "", "sender label: 1-64 characters of A-Z a-z 0-9 . _ @ : -")
	to := fs.String("to", "", "an agent of the daemon's swarm: the message goes to its inbox, from this agent (agent:NAME), and waits for it if it is not running")
	out := outputFlags(fs, true)
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: hive wake --from LABEL [BODY | -]: give the body as one argument (quote it) or on stdin", ErrUsage)
	}
	if *to != "" {
		if *from != "" {
			return fmt.Errorf("%w: --from and --to: a message to another agent is from this agent (agent:NAME); give --to only", ErrUsage)
		}
	} else if err := inbox.CheckFrom(*from); err != nil {
		return fmt.Errorf("%w: --%v", ErrUsage, err)
	}
	body := fs.Arg(0)
	if fs.NArg() == 0 || body == "-" {
		b, err := io.ReadAll(io.LimitReader(e.Stdin, inbox.MaxBody+1))
		if err != nil {
			return fmt.Errorf("read the body from stdin: %w", err)
		}
		if len(b) > inbox.MaxBody {
			return fmt.Errorf("%w: body: more than %d bytes on stdin, at most %d", ErrUsage, inbox.MaxBody, inbox.MaxBody)
		}
		body = string(b)
	}
	if body == "" {
		return fmt.Errorf("%w: body: must not be empty", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := client.Ensure(l, e.Exe, 5*time.Second); err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdWake, From: *from, Body: body, To: *to})
	if err != nil {
		return err
	}
	if *to != "" {
		switch {
		case out.json:
			return jsonOut(e, map[string]any{"to": *to, "sent_seq": resp.SentSeq})
		case out.quiet:
			fmt.Fprintln(e.Stdout, resp.SentSeq)
			return nil
		}
		fmt.Fprintf(e.Stdout, "message sent to %s (it waits for it if it is not running)\n", *to)
		return nil
	}
	switch {
	case out.json:
		return jsonOut(e, map[string]any{"message_id": resp.MessageID})
	case out.quiet:
		fmt.Fprintln(e.Stdout, resp.MessageID)
		return nil
	}
	fmt.Fprintf(e.Stdout, "message %d queued\n", resp.MessageID)
	return nil
}
