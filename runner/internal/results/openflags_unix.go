//go:build unix

package results

import (
	"os"
	"syscall"
)

// openReadFlags opens a file for reading without blocking, so that a named pipe in the place
// of a result file cannot hang the reader before OpenRegular sees what it is.
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK
