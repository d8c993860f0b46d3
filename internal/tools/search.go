package tools

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/search"
)

type rgIn struct {
	Pattern      string   `json:"pattern" jsonschema:"regex"`
	Path         string   `json:"path,omitempty"`
	Glob         []string `json:"glob,omitempty" jsonschema:"rg --glob; !x excludes"`
	Type         string   `json:"type,omitempty" jsonschema:"rg --type: go, py…"`
	IgnoreCase   bool     `json:"ignore_case,omitempty"`
	FixedStrings bool     `json:"fixed_strings,omitempty"`
	Context      int      `json:"context,omitempty"`
	MaxResults   int      `json:"max_results,omitempty" jsonschema:"default 200"`
	MaxCount     int      `json:"max_count,omitempty" jsonschema:"cap per file"`
	Hidden       bool     `json:"hidden,omitempty"`
	NoIgnore     bool     `json:"no_ignore,omitempty"`
}

// RGMatch is one matching line. Before and After are the context lines
// (Before ends at line-1, After starts at line+1). No column: rg's own
// output has none by default, and it costs a tenth of the answer.
type RGMatch struct {
	Line   int      `json:"line"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// RGFile is one file's matches, in line order.
type RGFile struct {
	Path    string    `json:"path"`
	Matches []RGMatch `json:"matches"`
}

// RGResult is terminal_rg's answer: matches grouped by file, each path
// once. Paths are absolute when the path asked for is, else relative to
// the session dir, as rg prints them. (Which engine answered is in the
// brief text, not here: it changes nothing for the reader.)
type RGResult struct {
	Files     []RGFile `json:"files"`
	Count     int      `json:"count"`
	Truncated bool     `json:"truncated,omitempty"`
}

type globIn struct {
	Pattern    string `json:"pattern" jsonschema:"doublestar glob: **/*.go"`
	Path       string `json:"path,omitempty"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"default 500"`
	Hidden     bool   `json:"hidden,omitempty"`
	NoIgnore   bool   `json:"no_ignore,omitempty"`
}

// GlobDir is the entries found in one directory, newest first. Dir ends
// in "/" ("" is the session dir): an entry's path is Dir+name. A
// directory's name ends in "/".
type GlobDir struct {
	Dir   string   `json:"dir"`
	Names []string `json:"names"`
}

// GlobOut is terminal_glob's answer: entries grouped by directory, each
// directory once; the group of the newest entry first. (No count: it is
// the number of names; Truncated says whether more matched.)
type GlobOut struct {
	Dirs      []GlobDir `json:"dirs"`
	Truncated bool      `json:"truncated,omitempty"`
}

func (h *handlers) addSearch(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "terminal_rg", Description: "Search file contents (as rg: .gitignore, hidden, binary skipped)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in rgIn) (*mcp.CallToolResult, RGResult, error) {
			dir, err := resolveDir(h.sess, "")
			if err != nil {
				return nil, RGResult{}, err
			}
			if in.Context < 0 || in.MaxResults < 0 || in.MaxCount < 0 {
				return nil, RGResult{}, fmt.Errorf("context, max_results and max_count: must be >= 0")
			}
			r, err := search.Grep(ctx, search.Options{Pattern: in.Pattern, Dir: dir, Path: in.Path, Globs: in.Glob,
				Type: in.Type, IgnoreCase: in.IgnoreCase, FixedStrings: in.FixedStrings, Context: in.Context,
				MaxResults: in.MaxResults, MaxCount: in.MaxCount, Hidden: in.Hidden, NoIgnore: in.NoIgnore})
			if err != nil {
				return nil, RGResult{}, err
			}
			out := groupMatches(r)
			brief := fmt.Sprintf("%d matches in %d files (%s)", out.Count, len(out.Files), r.Engine)
			switch {
			case r.Count == 0:
				brief = "no matches"
			case r.Truncated:
				brief += fmt.Sprintf("; more exist past the first %d: narrow the search or raise max_results", r.Count)
			}
			return h.sess.reply(brief, func() string { return renderRG(out, brief) }), out, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_glob", Description: "Find files by glob, newest first; .gitignore respected."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in globIn) (*mcp.CallToolResult, GlobOut, error) {
			dir, err := resolveDir(h.sess, "")
			if err != nil {
				return nil, GlobOut{}, err
			}
			if in.MaxResults < 0 {
				return nil, GlobOut{}, fmt.Errorf("max_results %d: must be >= 0", in.MaxResults)
			}
			r, err := search.Glob(ctx, search.GlobOptions{Pattern: in.Pattern, Dir: dir, Path: in.Path,
				MaxResults: in.MaxResults, Hidden: in.Hidden, NoIgnore: in.NoIgnore})
			if err != nil {
				return nil, GlobOut{}, err
			}
			out := groupEntries(r)
			brief := fmt.Sprintf("%d entries in %d dirs", r.Count, len(out.Dirs))
			switch {
			case r.Count == 0:
				brief = "no files match"
			case r.Truncated:
				brief += fmt.Sprintf("; more exist past the first %d", r.Count)
			}
			return h.sess.reply(brief, func() string { return renderGlob(out, brief) }), out, nil
		})
}

// groupMatches groups a search's matches (sorted by path, then line) by
// file, and merges their context as rg does: a match's before and after
// lines are only those no other match of the file shows (as a match or as
// its context), so no line is shown twice and no matching line as
// context. A match's Before stays the lines just above it, its After the
// lines just below it; a gap in the numbers between two is rg's "--".
func groupMatches(r search.Result) RGResult {
	out := RGResult{Files: []RGFile{}, Count: r.Count, Truncated: r.Truncated}
	shown := 0 // the last line shown of the current file
	for i, m := range r.Matches {
		if n := len(out.Files); n == 0 || out.Files[n-1].Path != m.Path {
			out.Files = append(out.Files, RGFile{Path: m.Path})
			shown = 0
		}
		f := &out.Files[len(out.Files)-1]
		rm := RGMatch{Line: m.Line, Text: m.Text}
		for _, l := range m.Before {
			if l.Line > shown && l.Line < m.Line {
				rm.Before = append(rm.Before, l.Text)
			}
		}
		next := -1 // the next match's line in this file
		if i+1 < len(r.Matches) && r.Matches[i+1].Path == m.Path {
			next = r.Matches[i+1].Line
		}
		shown = m.Line
		for _, l := range m.After {
			if l.Line != shown+1 || (next >= 0 && l.Line >= next) {
				break
			}
			rm.After = append(rm.After, l.Text)
			shown = l.Line
		}
		f.Matches = append(f.Matches, rm)
	}
	return out
}

// renderRG renders matches as rg --heading -n does: each path once, then
// line:text for a match and line-text for a context line, "--" between
// blocks of lines that are not adjacent.
func renderRG(out RGResult, brief string) string {
	var b strings.Builder
	for i, f := range out.Files {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.Path)
		b.WriteByte('\n')
		last := 0 // the last line written of this file
		context := false
		for _, m := range f.Matches {
			first := m.Line - len(m.Before)
			if len(m.Before) > 0 || len(m.After) > 0 {
				context = true
			}
			if context && last > 0 && first > last+1 {
				b.WriteString("--\n")
			}
			for k, l := range m.Before {
				fmt.Fprintf(&b, "%d-%s\n", first+k, l)
			}
			fmt.Fprintf(&b, "%d:%s\n", m.Line, m.Text)
			for k, l := range m.After {
				fmt.Fprintf(&b, "%d-%s\n", m.Line+1+k, l)
			}
			last = m.Line + len(m.After)
		}
	}
	if out.Count == 0 || out.Truncated {
		b.WriteString("[" + brief + "]")
	}
	return strings.TrimRight(b.String(), "\n")
}

// groupEntries groups glob entries (newest first) by directory: groups in
// the order of their newest entry, entries newest first within each.
func groupEntries(r search.GlobResult) GlobOut {
	out := GlobOut{Dirs: []GlobDir{}, Truncated: r.Truncated}
	at := map[string]int{}
	for _, e := range r.Entries {
		p := filepath.ToSlash(e.Path)
		dir, name := path.Split(p)
		if name == "" { // "/" itself
			dir, name = "", p
		}
		if e.IsDir {
			name += "/"
		}
		i, ok := at[dir]
		if !ok {
			i = len(out.Dirs)
			at[dir] = i
			out.Dirs = append(out.Dirs, GlobDir{Dir: dir})
		}
		out.Dirs[i].Names = append(out.Dirs[i].Names, name)
	}
	return out
}

// renderGlob renders entries by directory: the directory, then its
// entries indented.
func renderGlob(out GlobOut, brief string) string {
	var b strings.Builder
	for _, d := range out.Dirs {
		dir := d.Dir
		if dir == "" {
			dir = "./"
		}
		b.WriteString(dir)
		b.WriteByte('\n')
		for _, n := range d.Names {
			b.WriteString("  " + n + "\n")
		}
	}
	if len(out.Dirs) == 0 || out.Truncated {
		b.WriteString("[" + brief + "]")
	}
	return strings.TrimRight(b.String(), "\n")
}
