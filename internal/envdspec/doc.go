// Package envdspec holds the Go code generated from E2B envd's protocol
// files (process/process.proto, filesystem/filesystem.proto), copied
// unchanged from github.com/e2b-dev/infra, packages/envd/spec/ (see
// NOTICE). Regenerate with `go generate` in this folder; buf compiles the
// files (no system protoc) and runs protoc-gen-go and protoc-gen-connect-go
// through `go run` at the versions pinned in buf.gen.yaml.
package envdspec

//go:generate go run github.com/bufbuild/buf/cmd/buf@v1.75.0 generate
