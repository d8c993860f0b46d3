package search

import (
	"container/heap"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// GlobOptions configures Glob.
type GlobOptions struct {
	// Pattern is a doublestar glob ("**/*.go", "cmd/*/main.go",
	// "*.{yml,yaml}") matched against paths relative to Path. An absolute
	// pattern starts at its own leading directories instead.
	Pattern string `json:"pattern"`
	// Dir is the absolute working directory; a relative Path and the
	// reported paths are relative to it.
	Dir string `json:"-"`
	// Path is the directory to search, absolute or relative to Dir. If Path
	// is empty, Dir is searched.
	Path string `json:"path,omitempty"`
	// MaxResults caps the entries returned; if zero, DefaultGlobMaxResults.
	MaxResults int `json:"max_results,omitempty"`
	// Hidden includes hidden files and directories. They are also included
	// when the pattern itself names one (".github/**", "**/.env").
	Hidden bool `json:"hidden,omitempty"`
	// NoIgnore disables .gitignore, .ignore, .rgignore and
	// .git/info/exclude rules.
	NoIgnore bool `json:"no_ignore,omitempty"`
}

// Entry is one file or directory matched by Glob.
type Entry struct {
	// Path is absolute when GlobOptions.Path or the pattern is, else
	// relative to GlobOptions.Dir.
	Path    string    `json:"path"`
	ModTime time.Time `json:"mod_time"`
	Size    int64     `json:"size"`
	IsDir   bool      `json:"is_dir"`
}

// GlobResult is the outcome of Glob.
type GlobResult struct {
	// Entries are the newest first (ModTime descending, then path).
	Entries []Entry `json:"entries"`
	// Count is len(Entries).
	Count int `json:"count"`
	// Truncated reports that more than MaxResults entries matched.
	Truncated bool `json:"truncated"`
}

// Glob finds files and directories whose path matches a pattern, skipping
// what ignore files exclude and hidden entries as Grep does (symlinks are
// not followed, .git is skipped unless the pattern names it). It walks with
// GOMAXPROCS goroutines, all ended before it returns; it returns ctx.Err()
// if ctx ends first.
func Glob(ctx context.Context, o GlobOptions) (GlobResult, error) {
	empty := GlobResult{Entries: []Entry{}}
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return empty, &InputError{Field: "dir", Reason: fmt.Sprintf("%q is not an absolute path", o.Dir)}
	}
	if o.MaxResults < 0 {
		return empty, &InputError{Field: "max_results", Reason: "must be >= 0"}
	}
	limit := o.MaxResults
	if limit == 0 {
		limit = DefaultGlobMaxResults
	}
	pat := filepath.ToSlash(o.Pattern)
	if pat == "" {
		return empty, &InputError{Field: "pattern", Reason: "must not be empty"}
	}
	if !doublestar.ValidatePattern(pat) {
		return empty, &InputError{Field: "pattern", Reason: fmt.Sprintf("%q is not a valid glob (unclosed '[' or '{', or a trailing '\\')", o.Pattern)}
	}
	root, base, err := resolvePath(o.Dir, o.Path)
	if err != nil {
		return empty, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return empty, pathError(o.Path, err)
	}
	if !fi.IsDir() {
		return empty, &InputError{Field: "path", Reason: fmt.Sprintf("%q is not a directory", o.Path)}
	}
	// Walk from the pattern's fixed leading directories only.
	prefix, rest := doublestar.SplitPattern(pat)
	switch {
	case filepath.IsAbs(o.Pattern):
		root = filepath.Clean(filepath.FromSlash(prefix))
		base, pat = filepath.ToSlash(root), rest
	case prefix != ".":
		root = filepath.Join(root, filepath.FromSlash(prefix))
		base, pat = strings.TrimPrefix(path.Clean(joinBase(base, prefix)), "./"), rest
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return empty, nil
	}

	hidden := o.Hidden
	allowGit := false
	for _, c := range strings.Split(filepath.ToSlash(o.Pattern), "/") {
		if strings.HasPrefix(c, ".") && c != "." && c != ".." {
			hidden = true
		}
		allowGit = allowGit || c == ".git"
	}
	maxDepth := -1 // unlimited
	if !strings.Contains(pat, "**") && !strings.ContainsAny(pat, "{") {
		maxDepth = strings.Count(pat, "/") + 1
	}

	col := &entryCollector{limit: limit}
	consider := func(it *walkItem) {
		if !doublestar.MatchUnvalidated(pat, it.rel) {
			return
		}
		info, err := it.ent.Info()
		if err != nil {
			return
		}
		col.add(it.rel, Entry{ModTime: info.ModTime(), Size: info.Size(), IsDir: it.isDir})
	}
	var above *dirIgnore
	if !o.NoIgnore {
		above = loadParents(root)
	}
	w := &walker{
		ctx:      ctx,
		root:     root,
		noIgnore: o.NoIgnore,
		keep: func(parent *dirIgnore, rel, name string, isDir bool) bool {
			if name == ".git" && !allowGit {
				return false
			}
			allowed := false
			if !o.NoIgnore {
				switch matchIgnored(parent, rel, isDir) {
				case ignored:
					return false
				case whitelisted:
					allowed = true
				}
			}
			return allowed || hidden || name[0] != '.'
		},
		file: func(_ int, it *walkItem) { consider(it) },
		dir: func(it *walkItem) bool {
			consider(it)
			return maxDepth < 0 || strings.Count(it.rel, "/")+1 < maxDepth
		},
	}
	w.run(above)
	if err := ctx.Err(); err != nil {
		return empty, err
	}
	return col.result(base), nil
}

// entryCollector keeps the newest limit entries.
type entryCollector struct {
	mu    sync.Mutex
	limit int
	total int
	h     entryHeap
}

type relEntry struct {
	rel string
	e   Entry
}

// entryLess orders newest first, then by path.
func entryLess(a, b *relEntry) int {
	if c := b.e.ModTime.Compare(a.e.ModTime); c != 0 {
		return c
	}
	return comparePaths(a.rel, b.rel)
}

func (c *entryCollector) add(rel string, e Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	re := relEntry{rel: rel, e: e}
	if len(c.h) == c.limit {
		if entryLess(&re, &c.h[0]) >= 0 {
			return
		}
		heap.Pop(&c.h)
	}
	heap.Push(&c.h, re)
}

func (c *entryCollector) result(base string) GlobResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]relEntry, len(c.h))
	copy(es, c.h)
	slices.SortFunc(es, func(a, b relEntry) int { return entryLess(&a, &b) })
	res := GlobResult{Entries: make([]Entry, 0, len(es)), Truncated: c.total > c.limit}
	for _, re := range es {
		re.e.Path = filepath.FromSlash(joinBase(base, re.rel))
		res.Entries = append(res.Entries, re.e)
	}
	res.Count = len(res.Entries)
	return res
}

// entryHeap is a max-heap in entryLess order (the worst entry on top).
type entryHeap []relEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return entryLess(&h[i], &h[j]) > 0 }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(relEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
