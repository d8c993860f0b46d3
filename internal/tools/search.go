package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/search"
)

type rgIn struct {
	Pattern      string   `json:"pattern" jsonschema:"regex (or literal with fixed_strings)"`
	Path         string   `json:"path,omitempty" jsonschema:"file or dir, default: session dir"`
	Glob         []string `json:"glob,omitempty" jsonschema:"rg --glob filters; !x excludes"`
	Type         string   `json:"type,omitempty" jsonschema:"rg file type: go, py, js…"`
	IgnoreCase   bool     `json:"ignore_case,omitempty"`
	FixedStrings bool     `json:"fixed_strings,omitempty"`
	Context      int      `json:"context,omitempty" jsonschema:"lines around each match"`
	MaxResults   int      `json:"max_results,omitempty" jsonschema:"default 200"`
	Hidden       bool     `json:"hidden,omitempty"`
	NoIgnore     bool     `json:"no_ignore,omitempty" jsonschema:"ignore .gitignore/.ignore"`
}

// RGLine is a context line.
type RGLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// RGMatch is one matching line.
type RGMatch struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Column int      `json:"column"`
	Text   string   `json:"text"`
	Before []RGLine `json:"before,omitempty"`
	After  []RGLine `json:"after,omitempty"`
}

// RGResult is terminal_rg's answer.
type RGResult struct {
	Matches   []RGMatch `json:"matches"`
	Count     int       `json:"count"`
	Truncated bool      `json:"truncated"`
	Engine    string    `json:"engine"`
}

type globIn struct {
	Pattern    string `json:"pattern" jsonschema:"doublestar glob, e.g. **/*.go"`
	Path       string `json:"path,omitempty" jsonschema:"dir, default: session dir"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"default 500"`
	Hidden     bool   `json:"hidden,omitempty"`
	NoIgnore   bool   `json:"no_ignore,omitempty"`
}

// GlobOut is terminal_glob's answer: paths newest first.
type GlobOut struct {
	Paths     []string `json:"paths"`
	Count     int      `json:"count"`
	Truncated bool     `json:"truncated"`
}

func (h *handlers) addSearch(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "terminal_rg", Description: "Search file contents (ripgrep rules: .gitignore respected, hidden and binary skipped)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in rgIn) (*mcp.CallToolResult, RGResult, error) {
			dir, err := resolveDir(h.sess, "")
			if err != nil {
				return nil, RGResult{}, err
			}
			if in.Context < 0 || in.MaxResults < 0 {
				return nil, RGResult{}, fmt.Errorf("context and max_results: must be >= 0")
			}
			r, err := search.Grep(ctx, search.Options{Pattern: in.Pattern, Dir: dir, Path: in.Path, Globs: in.Glob,
				Type: in.Type, IgnoreCase: in.IgnoreCase, FixedStrings: in.FixedStrings, Context: in.Context,
				MaxResults: in.MaxResults, Hidden: in.Hidden, NoIgnore: in.NoIgnore})
			if err != nil {
				return nil, RGResult{}, err
			}
			out := RGResult{Matches: make([]RGMatch, 0, len(r.Matches)), Count: r.Count, Truncated: r.Truncated, Engine: r.Engine}
			var b strings.Builder
			for _, m := range r.Matches {
				rm := RGMatch{Path: m.Path, Line: m.Line, Column: m.Column, Text: m.Text}
				for _, l := range m.Before {
					rm.Before = append(rm.Before, RGLine{Line: l.Line, Text: l.Text})
					fmt.Fprintf(&b, "%s-%d-%s\n", m.Path, l.Line, l.Text)
				}
				fmt.Fprintf(&b, "%s:%d:%d:%s\n", m.Path, m.Line, m.Column, m.Text)
				for _, l := range m.After {
					rm.After = append(rm.After, RGLine{Line: l.Line, Text: l.Text})
					fmt.Fprintf(&b, "%s-%d-%s\n", m.Path, l.Line, l.Text)
				}
				out.Matches = append(out.Matches, rm)
			}
			switch {
			case r.Count == 0:
				b.WriteString("no matches")
			case r.Truncated:
				fmt.Fprintf(&b, "[first %d matches; more exist: narrow the search or raise max_results]", r.Count)
			}
			return text(strings.TrimRight(b.String(), "\n")), out, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_glob", Description: "Find files by glob (** allowed), newest first; .gitignore respected."},
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
			out := GlobOut{Paths: make([]string, 0, len(r.Entries)), Count: r.Count, Truncated: r.Truncated}
			for _, e := range r.Entries {
				p := e.Path
				if e.IsDir {
					p += "/"
				}
				out.Paths = append(out.Paths, p)
			}
			msg := strings.Join(out.Paths, "\n")
			switch {
			case r.Count == 0:
				msg = "no files match"
			case r.Truncated:
				msg += fmt.Sprintf("\n[first %d; more exist]", r.Count)
			}
			return text(msg), out, nil
		})
}
