package httpfront

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// maxTokenFile bounds a token file.
const maxTokenFile = 4096

// tokenFile is the bearer token of the HTTP front end, kept in a file.
// The file is re-read when it changes (its size, modification time, mode
// or inode differ from the version read last), so a token is rotated by
// rewriting the file, without a restart. While the file is unusable
// (missing, empty, readable by others, ...) every request is refused;
// there is never a fallback to no authentication. Safe for concurrent use.
type tokenFile struct {
	path string
	// name is how errors name the file's origin: "--http-token-file" or
	// "generated http token file".
	name string
	// noFollow refuses a symbolic link (the generated file: hive made it
	// and it was not a link).
	noFollow bool
	// fix is added to the errors about the content (how to get a good file).
	fix string
	log *slog.Logger

	mu  sync.Mutex
	fi  os.FileInfo // the file as last read; nil when it could not be opened
	sum [sha256.Size]byte
	err error // why the file as last read is unusable
}

// load reads and checks the file. It returns the error that makes the
// file unusable.
func (t *tokenFile) load() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fi, t.sum, t.err = t.read()
	return t.err
}

// current returns the SHA-256 digest of the token in force. It stats the
// file and re-reads it when it changed; the error says why the file is
// unusable now. Each change of state is logged once.
func (t *tokenFile) current() ([sha256.Size]byte, error) {
	fi, serr := t.stat()
	t.mu.Lock()
	defer t.mu.Unlock()
	if serr == nil && t.fi != nil && sameVersion(fi, t.fi) {
		return t.sum, t.err
	}
	prev := t.err
	t.fi, t.sum, t.err = t.read()
	switch {
	case t.err == nil:
		t.log.Info("http token file re-read", "file", t.path)
	case prev == nil || prev.Error() != t.err.Error():
		t.log.Error("http token file unusable: every HTTP request is refused until it is fixed", "file", t.path, "err", t.err)
	}
	return t.sum, t.err
}

func (t *tokenFile) stat() (os.FileInfo, error) {
	if t.noFollow {
		return os.Lstat(t.path)
	}
	return os.Stat(t.path)
}

// sameVersion reports whether a and b describe the same version of a file.
func sameVersion(a, b os.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode() && os.SameFile(a, b) &&
		changeTime(a).Equal(changeTime(b)) // a rewrite that kept the old mtime (cp -p) still changes the ctime
}

// read opens the file, checks it (a regular file, not readable or
// writable by group or others, one printable token) and returns what it
// read: the file's metadata (nil if it could not be opened), the token's
// digest, and why it is unusable.
func (t *tokenFile) read() (os.FileInfo, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s %q: %s", t.name, t.path, fmt.Sprintf(format, args...))
	}
	// Check the type before opening: opening a FIFO could block.
	fi, err := t.stat()
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", t.name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, sum, bad("not a regular file (mode %v)", fi.Mode())
	}
	flags := os.O_RDONLY | openNonBlock
	if t.noFollow {
		flags |= openNoFollow
	}
	f, err := os.OpenFile(t.path, flags, 0)
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", t.name, err)
	}
	defer f.Close()
	fi, err = f.Stat() // what was opened, not what the name points to now
	if err != nil {
		return nil, sum, fmt.Errorf("%s: %w", t.name, err)
	}
	if !fi.Mode().IsRegular() {
		return fi, sum, bad("not a regular file (mode %v)", fi.Mode())
	}
	if err := checkTokenPerm(fi); err != nil {
		return fi, sum, bad("%v; run chmod 600 %q", err, t.path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return fi, sum, fmt.Errorf("%s: read %q: %w", t.name, t.path, err)
	}
	if len(b) > maxTokenFile {
		return fi, sum, bad("longer than %d bytes%s", maxTokenFile, t.fix)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return fi, sum, bad("file is empty (want one token on one line)%s", t.fix)
	}
	for _, c := range []byte(tok) {
		if c <= ' ' || c > '~' {
			return fi, sum, bad("the token must be one word of printable ASCII, without spaces%s", t.fix)
		}
	}
	return fi, sha256.Sum256([]byte(tok)), nil
}

// authorized reports whether the request's Authorization header values
// carry the token whose digest is want. The comparison takes the same
// time whatever the token.
func authorized(values []string, want [sha256.Size]byte) bool {
	tok, ok := bearer(values)
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// bearer returns the token of an Authorization header "Bearer TOKEN"
// (RFC 6750 §2.1): exactly one such header, the scheme in any case, then
// spaces, then one token without white space. Anything else (a raw
// token, another scheme, two words) is not a bearer token.
func bearer(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// generateToken writes a new random token (32 bytes, hex) to path with
// mode 0600, unless path exists. It creates the file exclusively and
// never through a symbolic link. It reports whether it created the file.
func generateToken(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openNoFollow, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("generate http token file: %w", err)
	}
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	_, err = f.Write([]byte(hex.EncodeToString(b[:]) + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return false, fmt.Errorf("generate http token file %q: %w", path, err)
	}
	return true, nil
}
