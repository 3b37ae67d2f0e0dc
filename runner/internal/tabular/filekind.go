package tabular

import "io/fs"

// FileKind names the kind of file that mode describes, for an error that refuses a file that is
// not a regular one: "a directory", "a named pipe", and so on. A mode from os.Lstat may be "a
// symbolic link"; one from os.Stat never is. Every command words such refusals alike with it.
func FileKind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
