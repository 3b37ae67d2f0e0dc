package tabular

import (
	"io/fs"
	"testing"
)

// TestFileKind checks the words for each kind of file a command refuses.
func TestFileKind(t *testing.T) {
	for _, tt := range []struct {
		mode fs.FileMode
		want string
	}{
		{0o644, "a regular file"},
		{fs.ModeSymlink | 0o777, "a symbolic link"},
		{fs.ModeDir | 0o755, "a directory"},
		{fs.ModeNamedPipe | 0o600, "a named pipe"},
		{fs.ModeDevice | fs.ModeCharDevice | 0o666, "a character device"},
		{fs.ModeDevice | 0o660, "a block device"},
		{fs.ModeSocket | 0o755, "a socket"},
		{fs.ModeIrregular, "a special file"},
	} {
		if got := FileKind(tt.mode); got != tt.want {
			t.Errorf("FileKind(%v) = %q, want %q", tt.mode, got, tt.want)
		}
	}
}
