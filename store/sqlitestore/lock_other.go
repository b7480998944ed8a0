//go:build !unix

package sqlitestore

import "os"

// canLock: no owner locks on this system; running records are never
// marked interrupted (a live writer's calls could not be told apart).
const canLock = false

func lockFile(f *os.File) error { return nil }

func tryLock(f *os.File) (bool, error) { return false, nil }
