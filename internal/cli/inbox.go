package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
	"github.com/hivetools/hive/internal/view"
)

const (
	inboxLsUsage   = "inbox ls [-q] [--format table|json]   list the inbox: undelivered messages and those in flight"
	inboxNextUsage = "inbox next [--wait] [--timeout S] [--json]   take the oldest message for a turn (ack it after)"
	inboxAckUsage  = "inbox ack ID [--json]   remove a message inbox next delivered"
)

func init() {
	register(command{name: "inbox", usage: inboxLsUsage + "\n  hive " + inboxNextUsage + "\n  hive " + inboxAckUsage, run: runInbox})
	registerSub("inbox ls", inboxLsUsage)
	registerSub("inbox next", inboxNextUsage)
	registerSub("inbox ack", inboxAckUsage)
}

func runInbox(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: hive inbox ls|next|ack (hive inbox -h)", ErrUsage)
	}
	switch args[0] {
	case "ls":
		return runInboxLs(e, args[1:])
	case "next":
		return runInboxNext(ctx, e, args[1:])
	case "ack":
		return runInboxAck(e, args[1:])
	}
	fs, _ := newFlags("inbox", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("%w: hive inbox %q: want ls, next or ack", ErrUsage, args[0])
}

func runInboxLs(e Env, args []string) error {
	out, resp, err := listCall(e, "inbox ls", args, proto.CmdInboxLs)
	if err != nil {
		return err
	}
	if resp.Messages == nil {
		resp.Messages = []view.Message{}
	}
	undelivered := 0
	if resp.Undelivered != nil {
		undelivered = *resp.Undelivered
	}
	switch {
	case out.json:
		return jsonOut(e, map[string]any{"undelivered": undelivered, "messages": resp.Messages})
	case out.quiet:
		for _, m := range resp.Messages {
			fmt.Fprintln(e.Stdout, m.ID)
		}
		return nil
	}
	fmt.Fprintf(e.Stdout, "%d undelivered\n", undelivered)
	if len(resp.Messages) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFROM\tAT\tSTATE\tSIZE\tPREVIEW")
	now := time.Now()
	for _, m := range resp.Messages {
		state := "queued"
		if m.InFlight {
			state = "in flight"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", m.ID, termsafe.Line(m.From), humanTime(m.At, now), state, m.Size, clipLine(m.Preview, 80))
	}
	return tw.Flush()
}

// runInboxNext takes one message. Interrupted while it waits (ctx), it
// ends the wait and still prints a message the daemon took meanwhile.
func runInboxNext(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("inbox next", e)
	wait := fs.Bool("wait", false, "wait for a message (or a changed todo) when none is queued")
	timeout := fs.Float64("timeout", 0, "with --wait: give up after this many seconds (0: no limit)")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: hive inbox next takes no arguments", ErrUsage)
	}
	if !(*timeout >= 0 && *timeout <= 1e8) {
		return fmt.Errorf("%w: --timeout %v: must be 0..1e8 seconds", ErrUsage, *timeout)
	}
	if *timeout > 0 && !*wait {
		return fmt.Errorf("%w: --timeout: only with --wait", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	// SIGINT or SIGTERM ends the wait, not the process: a message taken
	// at that moment is still printed, not left in flight unseen.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := client.CallWait(ctx, l, proto.Request{Cmd: proto.CmdInboxNext, Wait: *wait, TimeoutSecs: *timeout})
	if err != nil {
		return err
	}
	if *asJSON {
		if resp.Message == nil {
			return jsonOut(e, map[string]any{"empty": true})
		}
		return jsonOut(e, map[string]any{"message": resp.Message})
	}
	if resp.Message == nil {
		fmt.Fprintln(e.Stdout, "no message")
		return nil
	}
	m := resp.Message
	fmt.Fprintf(e.Stdout, "message %d from %s at %s\n%s\n", m.ID, termsafe.Line(m.From), time.Unix(m.At, 0).Format(time.DateTime), termsafe.Text(m.Body))
	return nil
}

func runInboxAck(e Env, args []string) error {
	fs, dir := newFlags("inbox ack", e)
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: hive inbox ack ID", ErrUsage)
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("%w: ID %q: must be a message id (an integer >= 1, from hive inbox next)", ErrUsage, fs.Arg(0))
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if _, err := client.Call(l, proto.Request{Cmd: proto.CmdInboxAck, ID: strconv.FormatInt(id, 10)}); err != nil {
		return err
	}
	if *asJSON {
		return jsonOut(e, map[string]any{"acked": id})
	}
	fmt.Fprintf(e.Stdout, "message %d acked\n", id)
	return nil
}
