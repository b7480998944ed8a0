// Package skills loads Agent Skills and serves them to the model on demand:
// its one job is the skill catalogue and the view_skill tool.
//
// A skill is a folder holding a SKILL.md file in Anthropic's Agent Skills
// format: YAML front matter with at least "name" and "description" (optional
// fields such as "license", "allowed-tools" and "metadata" are kept in
// [Skill.Meta]), followed by Markdown instructions. Every other file in the
// folder is one of the skill's reference files (documents, templates,
// scripts).
//
// Following the seed (tools-and-execution.md, "The catalog narrows
// progressively into the active tool set"): "Skills initially expose only a
// name and purpose; the agent reads complete instructions and references
// through view_skill after selecting one". So [Catalog.Summary] is what the
// system prompt carries (one line per skill); view_skill's own description
// names the skills too, bounded by [ViewOptions] (30 skills, 4,000
// characters, then "and N more"), for MCP hosts that never pass server
// instructions to their model; and [ViewSkill] returns the
// full instructions and the list of reference files, then any reference
// file's text in bounded windows of lines.
//
// [Load] reads skills folders once at start-up, bounded (at most
// [MaxSkills] skills, a SKILL.md of at most [MaxSkillFileBytes] bytes, at
// most [MaxFiles] reference files listed per skill) and confined: a
// symbolic link never leads out of the skills folder when loading, nor out
// of a skill's own folder when view_skill reads a file. A SKILL.md that
// cannot be used is reported as a [Problem] rather than failing the load.
//
// [Group] makes the catalogue a registry tool group (key "skills"). It
// requires the run prerequisite "skills" ([Prerequisite]), which a host adds
// to the run when the catalogue is not empty, so an empty catalogue never
// exposes a view_skill that has nothing to show.
package skills
