package search

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// pathGlob is one compiled glob in ripgrep's dialect (the one its
// .gitignore files, --glob and --type definitions share): `*` and `?` never
// match '/', `**` is recursive only as a whole path component, `[...]`
// classes (negated with `!` or `^`), `{a,b}` alternation (not nested), and
// `\` escapes the next character. A glob matches the whole path.
type pathGlob struct {
	alts [][]globTok // brace expansions; the glob matches if any does
	fast fastKind
	lit  string
}

type fastKind uint8

const (
	fastNone       fastKind = iota
	fastExact               // the path equals lit
	fastBasename            // **/lit: the last component equals lit
	fastSuffix              // **/*lit: the last component ends with lit
	fastStarSuffix          // *lit: no '/' and ends with lit
)

type globTokKind uint8

const (
	tokLit       globTokKind = iota
	tokAny                   // ?: one byte, not '/'
	tokStar                  // *: any run of bytes without '/'
	tokClass                 // [...]: one character
	tokRecPrefix             // leading **/: "", "/" or anything ending in '/'
	tokRecSuffix             // trailing /**: '/' then anything
	tokRecMid                // /**/: "/" or "/anything/"
	tokAll                   // the whole glob is **: everything
)

type globTok struct {
	kind   globTokKind
	lit    string
	neg    bool
	ranges []rune // pairs lo, hi
}

const maxGlobExpansions = 1024

var errGlobTooManyAlternatives = errors.New("too many alternatives in braces")

func compileGlob(pattern string) (*pathGlob, error) {
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &pathGlob{}
	for _, alt := range expanded {
		toks, err := parseGlobToks(alt)
		if err != nil {
			return nil, err
		}
		g.alts = append(g.alts, toks)
	}
	if len(g.alts) == 1 {
		t := g.alts[0]
		switch {
		case len(t) == 1 && t[0].kind == tokLit:
			g.fast, g.lit = fastExact, t[0].lit
		case len(t) == 2 && t[0].kind == tokRecPrefix && t[1].kind == tokLit && !strings.Contains(t[1].lit, "/"):
			g.fast, g.lit = fastBasename, t[1].lit
		case len(t) == 3 && t[0].kind == tokRecPrefix && t[1].kind == tokStar && t[2].kind == tokLit && !strings.Contains(t[2].lit, "/"):
			g.fast, g.lit = fastSuffix, t[2].lit
		case len(t) == 2 && t[0].kind == tokStar && t[1].kind == tokLit && !strings.Contains(t[1].lit, "/"):
			g.fast, g.lit = fastStarSuffix, t[1].lit
		}
	}
	return g, nil
}

// match reports whether the glob matches the whole of path (slash-separated).
func (g *pathGlob) match(path string) bool {
	switch g.fast {
	case fastExact:
		return path == g.lit
	case fastBasename:
		return path == g.lit || (strings.HasSuffix(path, g.lit) && path[len(path)-len(g.lit)-1] == '/')
	case fastSuffix:
		base := path[strings.LastIndexByte(path, '/')+1:]
		return strings.HasSuffix(base, g.lit)
	case fastStarSuffix:
		return strings.HasSuffix(path, g.lit) && strings.IndexByte(path, '/') < 0
	}
	for _, t := range g.alts {
		if matchGlobToks(t, path) {
			return true
		}
	}
	return false
}

// scanGlob walks the glob pattern p from byte index i and calls top with
// the index of each byte outside character classes that is not escaped (the
// `\` of an escape is passed, the byte it escapes is skipped). A class runs
// from `[` to the next `]`, except that a `]` first in the class (after an
// optional `!` or `^`) is a member. The walk stops at the first byte for
// which top returns false and returns its index, or returns -1 at the end.
func scanGlob(p string, i int, top func(i int) bool) int {
	inClass := false
	classStart := 0
	for ; i < len(p); i++ {
		c := p[i]
		switch {
		case inClass:
			if c == ']' && i > classStart {
				inClass = false
			}
			continue
		case c == '[':
			inClass = true
			classStart = i + 1
			if classStart < len(p) && (p[classStart] == '!' || p[classStart] == '^') {
				classStart++
			}
			continue
		}
		if !top(i) {
			return i
		}
		if c == '\\' {
			i++
		}
	}
	return -1
}

// expandBraces turns "a{b,c}d" into ["abd", "acd"], keeping escapes and
// character classes intact for the token parser.
func expandBraces(p string) ([]string, error) {
	open := scanGlob(p, 0, func(i int) bool { return p[i] != '{' })
	if open < 0 {
		return []string{stripStrayCloseBraces(p)}, nil
	}
	// Find the matching close and the top-level commas.
	var parts []string
	start := open + 1
	end := scanGlob(p, open+1, func(i int) bool {
		switch p[i] {
		case '{', '}':
			return false
		case ',':
			parts = append(parts, p[start:i])
			start = i + 1
		}
		return true
	})
	switch {
	case end < 0:
		return nil, errors.New("unclosed alternate group; missing '}'")
	case p[end] == '{':
		return nil, errors.New("nested alternate groups are not allowed")
	}
	parts = append(parts, p[start:end])
	prefix := p[:open]
	rest, err := expandBraces(p[end+1:])
	if err != nil {
		return nil, err
	}
	if len(parts)*len(rest) > maxGlobExpansions {
		return nil, errGlobTooManyAlternatives
	}
	out := make([]string, 0, len(parts)*len(rest))
	for _, a := range parts {
		for _, r := range rest {
			out = append(out, prefix+a+r)
		}
	}
	return out, nil
}

// stripStrayCloseBraces drops unescaped '}' outside classes: ripgrep treats
// an unopened '}' as an empty group, not as a literal. A dangling '\' at the
// end comes back doubled, so the token parser reads it as an escaped '\'
// rather than rejecting it as ripgrep does.
func stripStrayCloseBraces(p string) string {
	if !strings.Contains(p, "}") {
		return p
	}
	var b strings.Builder
	kept := 0 // p[:kept] is written
	scanGlob(p, 0, func(i int) bool {
		switch {
		case p[i] == '}':
			b.WriteString(p[kept:i])
			kept = i + 1
		case p[i] == '\\' && i == len(p)-1:
			b.WriteString(p[kept:])
			b.WriteByte('\\')
			kept = len(p)
		}
		return true
	})
	b.WriteString(p[kept:])
	return b.String()
}

func parseGlobToks(p string) ([]globTok, error) {
	var toks []globTok
	addLit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].kind == tokLit {
			toks[n-1].lit += s
			return
		}
		toks = append(toks, globTok{kind: tokLit, lit: s})
	}
	// dropSlash removes the '/' that precedes a recursive ** from the
	// previous literal; the recursive token matches it itself.
	dropSlash := func() {
		n := len(toks)
		if n > 0 && toks[n-1].kind == tokLit && strings.HasSuffix(toks[n-1].lit, "/") {
			toks[n-1].lit = toks[n-1].lit[:len(toks[n-1].lit)-1]
			if toks[n-1].lit == "" {
				toks = toks[:n-1]
			}
		}
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) {
				return nil, errors.New("dangling '\\'")
			}
			_, size := utf8.DecodeRuneInString(p[i+1:])
			addLit(p[i+1 : i+1+size])
			i += 1 + size
		case '?':
			toks = append(toks, globTok{kind: tokAny})
			i++
		case '[':
			tok, n, err := parseGlobClass(p[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i += n
		case '*':
			if i+1 >= len(p) || p[i+1] != '*' {
				toks = append(toks, globTok{kind: tokStar})
				i++
				continue
			}
			atEnd := i+2 >= len(p)
			nextSep := !atEnd && p[i+2] == '/'
			switch {
			case len(toks) == 0 && i == 0:
				switch {
				case atEnd:
					toks = append(toks, globTok{kind: tokAll})
					i += 2
				case nextSep:
					toks = append(toks, globTok{kind: tokRecPrefix})
					i += 3
				default:
					toks = append(toks, globTok{kind: tokStar})
					i += 2
				}
			case i == 0 || p[i-1] != '/':
				toks = append(toks, globTok{kind: tokStar})
				i += 2
			case atEnd:
				if n := len(toks); n > 0 && toks[n-1].kind == tokRecPrefix {
					// "**/**" is "**".
					toks[n-1].kind = tokAll
				} else if n > 0 && toks[n-1].kind == tokRecMid {
					// "a/**/**" is "a/**".
					toks[n-1].kind = tokRecSuffix
				} else {
					dropSlash()
					toks = append(toks, globTok{kind: tokRecSuffix})
				}
				i += 2
			case nextSep:
				if n := len(toks); n > 0 && (toks[n-1].kind == tokRecPrefix || toks[n-1].kind == tokRecMid) {
					// Collapse "**/**/".
				} else {
					dropSlash()
					toks = append(toks, globTok{kind: tokRecMid})
				}
				i += 3
			default:
				toks = append(toks, globTok{kind: tokStar})
				i += 2
			}
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			addLit(p[i : i+size])
			i += size
		}
	}
	return toks, nil
}

func parseGlobClass(p string) (globTok, int, error) {
	tok := globTok{kind: tokClass}
	i := 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		tok.neg = true
		i++
	}
	first := true
	for {
		if i >= len(p) {
			return tok, 0, errors.New("unclosed character class; missing ']'")
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == ']' && !first {
			i++
			break
		}
		first = false
		i += size
		lo, hi := r, r
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			r2, size2 := utf8.DecodeRuneInString(p[i+1:])
			if r2 < lo {
				return tok, 0, fmt.Errorf("invalid range; '%c' > '%c'", lo, r2)
			}
			hi = r2
			i += 1 + size2
		}
		tok.ranges = append(tok.ranges, lo, hi)
	}
	return tok, i, nil
}

func (t *globTok) classMatch(r rune) bool {
	in := false
	for i := 0; i+1 < len(t.ranges); i += 2 {
		if t.ranges[i] <= r && r <= t.ranges[i+1] {
			in = true
			break
		}
	}
	return in != t.neg
}

func matchGlobToks(toks []globTok, s string) bool {
	for len(toks) > 0 {
		t := &toks[0]
		rest := toks[1:]
		switch t.kind {
		case tokLit:
			if !strings.HasPrefix(s, t.lit) {
				return false
			}
			s = s[len(t.lit):]
		case tokAny:
			if s == "" || s[0] == '/' {
				return false
			}
			s = s[1:]
		case tokClass:
			if s == "" {
				return false
			}
			r, size := utf8.DecodeRuneInString(s)
			if !t.classMatch(r) {
				return false
			}
			s = s[size:]
		case tokStar:
			if len(rest) == 0 {
				return strings.IndexByte(s, '/') < 0
			}
			for i := 0; ; i++ {
				if matchGlobToks(rest, s[i:]) {
					return true
				}
				if i >= len(s) || s[i] == '/' {
					return false
				}
			}
		case tokRecPrefix:
			if matchGlobToks(rest, s) {
				return true
			}
			for i := 0; i < len(s); i++ {
				if s[i] == '/' && matchGlobToks(rest, s[i+1:]) {
					return true
				}
			}
			return false
		case tokRecMid:
			if s == "" || s[0] != '/' {
				return false
			}
			for i := 0; i < len(s); i++ {
				if s[i] == '/' && matchGlobToks(rest, s[i+1:]) {
					return true
				}
			}
			return false
		case tokRecSuffix:
			if s == "" || s[0] != '/' {
				return false
			}
			if len(rest) == 0 {
				return true
			}
			for i := 1; i <= len(s); i++ {
				if matchGlobToks(rest, s[i:]) {
					return true
				}
			}
			return false
		case tokAll:
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchGlobToks(rest, s[i:]) {
					return true
				}
			}
			return false
		}
		toks = rest
	}
	return s == ""
}
