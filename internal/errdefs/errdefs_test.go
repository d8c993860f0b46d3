package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassesCrossTheWire(t *testing.T) {
	notFound := New(ErrNotFound, "no such job")
	busy := New(ErrConflict, "name in use")
	for _, tc := range []struct {
		name  string
		err   error
		code  string
		class error
	}{
		{"sentinel", notFound, CodeNotFound, ErrNotFound},
		{"wrapped", fmt.Errorf("job %q: %w", "x", notFound), CodeNotFound, ErrNotFound},
		{"conflict", fmt.Errorf("name %q: %w", "n", busy), CodeConflict, ErrConflict},
		{"marked", Wrap(ErrUnavailable, errors.New("holder does not answer")), CodeUnavailable, ErrUnavailable},
		{"a class itself", ErrInvalid, CodeInvalid, ErrInvalid},
		{"outermost wins", Wrap(ErrConflict, fmt.Errorf("x: %w", notFound)), CodeConflict, ErrConflict},
		{"policy", Newf(ErrPolicy, "refused by policy: deny rule %q matches %q", "git push --force", "git push -f"), CodePolicy, ErrPolicy},
		{"plain", errors.New("boom"), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Code(tc.err); got != tc.code {
				t.Fatalf("Code(%v) = %q, want %q", tc.err, got, tc.code)
			}
			back := FromWire(Code(tc.err), tc.err.Error())
			if back.Error() != tc.err.Error() {
				t.Fatalf("FromWire text %q, want %q", back.Error(), tc.err.Error())
			}
			if tc.class != nil && !errors.Is(back, tc.class) {
				t.Fatalf("FromWire(%q) is not %v", tc.code, tc.class)
			}
			for _, c := range classes {
				if c.err != tc.class && errors.Is(back, c.err) {
					t.Fatalf("FromWire(%q) is also %v", tc.code, c.err)
				}
			}
		})
	}
	if !errors.Is(fmt.Errorf("w: %w", notFound), notFound) {
		t.Fatal("a wrapped sentinel is not itself")
	}
	if errors.Is(notFound, New(ErrNotFound, "no such job")) {
		t.Fatal("two sentinels of one class and text are the same error")
	}
	if Wrap(ErrInvalid, nil) != nil {
		t.Fatal("Wrap of nil is not nil")
	}
}
