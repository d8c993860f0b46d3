package search

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// matcher finds matching lines in a buffer. It is immutable and safe for
// concurrent use; a finder holds the state of one scan.
type matcher struct {
	re *regexp.Regexp // nil when exact
	// needles is a prefilter: every match contains one of them. If empty,
	// first (if set) lists the bytes a match can start with; else the
	// regexp scans the buffer itself.
	needles []needle
	first   *[256]bool
	fold    bool // some needle is folded: the ASCII-lowered buffer is needed
	exact   bool // one needle, and a hit is the match itself
}

// needle is a literal to look for; fold means it is lower-case ASCII and
// looked for in the ASCII-lowered buffer.
type needle struct {
	b    []byte
	fold bool
}

const maxNeedles = 16

// requiredSet returns literals of which every match contains at least
// one, or nil.
func requiredSet(re *syntax.Regexp) []needle {
	switch re.Op {
	case syntax.OpLiteral:
		lit := string(re.Rune)
		if re.Flags&syntax.FoldCase == 0 {
			return []needle{{b: []byte(lit)}}
		}
		if seg := foldSegment(lit); len(seg) > 0 {
			return []needle{{b: seg, fold: true}}
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredSet(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredSet(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []needle
		for _, sub := range re.Sub {
			if set := requiredSet(sub); set != nil && betterSet(set, best) {
				best = set
			}
		}
		return best
	case syntax.OpAlternate:
		var all []needle
		for _, sub := range re.Sub {
			set := requiredSet(sub)
			if set == nil {
				return nil
			}
			for _, n := range set {
				if !slices.ContainsFunc(all, func(o needle) bool { return o.fold == n.fold && bytes.Equal(o.b, n.b) }) {
					all = append(all, n)
				}
			}
			if len(all) > maxNeedles {
				return nil
			}
		}
		return all
	}
	return nil
}

// betterSet prefers the set whose shortest needle is longest, then the
// smaller set.
func betterSet(a, b []needle) bool {
	if b == nil {
		return true
	}
	short := func(s []needle) int {
		m := len(s[0].b)
		for _, n := range s[1:] {
			m = min(m, len(n.b))
		}
		return m
	}
	if sa, sb := short(a), short(b); sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

// firstBytes returns the bytes a match can start with, or nil when any
// could (or the pattern can match the empty string).
func firstBytes(re *syntax.Regexp) *[256]bool {
	var set [256]bool
	nullable, ok := addFirst(re, &set)
	if !ok || nullable {
		return nil
	}
	n := 0
	for _, in := range set {
		if in {
			n++
		}
	}
	if n == 0 || n > 128 {
		return nil
	}
	return &set
}

// addFirst adds to set the first bytes of re's matches and reports whether
// re can match the empty string. ok is false if the set is unbounded.
func addFirst(re *syntax.Regexp, set *[256]bool) (nullable, ok bool) {
	switch re.Op {
	case syntax.OpNoMatch:
		return false, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true, true
	case syntax.OpLiteral:
		r := re.Rune[0]
		addRuneRange(set, r, r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				addRuneRange(set, f, f)
			}
		}
		return false, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			addRuneRange(set, re.Rune[i], re.Rune[i+1])
		}
		return false, true
	case syntax.OpCapture, syntax.OpPlus:
		return addFirst(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		_, ok := addFirst(re.Sub[0], set)
		return true, ok
	case syntax.OpRepeat:
		nullable, ok := addFirst(re.Sub[0], set)
		return nullable || re.Min == 0, ok
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			nullable, ok := addFirst(sub, set)
			if !ok {
				return false, false
			}
			if !nullable {
				return false, true
			}
		}
		return true, true
	case syntax.OpAlternate:
		any := false
		for _, sub := range re.Sub {
			nullable, ok := addFirst(sub, set)
			if !ok {
				return false, false
			}
			any = any || nullable
		}
		return any, true
	}
	return false, false
}

// addRuneRange marks the first UTF-8 bytes of the runes lo..hi.
func addRuneRange(set *[256]bool, lo, hi rune) {
	for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
		set[r] = true
	}
	if hi < utf8.RuneSelf {
		return
	}
	lo = max(lo, utf8.RuneSelf)
	var b [utf8.UTFMax]byte
	utf8.EncodeRune(b[:], lo)
	first := b[0]
	utf8.EncodeRune(b[:], min(hi, unicode.MaxRune))
	for c := int(first); c <= int(b[0]); c++ {
		set[c] = true
	}
}

// finder iterates over the matching lines of one region of a buffer.
type finder struct {
	m      *matcher
	b, hay []byte // the buffer, and its ASCII-lowered copy when m.fold
	end    int
	nextAt []int // per needle: its next occurrence at or after the last look, end if none
}

func newFinder(m *matcher, b, hay []byte, end int) *finder {
	f := &finder{m: m, b: b, hay: hay, end: end}
	if len(m.needles) > 1 {
		f.nextAt = make([]int, len(m.needles))
		for i := range f.nextAt {
			f.nextAt[i] = -1
		}
	}
	return f
}

// next finds the first matching line at or after pos (a line start). It
// returns the match start and the line's bounds (le excludes the newline).
func (f *finder) next(pos int) (start, ls, le int, ok bool) {
	m, b, end := f.m, f.b, f.end
	for pos < end {
		var cand int
		switch {
		case len(m.needles) == 1:
			n := m.needles[0]
			h := b
			if n.fold {
				h = f.hay
			}
			i := bytes.Index(h[pos:end], n.b)
			if i < 0 {
				return 0, 0, 0, false
			}
			cand = pos + i
		case len(m.needles) > 1:
			cand = end
			for k, n := range m.needles {
				if f.nextAt[k] < pos {
					h := b
					if n.fold {
						h = f.hay
					}
					f.nextAt[k] = end
					if i := bytes.Index(h[pos:end], n.b); i >= 0 {
						f.nextAt[k] = pos + i
					}
				}
				cand = min(cand, f.nextAt[k])
			}
			if cand == end {
				return 0, 0, 0, false
			}
		case m.first != nil:
			i := indexAnyOf(b[pos:end], m.first)
			if i < 0 {
				return 0, 0, 0, false
			}
			cand = pos + i
		default:
			loc := m.re.FindIndex(b[pos:end])
			if loc == nil {
				return 0, 0, 0, false
			}
			s := pos + loc[0]
			if s == end && b[end-1] == '\n' {
				// An empty match after the region's last line.
				return 0, 0, 0, false
			}
			ls = pos + bytes.LastIndexByte(b[pos:s], '\n') + 1
			return s, ls, lineEnd(b, s, end), true
		}
		ls = pos + bytes.LastIndexByte(b[pos:cand], '\n') + 1
		le = lineEnd(b, cand, end)
		if m.exact {
			return cand, ls, le, true
		}
		if loc := m.re.FindIndex(b[ls:le]); loc != nil {
			return ls + loc[0], ls, le, true
		}
		pos = le + 1
	}
	return 0, 0, 0, false
}

func indexAnyOf(b []byte, set *[256]bool) int {
	for i, c := range b {
		if set[c] {
			return i
		}
	}
	return -1
}

func lineEnd(b []byte, from, end int) int {
	if j := bytes.IndexByte(b[from:end], '\n'); j >= 0 {
		return from + j
	}
	return end
}
