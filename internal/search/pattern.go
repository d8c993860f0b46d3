package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// compiledPattern is a pattern ready for both engines.
type compiledPattern struct {
	m *matcher
	// rg is the pattern for the rg binary: Rust syntax with the same meaning
	// as m (empty with FixedStrings, where rg gets the raw literal and -F).
	rg string
}

var errNewline = fmt.Errorf("the literal %q is not allowed in a regex (patterns match within one line)", "\n")

// compilePattern validates and compiles Options.Pattern. Errors describe the
// problem in the user's terms; the caller names the field.
func compilePattern(pattern string, fixed, ignoreCase bool) (*compiledPattern, error) {
	src := pattern
	if fixed {
		if strings.Contains(pattern, "\n") {
			return nil, errNewline
		}
		src = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Perl &^ syntax.OneLine
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	if _, err := syntax.Parse(src, flags); err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(rewritePerlClasses(src), flags)
	if err != nil {
		if se := (*syntax.Error)(nil); errors.As(err, &se) {
			return nil, fmt.Errorf("%s (after expanding Unicode classes)", se.Code)
		}
		return nil, err
	}
	if hasNewlineLiteral(tree) {
		return nil, errNewline
	}
	lineMode(tree)
	cp := &compiledPattern{m: &matcher{}}
	if !fixed {
		cp.rg = rustRegex(tree)
	}
	m := cp.m
	if tree.Op == syntax.OpLiteral {
		lit := string(tree.Rune)
		if tree.Flags&syntax.FoldCase == 0 {
			m.needles, m.exact = []needle{{b: []byte(lit)}}, true
		} else if seg := foldSegment(lit); len(seg) == len(lit) {
			m.needles, m.fold, m.exact = []needle{{b: seg, fold: true}}, true, true
		}
	}
	if !m.exact {
		re, err := regexp.Compile(tree.String())
		if err != nil {
			return nil, err
		}
		m.re = re
		m.needles = requiredSet(tree)
		for _, n := range m.needles {
			m.fold = m.fold || n.fold
		}
		if m.needles == nil {
			m.first = firstBytes(tree)
		}
	}
	return cp, nil
}

func hasNewlineLiteral(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral && slices.Contains(re.Rune, '\n') {
		return true
	}
	return slices.ContainsFunc(re.Sub, hasNewlineLiteral)
}

// lineMode makes the tree match within one line, as ripgrep does: text
// anchors become line anchors, and nothing matches '\n'.
func lineMode(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		re.Rune = removeNewline(re.Rune)
		if len(re.Rune) == 0 {
			re.Op = syntax.OpNoMatch
		}
	}
	for _, s := range re.Sub {
		lineMode(s)
	}
}

func removeNewline(r []rune) []rune {
	var out []rune
	for i := 0; i+1 < len(r); i += 2 {
		lo, hi := r[i], r[i+1]
		if lo <= '\n' && '\n' <= hi {
			if lo < '\n' {
				out = append(out, lo, '\n'-1)
			}
			if hi > '\n' {
				out = append(out, '\n'+1, hi)
			}
			continue
		}
		out = append(out, lo, hi)
	}
	return out
}

// foldUnsafe marks ASCII letters that case-fold to a non-ASCII rune (k to
// the Kelvin sign, s to long s): an ASCII-lowered search could miss them.
var foldUnsafe = func() (t [128]bool) {
	for c := rune(0); c < 128; c++ {
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				t[c] = true
			}
		}
	}
	return t
}()

// foldSegment returns the longest run of s that an ASCII-lowered search
// finds exactly under Unicode simple case folding, lower-cased.
func foldSegment(s string) []byte {
	best, start := "", 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] >= utf8.RuneSelf || foldUnsafe[s[i]] {
			if i-start > len(best) {
				best = s[start:i]
			}
			start = i + 1
		}
	}
	out := []byte(best)
	lowerASCII(out, out)
	return out
}

// lowerASCII writes src with A-Z lower-cased to dst (same length; may alias).
func lowerASCII(dst, src []byte) {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(src); i += 8 {
		v := binary.LittleEndian.Uint64(src[i:])
		h := v & (0x7f * ones)
		geA := h + (0x80-'A')*ones
		gtZ := h + (0x80-'Z'-1)*ones
		upper := geA &^ gtZ &^ v & (0x80 * ones)
		binary.LittleEndian.PutUint64(dst[i:], v|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// Unicode versions of the Perl classes, as Rust's regex (and so ripgrep)
// defines them: \w is Alphabetic + M + Nd + Pc + Join_Control, \d is Nd,
// \s is White_Space.
var perlClassBodies = sync.OnceValue(func() map[byte]string {
	word := mergeTables(unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control)
	space := mergeTables(unicode.White_Space)
	return map[byte]string{
		'w': classBody(word),
		'W': classBody(complementRanges(word)),
		's': classBody(space),
		'S': classBody(complementRanges(space)),
		'd': `\p{Nd}`,
		'D': `\P{Nd}`,
	}
})

func mergeTables(ts ...*unicode.RangeTable) [][2]rune {
	var rs [][2]rune
	// add appends a table range: whole when its stride is 1, else each
	// member on its own.
	add := func(lo, hi, stride rune) {
		for ; lo <= hi; lo += stride {
			if stride == 1 {
				rs = append(rs, [2]rune{lo, hi})
				return
			}
			rs = append(rs, [2]rune{lo, lo})
		}
	}
	for _, t := range ts {
		for _, r := range t.R16 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
		for _, r := range t.R32 {
			add(rune(r.Lo), rune(r.Hi), rune(r.Stride))
		}
	}
	slices.SortFunc(rs, func(a, b [2]rune) int { return int(a[0] - b[0]) })
	var out [][2]rune
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

func complementRanges(rs [][2]rune) [][2]rune {
	var out [][2]rune
	next := rune(0)
	for _, r := range rs {
		if r[0] > next {
			out = append(out, [2]rune{next, r[0] - 1})
		}
		next = r[1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, [2]rune{next, unicode.MaxRune})
	}
	return out
}

func classBody(rs [][2]rune) string {
	var b strings.Builder
	for _, r := range rs {
		if r[0] == r[1] {
			fmt.Fprintf(&b, `\x{%x}`, r[0])
		} else {
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r[0], r[1])
		}
	}
	return b.String()
}

// rewritePerlClasses replaces \w \W \d \D \s \S with their Unicode
// definitions (Go's are ASCII-only), inside and outside brackets.
func rewritePerlClasses(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	bodies := perlClassBodies()
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			n := p[i+1]
			switch n {
			case 'w', 'W', 'd', 'D', 's', 'S':
				if inClass {
					b.WriteString(bodies[n])
				} else {
					b.WriteString("[" + bodies[n] + "]")
				}
				i++
				continue
			case 'Q':
				if !inClass {
					end := strings.Index(p[i+2:], `\E`)
					if end < 0 {
						b.WriteString(p[i:])
						return b.String()
					}
					b.WriteString(p[i : i+2+end+2])
					i += 2 + end + 1
					continue
				}
			case 'p', 'P':
				b.WriteString(p[i : i+2])
				i++
				if i+1 < len(p) && p[i+1] == '{' {
					if j := strings.IndexByte(p[i+1:], '}'); j >= 0 {
						b.WriteString(p[i+1 : i+2+j])
						i += j + 1
					}
				}
				continue
			}
			b.WriteByte(c)
			b.WriteByte(n)
			i++
			continue
		}
		if inClass {
			if c == '[' && i+1 < len(p) && p[i+1] == ':' {
				if j := strings.Index(p[i+2:], ":]"); j >= 0 {
					b.WriteString(p[i : i+2+j+2])
					i += 2 + j + 1
					continue
				}
			}
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
			continue
		}
		b.WriteByte(c)
		if c == '[' {
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		}
	}
	return b.String()
}

// rustRegex prints a parsed tree in Rust regex syntax for ripgrep, with the
// same meaning as the Go regexp compiled from it. Every non-alphanumeric
// character is written as \x{..}, so no escaping rule can differ.
func rustRegex(re *syntax.Regexp) string {
	var b strings.Builder
	writeRust(&b, re)
	return b.String()
}

func writeRust(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString(rustNoMatch)
	case syntax.OpEmptyMatch:
		b.WriteString(`(?:)`)
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			b.WriteString("(?i:")
		}
		for _, r := range re.Rune {
			writeRustRune(b, r)
		}
		if fold {
			b.WriteString(")")
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			b.WriteString(rustNoMatch)
			return
		}
		var cls strings.Builder
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo >= 0xD800 && lo <= 0xDFFF {
				lo = 0xE000
			}
			if hi >= 0xD800 && hi <= 0xDFFF {
				hi = 0xD7FF
			}
			if lo > hi {
				continue
			}
			fmt.Fprintf(&cls, `\x{%x}-\x{%x}`, lo, hi)
		}
		if cls.Len() == 0 {
			// Only surrogates, which no text contains.
			b.WriteString(rustNoMatch)
			return
		}
		b.WriteString("[" + cls.String() + "]")
	case syntax.OpAnyCharNotNL:
		b.WriteString(`.`)
	case syntax.OpAnyChar:
		b.WriteString(`(?s:.)`)
	case syntax.OpBeginLine:
		b.WriteString(`(?m:^)`)
	case syntax.OpEndLine:
		b.WriteString(`(?m:$)`)
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\z`)
	case syntax.OpWordBoundary:
		b.WriteString(`(?-u:\b)`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`(?-u:\B)`)
	case syntax.OpCapture:
		if re.Name != "" {
			b.WriteString("(?P<" + re.Name + ">")
		} else {
			b.WriteString("(")
		}
		writeRust(b, re.Sub[0])
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		writeRust(b, re.Sub[0])
		b.WriteString(")")
		switch re.Op {
		case syntax.OpStar:
			b.WriteString("*")
		case syntax.OpPlus:
			b.WriteString("+")
		case syntax.OpQuest:
			b.WriteString("?")
		default:
			switch {
			case re.Max == -1:
				fmt.Fprintf(b, "{%d,}", re.Min)
			case re.Max == re.Min:
				fmt.Fprintf(b, "{%d}", re.Min)
			default:
				fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
			}
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteString("?")
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			writeRust(b, s)
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, s := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			writeRust(b, s)
		}
		b.WriteString(")")
	default:
		// Every op the Go parser produces is handled above.
		panic(fmt.Sprintf("search: unexpected regexp op %v", re.Op))
	}
}

// rustNoMatch never matches: Rust rejects empty classes, but no position
// after an 'a' is a line start.
const rustNoMatch = `(?:a(?m:^))`

func writeRustRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (r == '_' || r == ' ' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')) {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\x{%x}`, r)
}
