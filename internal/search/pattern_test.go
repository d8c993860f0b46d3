package search

import (
	"reflect"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestRequiredSet(t *testing.T) {
	tests := []struct {
		pattern    string
		ignoreCase bool
		want       []string // needles; fold ones are lower-case
	}{
		{`func \w+Handler\(`, false, []string{"Handler("}},
		{`ELF|PNG|GIF8`, false, []string{"ELF", "PNG", "GIF8"}},
		{`foobar|foobaz`, false, []string{"fooba"}},
		{`(ab)+cd`, false, []string{"ab"}},
		{`a|b*`, false, nil},
		{`x?yz?`, false, []string{"y"}},
		{`Task`, true, []string{"ta"}}, // k folds to the Kelvin sign
		{`ÉTÉ`, true, []string{"t"}},
		{`[a-z]+`, false, nil},
	}
	for _, tt := range tests {
		flags := syntax.Perl &^ syntax.OneLine
		if tt.ignoreCase {
			flags |= syntax.FoldCase
		}
		re, err := syntax.Parse(tt.pattern, flags)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range requiredSet(re) {
			got = append(got, string(n.b))
			if n.fold != tt.ignoreCase {
				t.Errorf("%q: needle %q fold = %v", tt.pattern, n.b, n.fold)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("requiredSet(%q) = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func TestFirstBytes(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // the bytes, or "" for no prefilter
	}{
		{`[\x01-\x03]x`, "\x01\x02\x03"},
		{`\bab|cd`, "ac"},
		{`a?b`, "ab"},
		{`x*`, ""},
		{`.y`, ""},
		{`(?i)k`, "Kk\xe2"},
	}
	for _, tt := range tests {
		re, err := syntax.Parse(tt.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		set := firstBytes(re)
		var got strings.Builder
		if set != nil {
			for c, in := range set {
				if in {
					got.WriteByte(byte(c))
				}
			}
		}
		if got.String() != tt.want {
			t.Errorf("firstBytes(%q) = %q, want %q", tt.pattern, got.String(), tt.want)
		}
	}
}

func TestCompilePattern(t *testing.T) {
	tests := []struct {
		pattern      string
		fixed, icase bool
		exact        bool
		rg           string // substring of the pattern given to rg
	}{
		{pattern: "func main", exact: true, rg: "func main"},
		{pattern: "a.b", fixed: true, exact: true},
		{pattern: "abc", icase: true, exact: true, rg: "(?i:ABC)"},
		{pattern: "task", icase: true, fixed: true},
		{pattern: `\bx\b`, rg: `(?-u:\b)x(?-u:\b)`},
		{pattern: `^a$`, exact: false, rg: `(?m:^)a(?m:$)`},
		{pattern: `\Aa\z`, rg: `(?m:^)a(?m:$)`},
		{pattern: `[^a]`, rg: `[\x{0}-\x{9}\x{b}-\x{60}`}, // no newline in classes
	}
	for _, tt := range tests {
		cp, err := compilePattern(tt.pattern, tt.fixed, tt.icase)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if cp.m.exact != tt.exact {
			t.Errorf("%q: exact = %v, want %v", tt.pattern, cp.m.exact, tt.exact)
		}
		if !strings.Contains(cp.rg, tt.rg) {
			t.Errorf("%q: rg pattern %q does not contain %q", tt.pattern, cp.rg, tt.rg)
		}
	}
}

func TestLowerASCII(t *testing.T) {
	in := []byte("Hello, WORLD! @[`{ ÄÖ 0123456789 AZaz")
	out := make([]byte, len(in))
	lowerASCII(out, in)
	if want := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 32
		}
		return r
	}, string(in)); string(out) != want {
		t.Errorf("lowerASCII = %q, want %q", out, want)
	}
}
