// Package ident is the one rule for the names a caller gives to jobs and
// PTY sessions: every surface checks a name with CheckName, so the rule
// and its error read the same everywhere.
package ident

import (
	"github.com/hivetools/hive/internal/errdefs"
)

// NameRule is the rule a name must match, as error messages and flag
// help spell it.
const NameRule = "[a-z0-9-]{1,63}"

// ValidName reports whether name matches NameRule: 1 to 63 bytes of
// lower-case ASCII letters, digits and '-'.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// CheckName returns nil for a name that matches NameRule, else an error
// of class errdefs.ErrInvalid that names the field and the rule:
// `name "Foo": must match [a-z0-9-]{1,63}`. An empty name is the
// caller's to allow (most names are optional) and is refused here.
func CheckName(field, name string) error {
	if ValidName(name) {
		return nil
	}
	return errdefs.Newf(errdefs.ErrInvalid, "%s %q: must match %s", field, name, NameRule)
}
