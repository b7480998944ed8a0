//go:build !linux

package localsandbox

import (
	"errors"
	"time"
)

// rawOpen is false here: grep opens files through os.Root.
const rawOpen = false

func openAt(int, string) (int, error) {
	return -1, errors.New("openAt is only used on linux")
}

func fdModTime(int) (time.Time, error) {
	return time.Time{}, errors.New("fdModTime is only used on linux")
}

func closeFd(int) {}

type fdReader int

func (fdReader) Read([]byte) (int, error) { return 0, errors.New("fdReader is only used on linux") }
