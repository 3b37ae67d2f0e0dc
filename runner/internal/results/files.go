package results

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/onelayerdown/runner/runner/internal/tabular"
)

// The caps on what a reader takes from a folder. A folder may come from anywhere, and a file
// that never ends (a link to /dev/zero, one endless line) must end in an error that names it,
// not in the process running out of memory. Each cap is far above what a real folder holds.
const (
	// MaxManifestBytes caps manifest.json and datapackage.json: a manifest holds the
	// experiment file and its expanded configs, a few KiB each.
	MaxManifestBytes = 64 << 20
	// MaxLineBytes caps one line of a CSV file (one record) or of a JSON Lines file (one
	// request's generated text or error).
	MaxLineBytes = 16 << 20
	// MaxRowFileBytes caps a row file that resume and discard read whole to rewrite it.
	MaxRowFileBytes = 4 << 30
)

// OpenRegular opens path for reading, and only if it is a regular file (a symbolic link is
// followed): a named pipe would block the reader forever and a device may never end. The file
// is opened without blocking and checked again once open, so that a pipe put in its place
// between the check and the open cannot block either. A missing file's error satisfies
// errors.Is(err, fs.ErrNotExist).
func OpenRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, openReadFlags, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, st.Mode())
	}
	return f, nil
}

// notRegular says that path is not a regular file, and what it is instead.
func notRegular(path string, mode fs.FileMode) error {
	return fmt.Errorf("%s is not a regular file (it is %s)", path, tabular.FileKind(mode))
}

// ReadRegular reads the regular file path whole, refusing one of more than limit bytes with an
// error that names the file and the cap.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, tooBig(path, limit)
	}
	// The file may grow while it is read: read one byte past the cap to tell.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooBig(path, limit)
	}
	return b, nil
}

// tooBig says that path is over the cap of limit bytes.
func tooBig(path string, limit int64) error {
	return fmt.Errorf("%s is larger than the cap of %s for this file: not a file this runner wrote", path, sizeText(limit))
}

// sizeText writes a cap in MiB or GiB.
func sizeText(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// LineCapError reports a line (a CSV record, a JSON line) longer than MaxLineBytes: a file this
// runner did not write, such as one endless line, which would otherwise be read into memory
// whole.
type LineCapError struct {
	File string
	Line int
	Cap  int64
}

func (e *LineCapError) Error() string {
	return fmt.Sprintf("%s:%d: a line longer than the cap of %s: not a file this runner wrote", e.File, e.Line, sizeText(e.Cap))
}

// CapLines returns a reader of r, the CSV file named file, that fails with a *LineCapError as
// soon as one record runs past MaxLineBytes. A record ends at a line break outside quotes, so a
// quoted cell that spans lines counts whole; the reader tracks quotes as the CSV dialect sets
// them, and needs nothing from the CSV reader above it.
func CapLines(r io.Reader, file string) io.Reader {
	return &lineCap{r: r, file: file, max: MaxLineBytes, line: 1, start: 1}
}

// lineCap is the reader of CapLines.
type lineCap struct {
	r      io.Reader
	file   string
	max    int64
	n      int64 // bytes of the record so far
	quoted bool  // inside a quoted cell
	line   int   // the current line
	start  int   // the line the record started on
	err    error
}

func (l *lineCap) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i, b := range p[:n] {
		l.n++
		switch b {
		case '"':
			l.quoted = !l.quoted
		case '\n':
			l.line++
			if !l.quoted {
				l.n, l.start = 0, l.line
			}
		}
		if l.n > l.max {
			// Hand over what comes before the cap, then the error: the records before it read.
			l.err = &LineCapError{File: l.file, Line: l.start, Cap: l.max}
			return i, l.err
		}
	}
	return n, err
}
