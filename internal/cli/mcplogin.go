package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/mcpclient"
)

// oauthStore is the token store of upstream servers' OAuth grants: the
// data folder's mcp-oauth/.
func oauthStore(dataDir string) *mcpclient.TokenStore {
	return mcpclient.NewTokenStore(filepath.Join(dataDir, "mcp-oauth"))
}

// configuredServer finds the mcpServers entry name (settings, then
// --mcp-config files), with the data folder the run would use.
func (c *common) configuredServer(name string, stderr io.Writer) (mcpclient.ServerConfig, string, error) {
	cfg, cfgDir, err := c.loadConfig()
	if err != nil {
		return mcpclient.ServerConfig{}, "", err
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	for n, raw := range cfg.MCPServers {
		cfg.MCPServers[n] = anchorEnvFile(raw, cfgDir)
	}
	if err := c.mergeMCPConfig(cfg, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))); err != nil {
		return mcpclient.ServerConfig{}, "", err
	}
	ws := c.workspace
	if ws == "" {
		ws, _ = os.Getwd()
	}
	servers, err := mcpclient.ParseServersWith(cfg.MCPServers, hostVars(ws))
	if err != nil {
		return mcpclient.ServerConfig{}, "", usageErr("settings: %v", err)
	}
	dd := dataDir(c.dataDir, cfg.DataDir, cfgDir)
	var names []string
	for _, sc := range servers {
		if sc.Name == name {
			return sc, dd, nil
		}
		if sc.Type == mcpclient.TypeHTTP {
			names = append(names, sc.Name)
		}
	}
	sort.Strings(names)
	known := "none is configured"
	if len(names) > 0 {
		known = "http servers: " + strings.Join(names, ", ")
	}
	return mcpclient.ServerConfig{}, "", usageErr("Discovery: no MCP server %q in the settings' mcpServers or --mcp-config files (%s)", name, known)
}

func newMCPLogin(o *Options) *cobra.Command {
	var c common
	var noBrowser bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Log in to an http MCP server with OAuth 2.1 and keep its tokens",
		Long: `Run the OAuth 2.1 authorization-code flow for the http MCP server SERVER of the
settings' mcpServers: discover its authorization server (RFC 9728, RFC 8414),
register aibuddy (its "oauth" entry's clientId/clientSecret, a client ID metadata
document, else dynamic registration, RFC 7591), open the authorization URL in a
browser (it is printed too) with PKCE, take the redirect on a loopback listener
at http://127.0.0.1:PORT/callback (oauth.callbackPort, else a free port), and
keep the tokens in the data folder's mcp-oauth/ (mode 0600). aibuddy mcp, run,
call and tools then use them and refresh them; when a refresh is refused they
ask for this command again.`,
		Example: `  aibuddy mcp login linear --config aibuddy.json
  aibuddy mcp login linear --mcp-config ~/.claude.json --no-browser`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, dd, err := c.configuredServer(args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			open := o.OpenBrowser
			if open == nil {
				open = systemBrowser
			}
			if noBrowser {
				open = nil
			}
			res, err := mcpclient.Login(cmd.Context(), sc, mcpclient.LoginOptions{Store: oauthStore(dd), Open: open,
				Out: cmd.ErrOrStderr(), Timeout: timeout, ClientName: "aibuddy", ClientVersion: Version})
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s: %d tools; tokens kept in %s\n", res.Server, res.Tools, oauthStore(dd).Dir())
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the authorization URL; do not try to open a browser")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the whole login, the browser step included")
	return cmd
}

func newMCPLogout(o *Options) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "logout SERVER",
		Short: "Forget the OAuth tokens kept for an http MCP server",
		Long: `Remove the OAuth grant aibuddy keeps for SERVER in the data folder's mcp-oauth/.
The tokens are not revoked at the authorization server; they lapse when they expire.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, dd, err := c.configuredServer(args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			had, err := mcpclient.Logout(sc, oauthStore(dd))
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			if had {
				fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s\n", sc.Name)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "no tokens were kept for %s\n", sc.Name)
			}
			return nil
		},
	}
	c.register(cmd)
	return cmd
}

// systemBrowser opens url with the desktop's opener.
func systemBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return errors.New("no " + name + " on PATH")
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
