//go:build unix

package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// errLocked reports that another live process holds a folder.
var errLocked = errors.New("the folder is in use by a running process")

// acquireLock takes the folder's lock, which a writer holds for as long as it runs. The
// kernel releases it when the process dies, however it dies, which is how a reader tells an
// interrupted run from a running one.
func acquireLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	return f, nil
}

// lockHeld reports whether a live process holds the folder's lock.
func lockHeld(dir string) bool {
	f, err := OpenRegular(filepath.Join(dir, lockFile))
	if err != nil {
		return false // a lock file that is not a regular file is no writer's
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
