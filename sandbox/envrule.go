package sandbox

import (
	"fmt"
	"strings"
)

// ValidEnvOverride reports whether o is an environment override a sandbox
// applies to a command (settings limits.execEnv):
// NAME, NAME=VALUE or -NAME, where NAME is letters, digits and '_' and
// does not start with a digit. The error says what is wrong.
func ValidEnvOverride(o string) error {
	k, _, set := strings.Cut(o, "=")
	if strings.HasPrefix(k, "-") {
		if set {
			return fmt.Errorf("%q: -NAME removes a variable and takes no value", o)
		}
		k = k[1:]
	}
	if k == "" {
		return fmt.Errorf("%q: no variable name (want NAME, NAME=VALUE or -NAME)", o)
	}
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%q: %q is not a variable name (letters, digits and _, not starting with a digit)", o, k)
		}
	}
	return nil
}
