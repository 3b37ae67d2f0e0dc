//go:build !unix

package results

import (
	"errors"
	"os"
	"path/filepath"
)

var errLocked = errors.New("the folder is in use by a running process")

// acquireLock creates the lock file; without flock, liveness cannot be told apart.
func acquireLock(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
}

// lockHeld assumes that a folder whose manifest says running is still running.
func lockHeld(dir string) bool {
	return hasFile(dir, lockFile)
}
