package ident

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/errdefs"
)

// ValidName agrees with the rule as a regular expression, on every byte
// and at the length bounds.
func TestValidNameIsTheRule(t *testing.T) {
	re := regexp.MustCompile(`^` + NameRule + `$`)
	cases := []string{"", "a", "job-1", "Job", "a_b", "a b", "é", strings.Repeat("a", 63), strings.Repeat("a", 64), "-", "x\x00"}
	for c := 0; c < 256; c++ {
		cases = append(cases, "a"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, s := range cases {
		if got, want := ValidName(s), re.MatchString(s); got != want {
			t.Errorf("ValidName(%q) = %v, the rule says %v", s, got, want)
		}
	}
	err := CheckName("name", "Foo")
	if !errors.Is(err, errdefs.ErrInvalid) || err.Error() != `name "Foo": must match [a-z0-9-]{1,63}` {
		t.Errorf("CheckName: %v", err)
	}
	if CheckName("name", "foo") != nil {
		t.Error("CheckName refused a good name")
	}
}
