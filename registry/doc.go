// Package registry holds the tool contracts of aibuddy (the seed's
// tool-registry): tool groups (the seed's ServerToolConfig), their metadata
// (TOOL_CONFIG_METAS) and the tool-name → group mapping, plus
// [Registry.AssertConsistent], which start-up runs so that the UI and the
// runtime can never ship different tool sets silently.
//
// Registration does not grant authority: what one run may use is computed by
// package capability from this registry and the run's configuration.
package registry
