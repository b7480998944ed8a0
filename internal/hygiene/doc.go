// Package hygiene holds only a test: the repo's own promises (every package
// has a doc.go, go.mod is tidy, no machine paths are written into the tree),
// checked with the rest of the suite.
package hygiene
