package tool

import (
	"crypto/rand"
	"encoding/hex"
)

// NewCallID returns a toolCallId of aibuddy's own: prefix followed by 24
// random hex digits (96 bits from crypto/rand), e.g. "call_3f9c…". Records
// are keyed on it, so it must not repeat across processes that share a
// data folder; provider-issued ids (which do repeat in the wild, e.g.
// "call_0" every turn) are kept beside it as data (Call.ProviderID).
func NewCallID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
