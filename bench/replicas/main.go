// Command replicas is the load test of gateway replicas (issue 15): it
// starts two `aibuddy mcp --http` processes on loopback sharing one
// PostgreSQL (AIBUDDY_STORE_URL, a schema of the run's own), opens -n MCP
// sessions spread over both (the official Go SDK's streamable HTTP
// client), and for -duration has every session call tools back to back
// (execute "echo", write_file, read_file, one each in turn). It prints the
// calls per second, the latency percentiles of the calls, and then checks
// every acknowledged call (one whose result reached its session) against
// the store: lost (no record), torn (not finished, or its recorded output
// differs from what the session received). With -kill, one replica is
// killed with SIGKILL half way through; its sessions stop, the other's go
// on. Exit status 1 when a record is lost or torn.
//
//	source scripts/pgtemp.sh && pgtemp_start      # a throwaway PostgreSQL (or any: -pg URL)
//	go run ./bench/replicas [-n 16] [-duration 20s] [-kill] [-pg URL] [-aibuddy PATH]
//
// The PostgreSQL URL is -pg, else $AIBUDDY_TEST_PG_URL. Without -aibuddy
// it builds ./cmd/aibuddy into a temporary folder first. Every request
// carries Authorization: Bearer with the token the bench gives both
// replicas through $AIBUDDY_TOKEN.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/store/pgstore"
)

func main() {
	n := flag.Int("n", 16, "MCP sessions, spread over the two replicas")
	duration := flag.Duration("duration", 20*time.Second, "how long the sessions call tools")
	kill := flag.Bool("kill", false, "SIGKILL one replica half way through")
	pg := flag.String("pg", os.Getenv("AIBUDDY_TEST_PG_URL"), "PostgreSQL URL (default $AIBUDDY_TEST_PG_URL)")
	aibuddy := flag.String("aibuddy", "", "aibuddy binary (default: go build ./cmd/aibuddy)")
	flag.Parse()
	if *pg == "" {
		fmt.Fprintln(os.Stderr, "replicas: no PostgreSQL: give -pg URL or set AIBUDDY_TEST_PG_URL (source scripts/pgtemp.sh && pgtemp_start starts a throwaway one)")
		os.Exit(2)
	}
	if err := bench(*n, *duration, *kill, *pg, *aibuddy); err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
}

const token = "bench0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

type bearer struct{}

func (bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultTransport.RoundTrip(req)
}

// replica is one aibuddy mcp --http process.
type replica struct {
	name string
	cmd  *exec.Cmd
	url  string
}

func start(bin, dir, name, pgURL, schema string) (*replica, error) {
	ws, data := filepath.Join(dir, name, "ws"), filepath.Join(dir, name, "data")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return nil, err
	}
	settings := filepath.Join(dir, name, "aibuddy.json")
	if err := os.WriteFile(settings, fmt.Appendf(nil, `{"store": {"schema": %q}}`, schema), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--workspace", ws, "--data-dir", data, "--config", settings)
	cmd.Env = append(os.Environ(), "AIBUDDY_TOKEN="+token, "AIBUDDY_STORE_URL="+pgURL)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &replica{name: name, cmd: cmd}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := regexp.MustCompile(`http://[0-9.:]+/mcp`).FindString(line); m != "" && r.url == "" {
			r.url = m
		}
		if strings.Contains(line, "every request needs Authorization: Bearer") {
			break
		}
	}
	if r.url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("replica %s did not print its address; stderr:\n%s", name, strings.Join(seen, "\n"))
	}
	go io.Copy(io.Discard, stderr)
	return r, nil
}

// ack is one call whose result reached its session.
type ack struct {
	id, text, replica string
	took              time.Duration
}

func bench(n int, duration time.Duration, kill bool, pgURL, bin string) error {
	dir, err := os.MkdirTemp("", "replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin, err = benchbin.Aibuddy(dir, bin); err != nil {
		return err
	}
	schema := fmt.Sprintf("bench_replicas_%d", time.Now().UnixNano())
	defer dropSchema(pgURL, schema)
	var reps []*replica
	for _, name := range []string{"a", "b"} {
		r, err := start(bin, dir, name, pgURL, schema)
		if err != nil {
			return err
		}
		defer func() {
			if r.cmd.ProcessState == nil {
				r.cmd.Process.Signal(os.Interrupt)
				r.cmd.Wait()
			}
		}()
		reps = append(reps, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	sessions := make([]*mcp.ClientSession, n)
	for i := range n {
		r := reps[i%2]
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("bench-%d", i), Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{}}}, nil)
		if err != nil {
			return fmt.Errorf("session %d to replica %s: %w", i, r.name, err)
		}
		defer cs.Close()
		sessions[i] = cs
	}

	var (
		mu     sync.Mutex
		acks   []ack
		failed []string
	)
	began := time.Now()
	end := began.Add(duration)
	var wg sync.WaitGroup
	for i, cs := range sessions {
		r := reps[i%2]
		wg.Go(func() {
			for k := 0; time.Now().Before(end); k++ {
				var p *mcp.CallToolParams
				switch k % 3 {
				case 0:
					p = &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": fmt.Sprintf("echo s%d-%d", i, k)}}
				case 1:
					p = &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": fmt.Sprintf("s%d.txt", i), "content": fmt.Sprintf("s%d-%d\n", i, k)}}
				default:
					p = &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("s%d.txt", i)}}
				}
				t0 := time.Now()
				res, err := cs.CallTool(ctx, p)
				took := time.Since(t0)
				if err != nil {
					if kill && r == reps[0] {
						return // its replica was killed
					}
					mu.Lock()
					failed = append(failed, fmt.Sprintf("session %d (%s) %s: %v", i, r.name, p.Name, err))
					mu.Unlock()
					return
				}
				id, _ := res.Meta["aibuddy/toolCallId"].(string)
				var b strings.Builder
				for _, c := range res.Content {
					if tc, ok := c.(*mcp.TextContent); ok {
						b.WriteString(tc.Text)
					}
				}
				mu.Lock()
				if res.IsError {
					failed = append(failed, fmt.Sprintf("session %d (%s) %s: %s", i, r.name, p.Name, b.String()))
				}
				acks = append(acks, ack{id: id, text: b.String(), replica: r.name, took: took})
				mu.Unlock()
			}
		})
	}
	if kill {
		time.Sleep(duration / 2) // the bench's own schedule, not a test assertion
		reps[0].cmd.Process.Kill()
		reps[0].cmd.Wait()
	}
	wg.Wait()
	elapsed := time.Since(began)
	for _, r := range reps {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Signal(os.Interrupt)
			r.cmd.Wait()
		}
	}

	// Every acknowledged call against the store.
	st, err := pgstore.Open(context.Background(), pgURL, &pgstore.Options{Schema: schema, SweepInterval: -1})
	if err != nil {
		return err
	}
	defer st.Close()
	lost, torn := 0, 0
	perReplica := map[string]int{}
	lat := make([]time.Duration, 0, len(acks))
	for _, a := range acks {
		perReplica[a.replica]++
		lat = append(lat, a.took)
		rec, err := st.Get(context.Background(), a.id)
		if err != nil {
			lost++
			fmt.Fprintf(os.Stderr, "lost: %s (through %s): %v\n", a.id, a.replica, err)
			continue
		}
		w, err := result.Decode(rec.Output)
		if rec.Outcome == store.OutcomeRunning || rec.Outcome == store.OutcomeInterrupted || err != nil || w.Text() != a.text {
			torn++
			fmt.Fprintf(os.Stderr, "torn: %s (through %s): outcome %s, %v\n", a.id, a.replica, rec.Outcome, err)
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	fmt.Printf("replicas: 2 aibuddy mcp --http on loopback, one PostgreSQL; %d sessions, %s", n, duration)
	if kill {
		fmt.Printf(", replica a SIGKILLed at %s", duration/2)
	}
	fmt.Println()
	fmt.Printf("calls acknowledged: %d (a %d, b %d) in %s: %.0f calls/s\n", len(acks), perReplica["a"], perReplica["b"],
		elapsed.Round(time.Millisecond), float64(len(acks))/elapsed.Seconds())
	fmt.Printf("latency: p50 %s  p90 %s  p99 %s  max %s\n", pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond),
		pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	fmt.Printf("records: %d lost, %d torn; %d calls failed\n", lost, torn, len(failed))
	for _, f := range failed[:min(len(failed), 5)] {
		fmt.Println("  failed:", f)
	}
	if lost > 0 || torn > 0 || len(failed) > 0 {
		return fmt.Errorf("%d lost, %d torn records, %d failed calls", lost, torn, len(failed))
	}
	return nil
}

func dropSchema(url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer c.Close(ctx)
	c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
}
