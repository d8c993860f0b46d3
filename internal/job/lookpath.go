package job

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// pathCache resolves command names against a job's PATH and remembers
// the answers, as a shell's command hash does, but without a shell's
// stale entries: where the platform can watch directories (inotify on
// Linux), any change in a PATH directory (a file created, removed,
// renamed or chmod-ed) forgets every answer. A search stats each PATH
// directory in turn, which cost more than anything else before a
// command's fork; an answer from the cache costs nothing.
//
// Only PATH values whose every entry is absolute are cached; others are
// searched each time.
// maxPathEntries bounds the answers kept.
const maxPathEntries = 4096

type pathCache struct {
	watch dirWatcher // nil: nothing is cached

	mu       sync.Mutex
	entries  map[string]string // PATH + "\x00" + name → path
	gen      uint64            // bumped by every change
	searches int               // searches done (for tests)
}

// dirWatcher reports changes in directories.
type dirWatcher interface {
	// add watches dir; false if it cannot be watched (it does not exist).
	add(dir string) bool
	close()
}

func newPathCache() *pathCache {
	c := &pathCache{entries: map[string]string{}}
	if w := newDirWatcher(c.invalidate); w != nil {
		c.watch = w
	}
	return c
}

func (c *pathCache) invalidate() {
	c.mu.Lock()
	clear(c.entries)
	c.gen++
	c.mu.Unlock()
}

func (c *pathCache) close() {
	if c.watch != nil {
		c.watch.close()
	}
}

// lookPath resolves name against the PATH of env (not the daemon's); a
// name with a slash is taken as a path, relative to dir.
func (c *pathCache) lookPath(name string, env []string, dir string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("exec %q: %w", name, err)
		}
		return p, nil
	}
	pathEnv := pathOf(env)
	if c.watch == nil {
		return c.search(name, pathEnv, dir)
	}
	key := pathEnv + "\x00" + name
	c.mu.Lock()
	p, ok := c.entries[key]
	gen := c.gen
	c.mu.Unlock()
	if ok {
		// Kept only while its directories are watched: a watch that goes
		// away is a change, which clears every answer.
		return p, nil
	}
	if !c.watchAll(pathEnv) {
		return c.search(name, pathEnv, dir)
	}
	// The directories are watched from before the search on, so a change
	// during the search bumps gen and the answer is not kept.
	p, err := c.search(name, pathEnv, dir)
	if err == nil {
		c.mu.Lock()
		if c.gen == gen {
			if len(c.entries) >= maxPathEntries {
				clear(c.entries) // many PATHs or names: start over rather than grow
			}
			c.entries[key] = p
		}
		c.mu.Unlock()
	}
	return p, err
}

// watchAll watches every entry of pathEnv; false if one is relative or
// nothing of it can be watched. For a directory that does not exist (PATH
// often names one, like ~/go/bin before anything is installed there), its
// nearest existing parent is watched: its creation is a change too.
func (c *pathCache) watchAll(pathEnv string) bool {
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			return false
		}
		for !c.watch.add(d) {
			parent := filepath.Dir(d)
			if parent == d {
				return false
			}
			d = parent
		}
	}
	return true
}

func (c *pathCache) search(name, pathEnv, dir string) (string, error) {
	c.mu.Lock()
	c.searches++
	c.mu.Unlock()
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) && dir != "" {
			d = filepath.Join(dir, d)
		}
		for _, cand := range candidates(filepath.Join(d, name)) {
			if executable(cand) == nil {
				return cand, nil
			}
		}
	}
	return "", fmt.Errorf("exec %q: %w", name, exec.ErrNotFound)
}

// pathOf is the value of PATH in env (the last one wins, as in exec).
func pathOf(env []string) string {
	pathEnv := ""
	for _, kv := range env {
		if len(kv) >= 5 && kv[4] == '=' && strings.EqualFold(kv[:4], "PATH") {
			pathEnv = kv[5:]
		}
	}
	return pathEnv
}
