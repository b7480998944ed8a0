//go:build !linux

package localsandbox

import "os"

// openBeneathFast: no openat2 here; openDirBeneath walks the components.
func (s *Sandbox) openBeneathFast(string) (*os.File, bool, error) { return nil, false, nil }
