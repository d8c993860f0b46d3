package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hivetools/hive/internal/agent"
	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
)

func init() {
	register(command{name: "turn", usage: "turn idle|thinking|compacting [--context-usage F] [--json]   report the turn state; prints {\"compact_pending\": bool} (moving to idle consumes it)", run: runTurn})
}

func runTurn(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("turn", e)
	var usage optFloat
	fs.Var(&usage, "context-usage", "share of the context window in use, 0..1 (compact() is granted above 0.66)")
	fs.Bool("json", false, "accepted, as everywhere: the output is JSON anyway")
	if err := parse(fs, interspersed(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: hive turn idle|thinking|compacting [--context-usage F]", ErrUsage)
	}
	u := usage.v
	if u != nil && !(*u >= 0 && *u <= 1) {
		return fmt.Errorf("%w: --context-usage %v: must be 0..1 (the share of the context window in use)", ErrUsage, *u)
	}
	if err := agent.CheckTurn(fs.Arg(0), u); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdTurn, State: fs.Arg(0), ContextUsage: u})
	if err != nil {
		return err
	}
	// A harness reads the answer: it is one JSON object, with or without
	// --json.
	pending := resp.CompactPending != nil && *resp.CompactPending
	return jsonOut(e, map[string]any{"compact_pending": pending})
}

// optFloat is a float flag that may be left unset (v nil).
type optFloat struct{ v *float64 }

func (o *optFloat) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return strconv.FormatFloat(*o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number")
	}
	o.v = &f
	return nil
}
