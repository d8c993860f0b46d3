package search

import (
	"bytes"
	"container/heap"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unicode/utf16"
)

// GrepBuiltin searches with the built-in engine. It walks and searches with
// GOMAXPROCS goroutines, all ended before it returns. It returns ctx.Err()
// if ctx ends first.
func GrepBuiltin(ctx context.Context, o Options) (Result, error) {
	p, err := newGrepPlan(o)
	if err != nil {
		return Result{Engine: EngineBuiltin, Matches: []Match{}}, err
	}
	col := &collector{limit: p.limit + 1}
	perFile := col.limit
	if o.MaxCount > 0 {
		perFile = min(perFile, o.MaxCount)
	}
	if !p.rootDir {
		s := newSearcher(p.pat.m, o.Context)
		col.add("", s.searchFile(ctx, p.root, false, perFile))
	} else {
		var above *dirIgnore
		if !o.NoIgnore {
			above = loadParents(p.root)
		}
		searchers := make([]*searcher, numWorkers())
		w := &walker{
			ctx:      ctx,
			root:     p.root,
			workers:  len(searchers),
			noIgnore: o.NoIgnore,
			keep:     p.keep,
			beyond:   col.beyond,
			file: func(worker int, it *walkItem) {
				s := searchers[worker]
				if s == nil {
					s = newSearcher(p.pat.m, o.Context)
					searchers[worker] = s
				}
				abs := joinOS(p.root, it.rel)
				if ms := s.searchFile(ctx, abs, true, perFile); len(ms) > 0 {
					col.add(it.rel, ms)
				}
			},
		}
		w.run(above)
	}
	if err := ctx.Err(); err != nil {
		return Result{Engine: EngineBuiltin, Matches: []Match{}}, err
	}
	return p.finish(col.hits, EngineBuiltin), nil
}

// keep applies ripgrep's filter precedence to an entry found by the walk:
// --glob overrides first, then ignore files, then --type, then hidden.
func (p *grepPlan) keep(parent *dirIgnore, rel, name string, isDir bool) bool {
	if name == ".git" {
		return false
	}
	if p.over != nil {
		// A plain glob is a gitignore "ignore" rule, so the verdicts invert.
		switch p.over.match(joinBase(p.base, rel), isDir) {
		case ignored:
			return true
		case whitelisted:
			return false
		}
		if p.over.ignores > 0 && !isDir {
			return false
		}
	}
	allowed := false
	if !p.o.NoIgnore {
		switch matchIgnored(parent, rel, isDir) {
		case ignored:
			return false
		case whitelisted:
			allowed = true
		}
	}
	if p.types != nil && !isDir {
		if !p.types.match(name) {
			return false
		}
		allowed = true
	}
	return allowed || p.o.Hidden || name[0] != '.'
}

// collector keeps the first limit hits in path order.
type collector struct {
	mu    sync.Mutex
	limit int
	hits  hitHeap
	bound atomic.Pointer[string] // rel of the last kept hit, once full
}

func (c *collector) add(rel string, ms []Match) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		h := hit{rel: rel, m: m}
		if len(c.hits) == c.limit {
			if hitLess(&h, &c.hits[0]) >= 0 {
				break // this file's later lines are after the bound too
			}
			heap.Pop(&c.hits)
		}
		heap.Push(&c.hits, h)
	}
	if len(c.hits) == c.limit {
		b := c.hits[0].rel
		c.bound.Store(&b)
	}
}

// beyond reports that every path at or under rel sorts after the last
// kept hit, so it cannot change the result.
func (c *collector) beyond(rel string) bool {
	b := c.bound.Load()
	return b != nil && comparePaths(rel, *b) > 0
}

// hitHeap is a max-heap in hitLess order.
type hitHeap []hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return hitLess(&h[i], &h[j]) > 0 }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// bufSize is ripgrep's initial line buffer capacity. Where a file's read
// boundaries fall decides which matches rg reports before it meets a NUL
// byte and gives up on a binary file, so the built-in engine reads the same
// way.
const bufSize = 64 << 10

// searcher searches files one at a time; each worker owns one.
type searcher struct {
	m     *matcher
	ctxN  int
	ahead []byte // first physical read of a file
	buf   []byte // line buffer for files larger than one read
	low   []byte // ASCII-lowered copy for case-insensitive prefilters
}

func newSearcher(m *matcher, ctxLines int) *searcher {
	return &searcher{m: m, ctxN: ctxLines, ahead: make([]byte, bufSize)}
}

func joinOS(root, rel string) string {
	if rel == "" {
		return root
	}
	return root + string(os.PathSeparator) + filepath.FromSlash(rel)
}

// searchFile returns up to limit matching lines of the file at abs (Path
// left empty). walked files get rg's binary rule: searching stops at the
// first read that contains a NUL byte. Unreadable files yield nothing.
func (s *searcher) searchFile(ctx context.Context, abs string, walked bool, limit int) []Match {
	f, err := openRead(abs)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := &scan{s: s, limit: limit, cntLine: 1}
	n, err := io.ReadFull(f, s.ahead)
	if n == 0 {
		return nil
	}
	data := s.ahead[:n]
	eof := err != nil
	if bom16(data) != 0 {
		// UTF-16 with a byte order mark: rg transcodes it to UTF-8.
		rest, _ := io.ReadAll(f)
		sc.whole(decodeUTF16(append(data[:n:n], rest...)), walked, false)
		return sc.out
	}
	if eof {
		sc.whole(data, walked, true)
		return sc.out
	}
	sc.stream(ctx, &fileReader{f: f, ahead: data}, walked)
	return sc.out
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// bom16 returns 1 for a little-endian UTF-16 BOM, 2 for big-endian, else 0.
func bom16(b []byte) int {
	switch {
	case len(b) >= 2 && b[0] == 0xFF && b[1] == 0xFE:
		return 1
	case len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF:
		return 2
	}
	return 0
}

func decodeUTF16(b []byte) []byte {
	big := bom16(b) == 2
	b = b[2:]
	u := make([]uint16, len(b)/2)
	for i := range u {
		if big {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	out := []byte(string(utf16.Decode(u)))
	if len(b)%2 == 1 {
		out = append(out, "\uFFFD"...)
	}
	return out
}

// fileReader reads like read(2) on a regular file: each read returns as
// much as asked unless the file ends. ahead holds bytes already read.
type fileReader struct {
	f     io.Reader
	ahead []byte
	eof   bool
}

func (r *fileReader) read(p []byte) int {
	n := copy(p, r.ahead)
	r.ahead = r.ahead[n:]
	for n < len(p) && !r.eof {
		k, err := r.f.Read(p[n:])
		if err != nil || k == 0 {
			r.eof = true
		}
		n += k
	}
	return n
}

// scan is the state of one file's search.
type scan struct {
	s       *searcher
	limit   int
	out     []Match
	found   int
	done    bool
	prev    []Line // up to ctxN lines before the buffer's first byte
	cntPos  int    // line-number cursor: buffer offset of a line start...
	cntLine int    // ...and its line number
	pending []pendingAfter
	// afterLeft mirrors rg's count of after-context lines still to visit.
	afterLeft int
}

// pendingAfter is a match still short of after-context lines. pos is where
// its next line starts, or -1 for the start of the next region.
type pendingAfter struct {
	idx, pos int
}

// whole searches a file read entirely into data. split applies rg's first
// read, which is only 3 bytes (its BOM sniffing): lines complete within it
// are searched before the rest of the file is read.
func (sc *scan) whole(data []byte, walked, split bool) {
	if split && bytes.HasPrefix(data, utf8BOM) {
		data, split = data[3:], false
	}
	if walked {
		if z := bytes.IndexByte(data, 0); z >= 0 {
			if !split || z < 3 {
				return
			}
			i := bytes.LastIndexByte(data[:3], '\n')
			if i < 0 {
				return
			}
			data = data[:i+1]
		}
	}
	sc.region(data, sc.hay(data, 0, len(data)), 0, len(data))
}

// hay returns the buffer the matcher's prefilter scans: b, or its
// ASCII-lowered copy (lowered over [from, to)).
func (sc *scan) hay(b []byte, from, to int) []byte {
	if !sc.s.m.fold {
		return b
	}
	if cap(sc.s.low) < len(b) {
		sc.s.low = make([]byte, cap(b))
	}
	low := sc.s.low[:len(b)]
	lowerASCII(low[from:to], b[from:to])
	return low
}

// stream searches a file larger than one read, filling the line buffer the
// way ripgrep does, so that binary detection stops at the same place.
func (sc *scan) stream(ctx context.Context, r *fileReader, walked bool) {
	s := sc.s
	if len(s.buf) < bufSize {
		s.buf = make([]byte, bufSize)
	}
	b := s.buf
	capacity := bufSize
	end, searched := 0, 0
	first := true
	C := s.ctxN
	for ctx.Err() == nil {
		lastNL, eof := -1, false
		for {
			if end == capacity {
				capacity *= 2
				if len(b) < capacity {
					nb := make([]byte, capacity)
					copy(nb, b[:end])
					b, s.buf = nb, nb
				}
			}
			want := capacity - end
			if first {
				// rg's BOM sniffing reads 3 bytes first (and drops a UTF-8 BOM).
				want = min(want, 3)
			}
			n := r.read(b[end : end+want])
			if first {
				first = false
				if n == 3 && bytes.Equal(b[end:end+3], utf8BOM) {
					continue
				}
			}
			if n == 0 {
				eof = true
				break
			}
			nb := b[end : end+n]
			if walked && bytes.IndexByte(nb, 0) >= 0 {
				return
			}
			end += n
			if i := bytes.LastIndexByte(nb, '\n'); i >= 0 {
				lastNL = end - n + i + 1
				break
			}
		}
		to := lastNL
		if eof {
			to = end
		}
		lastVisited := sc.region(b, sc.hay(b, searched, to), searched, to)
		if eof || sc.done {
			return
		}
		consumed := to
		if C > 0 {
			consumed = max(precedingStart(b[:to], C), lastVisited)
		}
		sc.roll(b, consumed)
		copy(b, b[consumed:end])
		end -= consumed
		searched = to - consumed
	}
}

// precedingStart is where the line count lines before the last line of b
// starts (rg keeps that much context when it refills its buffer).
func precedingStart(b []byte, count int) int {
	pos := len(b)
	if pos == 0 {
		return 0
	}
	if b[pos-1] == '\n' {
		pos--
	}
	for {
		i := bytes.LastIndexByte(b[:pos], '\n')
		if i < 0 {
			return 0
		}
		if count == 0 {
			return i + 1
		}
		if i == 0 {
			return 0
		}
		count--
		pos = i
	}
}

// roll drops b[:consumed] from the buffer's bookkeeping.
func (sc *scan) roll(b []byte, consumed int) {
	ln := sc.lineNumber(b, consumed)
	if C := sc.s.ctxN; C > 0 {
		var rev []Line
		for p := consumed; len(rev) < C && p > 0; {
			q := bytes.LastIndexByte(b[:p-1], '\n') + 1
			rev = append(rev, Line{Line: ln - len(rev) - 1, Text: lineText(b[q : p-1])})
			p = q
		}
		keep := sc.prev[max(0, len(sc.prev)-(C-len(rev))):]
		prev := make([]Line, 0, len(keep)+len(rev))
		prev = append(prev, keep...)
		for i := len(rev) - 1; i >= 0; i-- {
			prev = append(prev, rev[i])
		}
		sc.prev = prev
	}
	sc.cntPos -= consumed
}

// lineNumber returns the number of the line starting at pos, moving the
// cursor forward.
func (sc *scan) lineNumber(b []byte, pos int) int {
	sc.cntLine += bytes.Count(b[sc.cntPos:pos], []byte{'\n'})
	sc.cntPos = pos
	return sc.cntLine
}

// region searches the lines in b[from:to] (b[0] and b[from] are line
// starts; to ends a line, or the file). It returns the end of the last line
// rg would have visited (a match or its after-context), for roll.
func (sc *scan) region(b, hay []byte, from, to int) (lastVisited int) {
	C := sc.s.ctxN
	f := newFinder(sc.s.m, b, hay, to)
	pos, lastMatchEnd := from, -1
	for pos < to {
		if len(sc.out) >= sc.limit && (C == 0 || len(sc.pending) == 0) {
			break
		}
		start, ls, le, ok := f.next(pos)
		if !ok {
			break
		}
		sc.found++
		if len(sc.out) < sc.limit {
			ln := sc.lineNumber(b, ls)
			sc.out = append(sc.out, Match{Line: ln, Column: start - ls + 1, Text: lineText(b[ls:le]), Before: sc.before(b, ls, ln)})
			if C > 0 {
				sc.pending = append(sc.pending, pendingAfter{idx: len(sc.out) - 1, pos: le + 1})
			}
		}
		lastMatchEnd = le
		pos = le + 1
	}
	// After-context for matches still short of lines.
	kept := sc.pending[:0]
	for _, pa := range sc.pending {
		q := pa.pos
		if q < 0 {
			q = from
		}
		mt := &sc.out[pa.idx]
		for len(mt.After) < C && q < to {
			e := lineEnd(b, q, to)
			mt.After = append(mt.After, Line{Line: mt.Line + len(mt.After) + 1, Text: lineText(b[q:e])})
			q = e + 1
		}
		if len(mt.After) < C {
			kept = append(kept, pendingAfter{idx: pa.idx, pos: -1})
		}
	}
	sc.pending = kept
	if len(sc.out) >= sc.limit && len(sc.pending) == 0 {
		sc.done = true
	}
	if C == 0 {
		return to
	}
	// Mirror rg's last visited line: the last match plus the after-context
	// lines it visited in this buffer.
	q, left := from, sc.afterLeft
	if lastMatchEnd >= 0 {
		q, left = lastMatchEnd+1, C
	}
	walked := 0
	for walked < left && q < to {
		q = lineEnd(b, q, to) + 1
		walked++
	}
	sc.afterLeft = left - walked
	if lastMatchEnd < 0 && walked == 0 {
		return 0
	}
	return min(q, to)
}

// before returns up to ctxN lines before the line at ls (number ln).
func (sc *scan) before(b []byte, ls, ln int) []Line {
	C := sc.s.ctxN
	if C == 0 || ln == 1 {
		return nil
	}
	var rev []Line
	p := ls
	for len(rev) < C && p > 0 {
		q := bytes.LastIndexByte(b[:p-1], '\n') + 1
		rev = append(rev, Line{Line: ln - len(rev) - 1, Text: lineText(b[q : p-1])})
		p = q
	}
	var out []Line
	if need := C - len(rev); need > 0 {
		out = append(out, sc.prev[max(0, len(sc.prev)-need):]...)
	}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
