package search

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/proc"
)

// GrepRG searches by running the rg binary at rgPath with --json (and
// --no-config, --no-ignore-global, so that it reads the same ignore files
// as the built-in engine). The pattern is validated and translated first,
// so both engines give the same meaning to it.
//
// rg runs in parallel first; if more than MaxResults lines match, it is
// killed and run again with --sort path, and killed once the first
// MaxResults+1 matches in path order (and their context) have been read.
// Every rg process is waited for before GrepRG returns; ctx ending kills it
// and GrepRG returns ctx.Err().
func GrepRG(ctx context.Context, rgPath string, o Options) (Result, error) {
	p, err := newGrepPlan(o)
	if err != nil {
		return Result{Engine: EngineRG, Matches: []Match{}}, err
	}
	hits, complete, err := p.runRG(ctx, rgPath, false)
	if err == nil && !complete {
		hits, _, err = p.runRG(ctx, rgPath, true)
	}
	if err != nil {
		return Result{Engine: EngineRG, Matches: []Match{}}, err
	}
	return p.finish(hits, EngineRG), nil
}

func (p *grepPlan) rgArgs(sorted bool) []string {
	o := p.o
	args := []string{"--json", "--no-config", "--no-ignore-global", "--no-messages"}
	if sorted {
		args = append(args, "--sort=path")
	}
	pattern := p.pat.rg
	if o.FixedStrings {
		pattern = o.Pattern
		args = append(args, "--fixed-strings")
		if o.IgnoreCase {
			args = append(args, "--ignore-case")
		} else {
			args = append(args, "--case-sensitive")
		}
	} else {
		// Case folding is already in the translated pattern.
		args = append(args, "--case-sensitive")
	}
	if o.Context > 0 {
		args = append(args, "--context="+strconv.Itoa(o.Context))
	}
	if o.MaxCount > 0 && o.Context == 0 {
		// With context, rg 14 reports a match inside the after-context
		// of the last one counted as one more match: finish trims instead.
		args = append(args, "--max-count="+strconv.Itoa(o.MaxCount))
	}
	if o.Hidden {
		args = append(args, "--hidden")
	}
	if o.NoIgnore {
		args = append(args, "--no-ignore")
	}
	for _, g := range o.Globs {
		args = append(args, "--glob="+g)
	}
	args = append(args, "--glob=!.git")
	if p.types != nil {
		name := p.types.name
		args = append(args, "--type-clear="+name)
		for _, g := range fileTypes[name] {
			args = append(args, "--type-add="+name+":"+g)
		}
		args = append(args, "--type="+name)
	}
	// An absolute root: rg 13 misapplies anchored rules of parent ignore
	// files to relative roots.
	return append(args, "--regexp="+pattern, "--", p.root)
}

// runRG runs rg once. complete is false when an unsorted run saw more than
// limit matches and was stopped.
func (p *grepPlan) runRG(ctx context.Context, rgPath string, sorted bool) (hits []hit, complete bool, err error) {
	cmd := exec.CommandContext(ctx, rgPath, p.rgArgs(sorted)...)
	cmd.Dir = p.o.Dir
	stderr := &cappedBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, fmt.Errorf("rg stdout pipe: %w", err)
	}
	if err := proc.Start(cmd); err != nil { // the daemon's reaper leaves it to Wait
		return nil, false, fmt.Errorf("start rg %q: %w", rgPath, err)
	}
	ps := &rgParser{p: p, sorted: sorted, stopLine: -1}
	stopped, perr := ps.read(stdout)
	if stopped || perr != nil {
		_ = cmd.Process.Kill()
	}
	werr := proc.Wait(cmd)
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if perr != nil {
		return nil, false, perr
	}
	if !stopped {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		code := 0
		if errors.As(werr, &ee) {
			code = ee.ExitCode()
		}
		switch {
		case werr != nil && code != 1 && (code != 2 || msg != ""):
			// Status 1 means no match; 2 without a message means some files
			// could not be read (--no-messages); the results stand.
			return nil, false, rgError(msg, werr)
		case !ps.summary:
			return nil, false, fmt.Errorf("rg %q: output ended without a summary", rgPath)
		}
	}
	return ps.hits, !stopped || sorted, nil
}

// rgError maps rg's complaints about its arguments to input errors.
func rgError(msg string, err error) error {
	first := msg
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	switch {
	case strings.Contains(msg, "regex") || strings.Contains(msg, "is not allowed in a regex"):
		return &InputError{Field: "pattern", Reason: "rg: " + msg, Err: err}
	case strings.Contains(first, "glob"):
		return &InputError{Field: "glob", Reason: "rg: " + msg, Err: err}
	case msg == "":
		return fmt.Errorf("rg: %w", err)
	}
	return fmt.Errorf("rg: %s: %w", msg, err)
}

// rgParser turns rg's JSON lines into hits.
type rgParser struct {
	p      *grepPlan
	sorted bool
	hits   []hit
	count  int // match messages seen
	rel    string
	lines  []rgLine // current file's lines, ascending
	// stopLine is set once the first limit+1 matches of a sorted run are
	// in: lines after it (in the current file) are not needed.
	stopLine int
	stopping bool
	summary  bool // the final summary message was seen
}

type rgLine struct {
	n    int
	text string
	col  int // 0 for context lines
}

type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path       rgData `json:"path"`
		Lines      rgData `json:"lines"`
		LineNumber int    `json:"line_number"`
		Submatches []struct {
			Start int `json:"start"`
		} `json:"submatches"`
	} `json:"data"`
}

type rgData struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (d rgData) bytes() []byte {
	if d.Text != nil {
		return []byte(*d.Text)
	}
	if d.Bytes != nil {
		b, err := base64.StdEncoding.DecodeString(*d.Bytes)
		if err == nil {
			return b
		}
	}
	return nil
}

// read consumes rg's output until EOF or until no more is needed
// (stopped). It returns an error only if the output cannot be read.
func (ps *rgParser) read(r io.Reader) (stopped bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	limit := ps.p.limit
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			var msg rgMessage
			if json.Unmarshal(line, &msg) == nil {
				switch msg.Type {
				case "begin":
					ps.flush()
					ps.rel = ps.relPath(string(msg.Data.Path.bytes()))
				case "match", "context":
					n := msg.Data.LineNumber
					if ps.stopping && n > ps.stopLine {
						ps.flush()
						return true, nil
					}
					l := rgLine{n: n, text: lineText(msg.Data.Lines.bytes())}
					if msg.Type == "match" {
						l.col = 1
						if len(msg.Data.Submatches) > 0 {
							l.col = msg.Data.Submatches[0].Start + 1
						}
						ps.count++
					}
					ps.lines = append(ps.lines, l)
					if msg.Type == "match" && ps.count > limit {
						if !ps.sorted {
							return true, nil
						}
						if !ps.stopping {
							// The previous match is the last one kept; its
							// after-context is all that is still needed.
							ps.stopping = true
							ps.stopLine = -1
							for i := len(ps.lines) - 2; i >= 0; i-- {
								if ps.lines[i].col > 0 {
									ps.stopLine = ps.lines[i].n + ps.p.o.Context
									break
								}
							}
							if n > ps.stopLine {
								ps.flush()
								return true, nil
							}
						}
					}
				case "summary":
					ps.summary = true
				case "end":
					ps.flush()
					if ps.stopping {
						return true, nil
					}
				}
			}
		}
		if rerr != nil {
			ps.flush()
			if rerr == io.EOF {
				return false, nil
			}
			return false, fmt.Errorf("read rg output: %w", rerr)
		}
	}
}

func (ps *rgParser) relPath(path string) string {
	root := ps.p.root
	if path == root {
		return ""
	}
	prefix := root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return filepath.ToSlash(strings.TrimPrefix(path, prefix))
}

// flush turns the current file's lines into hits with their context.
func (ps *rgParser) flush() {
	C := ps.p.o.Context
	ls := ps.lines
	for i, l := range ls {
		if l.col == 0 {
			continue
		}
		m := Match{Line: l.n, Column: l.col, Text: l.text}
		if C > 0 {
			j := i
			for j > 0 && i-j < C && ls[j-1].n == ls[j].n-1 {
				j--
			}
			for _, c := range ls[j:i] {
				m.Before = append(m.Before, Line{Line: c.n, Text: c.text})
			}
			for k := i + 1; k < len(ls) && k-i <= C && ls[k].n == ls[k-1].n+1; k++ {
				m.After = append(m.After, Line{Line: ls[k].n, Text: ls[k].text})
			}
		}
		ps.hits = append(ps.hits, hit{rel: ps.rel, m: m})
	}
	ps.lines = ps.lines[:0]
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
