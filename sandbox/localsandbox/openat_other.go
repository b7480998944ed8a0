//go:build !linux

package localsandbox

import (
	"errors"
	"time"
)

// rawOpen is false here: grep opens files through os.Root.
const rawOpen = false

func openAt(int, string) (int, int64, time.Time, error) {
	return -1, 0, time.Time{}, errors.New("openAt is only used on linux")
}

func closeFd(int) {}

type fdReader int

func (fdReader) Read([]byte) (int, error) { return 0, errors.New("fdReader is only used on linux") }
