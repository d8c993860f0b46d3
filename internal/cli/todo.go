package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
	"github.com/hivetools/hive/internal/view"
)

const (
	todoUpsertUsage = "todo upsert --subsystem S --key K --summary TEXT [--json|-q]   raise or update a loose-end todo"
	todoClearUsage  = "todo clear --subsystem S --key K [--json|-q]   clear it (a CI watcher: the build passed)"
	todoLsUsage     = "todo ls [-q] [--format table|json]   list the open todos"
)

func init() {
	register(command{name: "todo", usage: todoUpsertUsage + "\n  hive " + todoClearUsage + "\n  hive " + todoLsUsage, run: runTodo})
	registerSub("todo upsert", todoUpsertUsage)
	registerSub("todo clear", todoClearUsage)
	registerSub("todo ls", todoLsUsage)
}

func runTodo(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: hive todo upsert|clear|ls (hive todo -h)", ErrUsage)
	}
	switch args[0] {
	case "upsert":
		return runTodoUpsert(e, args[1:])
	case "clear":
		return runTodoClear(e, args[1:])
	case "ls":
		return runTodoLs(e, args[1:])
	}
	fs, _ := newFlags("todo", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("%w: hive todo %q: want upsert, clear or ls", ErrUsage, args[0])
}

// runTodoUpsert raises a todo; like wake it starts a daemon if none runs,
// since todos are kept.
func runTodoUpsert(e Env, args []string) error {
	fs, dir := newFlags("todo upsert", e)
	subsystem := fs.String("subsystem", "", "who raises it (ci, chat, ...)")
	key := fs.String("key", "", "its key within the subsystem: the same key updates it")
	summary := fs.String("summary", "", "what the agent should know")
	out := outputFlags(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := todoArgs(fs, *subsystem, *key); err != nil {
		return err
	}
	if *summary == "" {
		return fmt.Errorf("%w: --summary: must not be empty", ErrUsage)
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	if err := client.Ensure(l, e.Exe, 5*time.Second); err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdTodo, Subsystem: *subsystem, Key: *key, Summary: *summary})
	if err != nil {
		return err
	}
	switch {
	case out.json:
		return jsonOut(e, map[string]any{"todo_id": resp.TodoID})
	case out.quiet:
		fmt.Fprintln(e.Stdout, resp.TodoID)
		return nil
	}
	fmt.Fprintf(e.Stdout, "todo %d (%s/%s)\n", resp.TodoID, *subsystem, *key)
	return nil
}

func runTodoClear(e Env, args []string) error {
	fs, dir := newFlags("todo clear", e)
	subsystem := fs.String("subsystem", "", "the todo's subsystem")
	key := fs.String("key", "", "the todo's key")
	out := outputFlags(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := todoArgs(fs, *subsystem, *key); err != nil {
		return err
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, proto.Request{Cmd: proto.CmdClearTodo, Subsystem: *subsystem, Key: *key})
	if err != nil {
		return err
	}
	cleared := resp.Cleared != nil && *resp.Cleared
	switch {
	case out.json:
		return jsonOut(e, map[string]any{"cleared": cleared})
	case out.quiet:
		return nil
	}
	if cleared {
		fmt.Fprintf(e.Stdout, "cleared %s/%s\n", *subsystem, *key)
	} else {
		fmt.Fprintf(e.Stdout, "no todo %s/%s (nothing to clear)\n", *subsystem, *key)
	}
	return nil
}

func todoArgs(fs *flagSet, subsystem, key string) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (every value goes with its flag)", ErrUsage, fs.Arg(0))
	}
	if subsystem == "" {
		return fmt.Errorf("%w: --subsystem: must not be empty", ErrUsage)
	}
	if key == "" {
		return fmt.Errorf("%w: --key: must not be empty", ErrUsage)
	}
	return nil
}

func runTodoLs(e Env, args []string) error {
	out, resp, err := listCall(e, "todo ls", args, proto.CmdTodoLs)
	if err != nil {
		return err
	}
	if resp.Todos == nil {
		resp.Todos = []view.Todo{}
	}
	switch {
	case out.json:
		return jsonOut(e, map[string]any{"todos": resp.Todos})
	case out.quiet:
		for _, t := range resp.Todos {
			fmt.Fprintln(e.Stdout, t.ID)
		}
		return nil
	}
	if len(resp.Todos) == 0 {
		fmt.Fprintln(e.Stdout, "no open todos")
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUBSYSTEM\tKEY\tUPDATED\tSUMMARY")
	now := time.Now()
	for _, t := range resp.Todos {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", t.ID, termsafe.Line(t.Subsystem), termsafe.Line(t.Key),
			humanTime(t.Updated, now), clipLine(t.Summary, 100))
	}
	return tw.Flush()
}

// clipLine puts s on one line of at most n characters, control
// characters shown escaped (termsafe.Line: an escape takes more than one).
func clipLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return termsafe.Line(string(r[:n-1])) + "…"
	}
	return termsafe.Line(string(r))
}

// listCall is the start of a listing command (todo ls, inbox ls): it
// parses the output flags, takes no arguments, and sends cmd.
func listCall(e Env, name string, args []string, cmd string) (*output, proto.Response, error) {
	fs, dir := newFlags(name, e)
	out := outputFlags(fs, true)
	if err := parse(fs, args); err != nil {
		return nil, proto.Response{}, err
	}
	if err := out.check(); err != nil {
		return nil, proto.Response{}, err
	}
	if fs.NArg() > 0 {
		return nil, proto.Response{}, fmt.Errorf("%w: hive %s takes no arguments", ErrUsage, name)
	}
	l, err := layout(*dir)
	if err != nil {
		return nil, proto.Response{}, err
	}
	resp, err := client.Call(l, proto.Request{Cmd: cmd})
	return out, resp, err
}
