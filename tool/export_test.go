package tool

import "encoding/json"

// CompilerAccepts reports whether the schema compiler alone (no
// CheckSchema first) accepts raw, for tests that compare the two.
func CompilerAccepts(raw json.RawMessage) bool {
	_, _, err := compileChecked(raw, nil)
	return err == nil
}
