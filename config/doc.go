// Package config reads aibuddy's settings file: one JSON document that holds
// aibuddy's own settings (tool keys, sandbox, limits) beside the
// "mcpServers" object in the format Claude Desktop, Claude Code and Cursor
// use, so a user can point aibuddy at the file they already keep.
//
// Every number the seed names is a default here and can be changed:
// 30,000 characters of command output, 30 s heartbeat and 30 s grace, the
// filesystem bounds. Unknown keys are errors (a typo never silently falls
// back to a default), and every error names the file and the key.
package config
