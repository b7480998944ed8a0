// Package cli is the aibuddy command line: a thin layer over the library.
//
//	aibuddy mcp     serve the run's effective tool set as an MCP server
//	aibuddy call    run one tool call through the whole pipeline
//	aibuddy tools   explain the effective tool set and every exclusion
//
// Exit codes: 0 success; 1 the tool call failed (an error result); 2 bad
// usage, bad settings or a start-up check that failed; 3 the plane itself
// failed.
package cli
