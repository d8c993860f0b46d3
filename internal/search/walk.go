package search

import (
	"container/heap"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hivetools/hive/internal/proc"
)

// walkItem is a file or directory waiting to be visited.
type walkItem struct {
	rel    string // slash path from the walk root; "" is the root
	isDir  bool
	parent *dirIgnore // ignore context of the containing directory
	ent    fs.DirEntry
}

// walker visits a tree with GOMAXPROCS workers, in roughly sorted path
// order: the queue is a priority queue on comparePaths, so the first files
// in sorted order are searched first and a truncated search can prune the
// rest (see beyond).
type walker struct {
	ctx     context.Context
	root    string // absolute path of the root directory
	workers int    // if zero, numWorkers()
	// noIgnore skips loading ignore files.
	noIgnore bool
	// keep decides whether an entry of a walked directory is visited.
	keep func(parent *dirIgnore, rel, name string, isDir bool) bool
	// file visits a kept regular file; worker is in [0, workers).
	file func(worker int, it *walkItem)
	// dir, if set, is called for each kept directory below the root; false
	// means do not descend.
	dir func(it *walkItem) bool
	// beyond, if set, reports that nothing at or under rel can matter any
	// more (checked before visiting).
	beyond func(rel string) bool

	mu      sync.Mutex
	cond    sync.Cond
	queue   itemQueue
	busy    int
	stopped bool
}

// numWorkers is all of the runtime's processors: a process that keeps
// few between searches (proc.TuneProcs) gets them all while one runs
// (proc.UseAllProcs, in run).
func numWorkers() int { return proc.Procs() }

// run walks the tree under rootIgnore (the context of the directories above
// the root) and returns when every worker has ended. It stops early when ctx
// is done.
func (w *walker) run(rootIgnore *dirIgnore) {
	defer proc.UseAllProcs()()
	w.cond.L = &w.mu
	heap.Push(&w.queue, &walkItem{isDir: true, parent: rootIgnore})
	if w.workers <= 0 {
		w.workers = numWorkers()
	}
	done := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case <-w.ctx.Done():
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			w.cond.Broadcast()
		case <-done:
		}
	})
	var wg sync.WaitGroup
	for i := range w.workers {
		wg.Go(func() { w.work(i) })
	}
	wg.Wait()
	close(done)
	watcher.Wait()
}

func (w *walker) work(worker int) {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && w.busy > 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped || len(w.queue) == 0 {
			w.mu.Unlock()
			w.cond.Broadcast()
			return
		}
		it := heap.Pop(&w.queue).(*walkItem)
		w.busy++
		w.mu.Unlock()

		children := w.visit(worker, it)

		w.mu.Lock()
		w.busy--
		for _, c := range children {
			heap.Push(&w.queue, c)
		}
		wake := len(children) > 0 || (w.busy == 0 && len(w.queue) == 0)
		w.mu.Unlock()
		if wake {
			w.cond.Broadcast()
		}
	}
}

func (w *walker) visit(worker int, it *walkItem) []*walkItem {
	if it.rel != "" && w.beyond != nil && w.beyond(it.rel) {
		return nil
	}
	if !it.isDir {
		w.file(worker, it)
		return nil
	}
	if it.rel != "" && w.dir != nil && !w.dir(it) {
		return nil
	}
	abs := w.root
	if it.rel != "" {
		abs = filepath.Join(w.root, filepath.FromSlash(it.rel))
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	// A directory without ignore files shares its parent's context: the
	// rules still belong to the directories that hold them.
	ig := it.parent
	if !w.noIgnore && hasAnyIgnoreName(ents) {
		ig = childIgnore(it.parent, abs, it.rel, func(name string) bool {
			for _, e := range ents {
				if e.Name() == name {
					return true
				}
			}
			return false
		})
	}
	var out []*walkItem
	for _, e := range ents {
		t := e.Type()
		if t&fs.ModeSymlink != 0 {
			continue // symlinks are not followed
		}
		isDir := t.IsDir()
		if !isDir && !t.IsRegular() {
			continue
		}
		name := e.Name()
		rel := name
		if it.rel != "" {
			rel = it.rel + "/" + name
		}
		if !w.keep(ig, rel, name, isDir) {
			continue
		}
		out = append(out, &walkItem{rel: rel, isDir: isDir, parent: ig, ent: e})
	}
	return out
}

func hasAnyIgnoreName(ents []fs.DirEntry) bool {
	for _, e := range ents {
		switch e.Name() {
		case ".gitignore", ".ignore", ".rgignore", ".git":
			return true
		}
	}
	return false
}

type itemQueue []*walkItem

func (q itemQueue) Len() int           { return len(q) }
func (q itemQueue) Less(i, j int) bool { return comparePaths(q[i].rel, q[j].rel) < 0 }
func (q itemQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *itemQueue) Push(x any)        { *q = append(*q, x.(*walkItem)) }
func (q *itemQueue) Pop() any {
	old := *q
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*q = old[:n-1]
	return it
}
