package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SafeFileName makes an id (a task id or a toolCallId from a provider, a
// host or a caller) a safe file name: characters outside [A-Za-z0-9._-]
// become '_', at most 100 bytes are kept, and a name that is empty, starts
// with '.' or had to change gets "~" and 8 hex digits of the id's SHA-256,
// so distinct ids never share a name and none is "..", hidden or a path.
// Used for the offloaded records (compacted_outputs/<taskId>/<toolCallId>.json)
// and execute's full output (outputs/<taskId>/<toolCallId>.log).
func SafeFileName(id string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, id)
	if len(s) > 100 {
		s = s[:100]
	}
	if s != id || s == "" || strings.HasPrefix(s, ".") {
		sum := sha256.Sum256([]byte(id))
		s = strings.TrimLeft(s, ".") + "~" + hex.EncodeToString(sum[:4])
	}
	return s
}
