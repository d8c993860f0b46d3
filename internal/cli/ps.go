package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/proto"
	"github.com/hivetools/hive/internal/termsafe"
	"github.com/hivetools/hive/internal/view"
)

const psUsage = "ps [-a] [-q] [--format table|json] [--filter state=S] [--filter name=N]   list jobs (-a: also ended ones)"

func init() {
	register(command{name: "ps", usage: psUsage, run: runPs})
}

// multiFlag is a flag that may be given several times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runPs(ctx context.Context, e Env, args []string) error {
	fs, dir := newFlags("ps", e)
	var all bool
	fs.BoolVar(&all, "a", false, "all jobs: ended ones too")
	fs.BoolVar(&all, "all", false, "same as -a")
	out := outputFlags(fs, true)
	var filters multiFlag
	fs.Var(&filters, "filter", "state=S (pending, running, done, timed_out, killed, interrupted, failed; repeat for any of several) or name=N")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if err := out.check(); err != nil {
		return err
	}
	req := proto.Request{Cmd: proto.CmdPs, All: all}
	for _, f := range filters {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok || v == "":
			return fmt.Errorf("%w: --filter %q: must be KEY=VALUE (state=running, name=build)", ErrUsage, f)
		case k == "state" || k == "status":
			req.States = append(req.States, v)
			req.All = true // a filter on ended states looks among ended jobs
		case k == "name":
			if req.Name != "" && req.Name != v {
				return fmt.Errorf("%w: --filter name=: one name at a time", ErrUsage)
			}
			req.Name = v
		default:
			return fmt.Errorf("%w: --filter %q: unknown key %q (want state or name)", ErrUsage, f, k)
		}
	}
	if req.Name != "" && len(req.States) == 0 && !all {
		req.States = []string{"pending", "running"}
	}
	l, err := layout(*dir)
	if err != nil {
		return err
	}
	resp, err := client.Call(l, req)
	if err != nil {
		return err
	}
	switch {
	case out.quiet:
		for _, j := range resp.Jobs {
			fmt.Fprintln(e.Stdout, j.ID)
		}
		return nil
	case out.json:
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(resp.Jobs)
	}
	return psTable(e.Stdout, resp.Jobs, time.Now())
}

func psTable(w io.Writer, jobs []view.Job, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tEXIT\tCREATED\tDURATION\tMEM\tCPU\tCMD")
	for _, j := range jobs {
		exit := "-"
		if j.ExitCode != nil {
			exit = fmt.Sprint(*j.ExitCode)
		}
		name := termsafe.Line(j.Name)
		if name == "" {
			name = "-"
		}
		cmd := clipLine(strings.Join(strings.Fields(j.Cmd), " "), 60)
		dur := "-"
		if !j.Started.IsZero() {
			dur = humanDuration(time.Duration(j.DurationMs) * time.Millisecond)
		}
		mem, cpu := usageColumns(j)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, name, j.State, exit, humanTime(j.Created, now), dur, mem, cpu, cmd)
	}
	return tw.Flush()
}

// usageColumns are ps's MEM and CPU of a job: its memory peak (a running
// job's memory now) and its processor time, user and system; "-" when
// not known.
func usageColumns(j view.Job) (mem, cpu string) {
	u := j.Usage
	if u == nil {
		return "-", "-"
	}
	mem = "-"
	if b := u.MemoryPeakBytes; b > 0 || u.MemoryBytes > 0 {
		if j.State == "running" && u.MemoryBytes > 0 {
			b = u.MemoryBytes
		}
		mem = humanBytes(b)
	}
	return mem, humanDuration(time.Duration(u.CPUUserMS+u.CPUSystemMS) * time.Millisecond)
}

// humanBytes is n in the largest binary unit it fills: 512B, 4.0KiB, 23MiB, 1.5GiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
}

// humanTime is a time of today as 15:04:05, an older one with its date
// (jobs are kept for days).
func humanTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	if now.Sub(t) < 24*time.Hour && t.YearDay() == now.Local().YearDay() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// humanDuration is d in at most two units: 850ms, 4.2s, 3m12s, 2h05m, 3d4h.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// jobExitCode is the status a job ended with, as a shell reports it: its
// exit code, 128+n for a signal n, 127 for a job that could not start,
// 1 for one that ended without a status (cancelled before it started,
// interrupted with its process gone).
func jobExitCode(j view.Job) int {
	switch {
	case j.ExitCode != nil && *j.ExitCode >= 0:
		return *j.ExitCode
	case j.Signal != nil:
		return 128 + *j.Signal
	case j.State == "failed":
		return 127
	}
	return 1
}
