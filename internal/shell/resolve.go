package shell

import "errors"

// Errors returned by Resolve, to be matched with errors.Is.
var (
	// ErrNotAllowed means the requested shell is not allowed on this platform.
	ErrNotAllowed = errors.New("shell not allowed")
	// ErrNotFound means no executable was found for an allowed shell.
	ErrNotFound = errors.New("shell not found")
)

// ruleError is an error whose text names the field and the rule that failed and
// which matches one of the sentinels above with errors.Is.
type ruleError struct {
	text string
	kind error
}

func (e *ruleError) Error() string { return e.text }
func (e *ruleError) Unwrap() error { return e.kind }

// zshReason explains why zsh in particular is refused.
const zshReason = "zsh has command classes that bypass bash-shaped checks"
