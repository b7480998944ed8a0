//go:build unix

package sqlitestore

import (
	"errors"
	"os"
	"syscall"
)

// canLock: owner locks work here (flock).
const canLock = true

// lockFile takes an exclusive lock on f without waiting.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// tryLock takes an exclusive lock on f without waiting and reports whether
// it got it (false: another open file holds it).
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
