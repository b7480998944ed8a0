// Package capability computes the effective tool set of one run (seed: "The
// registry defines contracts; each run defines capability"): the
// intersection of the configured tool keys, the injected capability
// services, the connected MCP servers, what the sandbox supports, and
// prerequisites. Every tool left out carries its reason, so a host can show
// why a tool is missing instead of exposing an action that must fail.
//
// Nothing here performs an effect: the capability plane only decides what
// the model may see.
package capability
