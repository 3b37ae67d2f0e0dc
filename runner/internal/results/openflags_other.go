//go:build !unix

package results

import "os"

// openReadFlags opens a file for reading; OpenRegular checks its kind before and after.
const openReadFlags = os.O_RDONLY
