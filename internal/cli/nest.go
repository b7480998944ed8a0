package cli

import (
	"log/slog"
	"os"
	"strconv"

	"github.com/aibuddy/aibuddy/mcpclient"
)

// nestEnv counts how deep this aibuddy runs below other aibuddy processes
// that started it as an MCP server (0 or unset: not started by aibuddy).
const nestEnv = "AIBUDDY_MCP_DEPTH"

// MaxMCPNesting is how many aibuddy processes may stand below one another
// as each other's MCP servers; deeper, the MCP servers are not started. It
// stops a settings file that lists aibuddy itself (the same file passed
// with --mcp-config) from starting copies without end.
const MaxMCPNesting = 3

// nestServers prepares the stdio servers for the nesting count: each gets
// AIBUDDY_MCP_DEPTH one more than ours; at MaxMCPNesting none is started.
func nestServers(servers []mcpclient.ServerConfig, logger *slog.Logger) ([]mcpclient.ServerConfig, error) {
	depth, _ := strconv.Atoi(os.Getenv(nestEnv))
	if len(servers) == 0 {
		return servers, nil
	}
	if depth >= MaxMCPNesting {
		logger.Warn("not starting MCP servers: this aibuddy runs as an MCP server of aibuddy at depth "+strconv.Itoa(depth)+
			"; does a settings file list aibuddy itself?", "max", MaxMCPNesting)
		return nil, nil
	}
	out := make([]mcpclient.ServerConfig, len(servers))
	for i, sc := range servers {
		if sc.Type == mcpclient.TypeStdio {
			env := map[string]string{}
			for k, v := range sc.Env {
				env[k] = v
			}
			env[nestEnv] = strconv.Itoa(depth + 1)
			sc.Env = env
		}
		out[i] = sc
	}
	return out, nil
}
