package permissions

import (
	"path"
	"strings"
)

// This file holds the tables the shell analysis reads: the wrappers that
// run another command (and their options), and the global options of the
// programs whose subcommands rules name (git, docker, kubectl, npm), so
// that `git -C dir push` is matched as `git push` (BH-085).

// wrapper describes a program that runs the command in its arguments.
type wrapper struct {
	// valued are options that take the next word as their value (or are
	// joined with it: -n5, --signal=KILL).
	valued []string
	// positional is how many non-option words come before the command
	// (timeout's DURATION).
	positional int
	// assigns: NAME=VALUE words before the command are skipped (env, sudo).
	assigns bool
	// noRun are options after which the wrapper runs nothing (command -v).
	noRun []string
	// script are options whose value is itself a command line (env -S).
	script []string
	// privileged wrappers run the command as another user.
	privileged bool
	// secretAlone: the wrapper with no command prints the environment.
	secretAlone bool
	// defaultCmd is what runs when no command is given (xargs: echo); ""
	// means nothing runs.
	defaultCmd string
}

// wrappers are the programs unwrapped before rules are matched.
var wrappers = map[string]wrapper{
	"env": {valued: []string{"-u", "--unset", "-C", "--chdir"}, assigns: true, script: []string{"-S", "--split-string"},
		secretAlone: true},
	"nohup":   {},
	"timeout": {valued: []string{"-s", "--signal", "-k", "--kill-after"}, positional: 1},
	"command": {noRun: []string{"-v", "-V"}},
	"builtin": {},
	"exec":    {valued: []string{"-a"}},
	"nice":    {valued: []string{"-n", "--adjustment"}},
	"time":    {valued: []string{"-f", "--format", "-o", "--output"}},
	"xargs": {valued: []string{"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "--eof", "-I", "-i", "--replace",
		"-L", "-l", "--max-lines", "-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"},
		defaultCmd: "echo"},
	"sudo": {valued: []string{"-u", "--user", "-g", "--group", "-h", "--host", "-C", "--close-from", "-D", "--chdir",
		"-p", "--prompt", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T", "--command-timeout"},
		assigns: true, privileged: true, noRun: []string{"-l", "--list", "-v", "--validate", "-k", "-K", "--reset-timestamp", "--remove-timestamp", "-e", "--edit"}},
	"doas":    {valued: []string{"-u", "-C"}, privileged: true},
	"stdbuf":  {valued: []string{"-i", "--input", "-o", "--output", "-e", "--error"}},
	"setsid":  {},
	"ionice":  {valued: []string{"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}},
	"chronic": {},
}

// stripped is what a wrapper leaves: at is the index (into the wrapper's
// arguments) of the command it runs, -1 when it runs none; script is a
// command line given as an option value (env -S); secret says why the
// wrapper alone prints secrets.
type stripped struct {
	at     int
	script string
	secret string
}

func (wr wrapper) strip(args []string) stripped {
	pos := 0
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			i++
			goto command
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name, _, joined := strings.Cut(a, "=")
			if contains(wr.noRun, name) {
				return stripped{at: -1}
			}
			if contains(wr.script, name) {
				if joined {
					return stripped{script: a[len(name)+1:]}
				}
				if i+1 < len(args) {
					return stripped{script: args[i+1]}
				}
				return stripped{at: -1}
			}
			if contains(wr.valued, name) && !joined {
				i += 2
				continue
			}
			i++
			continue
		case wr.assigns && isAssign(a):
			i++
			continue
		case pos < wr.positional:
			pos++
			i++
			continue
		}
		break
	}
command:
	for wr.assigns && i < len(args) && isAssign(args[i]) {
		i++
	}
	if i >= len(args) {
		if wr.secretAlone {
			return stripped{at: -1, secret: "env with no command prints every environment variable, secrets included"}
		}
		return stripped{at: -1}
	}
	return stripped{at: i}
}

// isAssign reports a NAME=VALUE word.
func isAssign(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// globalOptions are the options a program takes before its subcommand.
type globalOptions struct {
	valued []string // take the next word as value (unless joined with '=')
	flags  []string // take none
}

// programs are the programs whose global options are stripped before the
// subcommand, so rules on `git push`, `docker run`, `kubectl delete` or
// `npm publish` hold whatever comes in between.
var programs = map[string]globalOptions{
	"git": {
		valued: []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path",
			"--super-prefix", "--attr-source", "--list-cmds"},
		flags: []string{"-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects", "--literal-pathspecs",
			"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice",
			"--html-path", "--man-path", "--info-path", "-v", "--version", "-h", "--help"},
	},
	"docker": {
		valued: []string{"-H", "--host", "--config", "-c", "--context", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"},
		flags:  []string{"-D", "--debug", "--tls", "--tlsverify", "-v", "--version", "-h", "--help"},
	},
	"kubectl": {
		valued: []string{"-n", "--namespace", "--context", "--cluster", "--kubeconfig", "--user", "-s", "--server", "--token",
			"--as", "--as-group", "--as-uid", "--request-timeout", "-v", "--v", "--cache-dir", "--certificate-authority",
			"--client-certificate", "--client-key", "--tls-server-name", "--profile", "--profile-output", "--password",
			"--username", "--log-dir", "--log-file", "--vmodule", "--log-flush-frequency"},
		flags: []string{"--insecure-skip-tls-verify", "--match-server-version", "--warnings-as-errors", "--disable-compression",
			"--add-dir-header", "--alsologtostderr", "--logtostderr", "--one-output", "--skip-headers", "--skip-log-headers", "-h", "--help"},
	},
	"npm": {
		valued: []string{"--prefix", "-w", "--workspace", "--registry", "--userconfig", "--globalconfig", "--cache",
			"--loglevel", "--cwd"},
		flags: []string{"-g", "--global", "-s", "--silent", "-q", "--quiet", "-d", "--verbose", "-dd", "-ddd",
			"-y", "--yes", "--no", "-ws", "--workspaces", "--include-workspace-root", "--offline", "--prefer-offline",
			"--json", "--color", "--no-color", "-h", "--help"},
	},
}

// normalize gives the form rules match for words: for a program with an
// option table, the program (as written), the options before the
// subcommand dropped, then the rest; otherwise the words as they are.
// unmodelled names the first option before the subcommand the table does
// not know (it is dropped too, as a flag).
func normalize(words []string) (norm, unmodelled string) {
	if len(words) == 0 {
		return "", ""
	}
	g, ok := programs[path.Base(words[0])]
	if !ok {
		return strings.Join(words, " "), ""
	}
	out := []string{words[0]}
	i := 1
	for i < len(words) {
		a := words[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, joined := strings.Cut(a, "=")
		switch {
		case contains(g.valued, name) && !joined:
			i += 2
		case contains(g.valued, name), contains(g.flags, name):
			i++
		case len(name) > 2 && name[1] != '-' && contains(g.valued, name[:2]):
			i++ // -C/repo, -nprod: value joined to a short option
		default:
			if unmodelled == "" {
				unmodelled = a
			}
			i++
		}
	}
	out = append(out, words[min(i, len(words)):]...)
	return strings.Join(out, " "), unmodelled
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
