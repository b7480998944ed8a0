//go:build linux

package coretools

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox/confine"
	"github.com/aibuddy/aibuddy/sandbox/confine/egress"
	"github.com/aibuddy/aibuddy/sandbox/localsandbox"
	"github.com/aibuddy/aibuddy/tool"
)

// Escape attempts through execute under the default confinement
// (workspace-write, network off) and the limited network (issue 12,
// cases BH-075, BH-077, BH-078, BH-081..BH-083, BH-091): each is denied
// with a policy message naming the setting, and what is allowed works.
// Tests run as root here: the denials come from namespaces, mounts,
// Landlock and seccomp, which root inside the sandbox does not bypass.

// confineRig is an execute tool over a confined local sandbox with a test
// HOME holding credentials and a workspace holding .env, .git and
// .aibuddy.
type confineRig struct {
	*execRig
	home, outside string
}

func newConfineRig(t *testing.T, set *confine.Settings, eg *egress.Options) *confineRig {
	t.Helper()
	home, outside := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	mustWrite(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE-KEY-ed25519\n")
	mustWrite(t, filepath.Join(home, ".aws", "credentials"), "aws_secret_access_key=AKIA-SECRET\n")
	if set == nil {
		set = &confine.Settings{}
	}
	opts := &localsandbox.Options{Confinement: set, Driver: confine.NewDriver(&confine.Options{Egress: eg})}
	r := &confineRig{execRig: newExecRig(t, opts, nil), home: home, outside: outside}
	mustWrite(t, filepath.Join(r.ws, ".env"), "API_TOKEN=dotenv-secret\n")
	mustWrite(t, filepath.Join(r.ws, "keys", "server.pem"), "PEM-SECRET\n")
	mustWrite(t, filepath.Join(r.ws, ".git", "config"), "[core]\n")
	mustWrite(t, filepath.Join(r.ws, ".git", "hooks", "README"), "hooks\n")
	mustWrite(t, filepath.Join(r.ws, ".aibuddy", "config.json"), "{}\n")
	return r
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (r *confineRig) run(t *testing.T, cmd string) *tool.Result {
	t.Helper()
	res, _ := r.call(context.Background(), map[string]any{"command": cmd})
	return res
}

// wantDenied checks that the result names a confinement denial holding
// each of want (the rule and its setting), and that none of the secrets
// reached the output.
func wantDenied(t *testing.T, res *tool.Result, want ...string) {
	t.Helper()
	txt := res.AllText()
	if !strings.Contains(txt, "denied by confinement: ") || !strings.Contains(txt, "retrying or working around it will not help") {
		t.Errorf("no policy denial in the result:\n%s", txt)
	}
	for _, w := range want {
		if !strings.Contains(txt, w) {
			t.Errorf("the result does not say %q:\n%s", w, txt)
		}
	}
	for _, secret := range []string{"PRIVATE-KEY", "AKIA-SECRET", "dotenv-secret", "PEM-SECRET"} {
		if strings.Contains(txt, secret) {
			t.Errorf("secret %q reached the output:\n%s", secret, txt)
		}
	}
}

func hashOf(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "missing"
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestConfinedWriteOutsideDenied(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	probe := filepath.Join(r.outside, "probe")
	res := r.run(t, "touch "+probe)
	wantDenied(t, res, "write outside the workspace denied by confinement (workspace-write)", "sandbox.confinement")
	if _, err := os.Stat(probe); err == nil {
		t.Fatalf("%s was created outside the workspace", probe)
	}
	// A program that builds the path at run time is held the same way.
	res = r.run(t, fmt.Sprintf(`python3 -c "open('%s'+'2','w').write('x')"`, probe))
	wantDenied(t, res, "write outside the workspace denied by confinement (workspace-write)")
	if _, err := os.Stat(probe + "2"); err == nil {
		t.Fatal("python wrote outside the workspace")
	}
}

func TestConfinedCredentialsUnreadable(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	res := r.run(t, "cat ~/.ssh/id_ed25519")
	wantDenied(t, res, "~/.ssh is unreadable", "sandbox.denyRead")
	res = r.run(t, "ls ~/.aws; cat ~/.aws/credentials")
	wantDenied(t, res, "~/.aws is unreadable", "sandbox.denyRead")
	// Through a symlink in the workspace too.
	res = r.run(t, "ln -s ~/.ssh/id_ed25519 k && cat k")
	if strings.Contains(res.AllText(), "PRIVATE-KEY") {
		t.Errorf("the key was read through a symlink:\n%s", res.AllText())
	}
}

func TestConfinedDeniedWorkspaceFilesUnreadable(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	for _, cmd := range []string{"cat .env", `python3 -c "print(open('.e'+'nv').read())"`, "cat keys/server.pem"} {
		res := r.run(t, cmd)
		wantDenied(t, res, "the workspace's denied files are unreadable", "approval.deniedPaths")
	}
	// The file itself is untouched and still there for the person.
	if hashOf(t, filepath.Join(r.ws, ".env")) == "missing" {
		t.Error(".env is gone")
	}
}

// BH-075: rename, link, symlink and truncate into protected paths.
func TestConfinedReadOnlyPathsHoldInsideTheWorkspace(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	protected := []string{".git/config", ".git/hooks/README", ".aibuddy/config.json"}
	before := map[string]string{}
	for _, p := range protected {
		before[p] = hashOf(t, filepath.Join(r.ws, p))
	}
	for _, cmd := range []string{
		"echo 'curl blocked.test' > x && mv x .git/hooks/pre-commit",
		"echo x > x && ln x .aibuddy/config.json.new",
		`echo x > x && python3 -c "import os; os.rename('x', '.git/config')"`,
		"ln -s /bin/sh .git/hooks/post-commit",
		": > .git/config",
		"echo '{\"x\":1}' > .aibuddy/config.json",
	} {
		res := r.run(t, cmd)
		wantDenied(t, res, "read-only inside the workspace", "sandbox.readOnlyPaths")
	}
	for _, p := range protected {
		if h := hashOf(t, filepath.Join(r.ws, p)); h != before[p] {
			t.Errorf("%s changed", p)
		}
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-commit", ".aibuddy/config.json.new"} {
		if _, err := os.Lstat(filepath.Join(r.ws, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// Allowed things still work: building in the workspace, the private temp
// folder, reading the rest of the system.
func TestConfinedBuildAndTempWork(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	r := newConfineRig(t, nil, nil)
	mustWrite(t, filepath.Join(r.ws, "hello.c"), "#include <stdio.h>\nint main(void){puts(\"hello from cc\");return 0;}\n")
	res := r.run(t, "mkdir -p build/tmp && echo x > build/tmp/new.log && cc -o build/hello hello.c && ./build/hello && echo t > $TMPDIR/f && cat $TMPDIR/f && head -c 5 /etc/hostname >/dev/null && echo read-ok")
	txt := res.AllText()
	if res.IsError || evInt(t, res, "exit_code") != 0 || !strings.Contains(txt, "hello from cc") || !strings.Contains(txt, "read-ok") {
		t.Fatalf("allowed work failed:\n%s", txt)
	}
	if strings.Contains(txt, "denied by confinement") {
		t.Errorf("a denial was reported for allowed work:\n%s", txt)
	}
}

// hostListener is a fixture HTTP server that records every request.
type hostListener struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func newHostListener(t *testing.T, ip string) *hostListener {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	h := &hostListener{addr: l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, req.Method+" "+req.Host+req.URL.Path)
		h.mu.Unlock()
		fmt.Fprintf(w, "reached %s\n", ip)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return h
}

// rawListener records raw TCP connections (for bypass attempts that do
// not speak HTTP).
func rawListener(t *testing.T, ip string) (addr string, conns func() int) {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func (h *hostListener) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen...)
}

// fixtureResolver resolves the fixture names of the cases' README:
// allowed.test is 127.0.0.2, blocked.test is 127.0.0.3.
type fixtureResolver struct{}

func (fixtureResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	switch host {
	case "allowed.test":
		return []net.IPAddr{{IP: net.ParseIP("127.0.0.2")}}, nil
	case "blocked.test":
		return []net.IPAddr{{IP: net.ParseIP("127.0.0.3")}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestConfinedNetworkOff(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	addr, conns := rawListener(t, "127.0.0.1")
	host, port, _ := net.SplitHostPort(addr)
	res := r.run(t, fmt.Sprintf(`python3 -c "import socket; socket.create_connection(('%s', %s), timeout=5)"`, host, port))
	wantDenied(t, res, "the network is off", "sandbox.network")
	res = r.run(t, "getent hosts example.com")
	if evInt(t, res, "exit_code") == 0 {
		t.Errorf("a name resolved with the network off:\n%s", res.AllText())
	}
	if n := conns(); n != 0 {
		t.Errorf("the host's loopback listener got %d connections", n)
	}
}

// BH-081..BH-083 through the limited network: the proxy and resolver of
// the plane are the only route out.
func TestConfinedNetworkLimited(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found")
	}
	allowed, blocked := newHostListener(t, "127.0.0.2"), newHostListener(t, "127.0.0.3")
	_, aport, _ := net.SplitHostPort(allowed.addr)
	_, bport, _ := net.SplitHostPort(blocked.addr)
	r := newConfineRig(t, &confine.Settings{AllowedDomains: []string{"allowed.test"}}, &egress.Options{Resolver: fixtureResolver{}})

	res := r.run(t, "curl -sS --max-time 10 http://allowed.test:"+aport+"/health")
	if !strings.Contains(res.AllText(), "reached 127.0.0.2") || len(allowed.requests()) != 1 {
		t.Fatalf("the allowed host was not reached through the proxy:\n%s\n%v", res.AllText(), allowed.requests())
	}
	// The same through a CONNECT tunnel (-p).
	res = r.run(t, "curl -sS --max-time 10 -p http://allowed.test:"+aport+"/tunnel")
	if !strings.Contains(res.AllText(), "reached 127.0.0.2") || len(allowed.requests()) != 2 {
		t.Fatalf("the allowed host was not reached through a CONNECT tunnel:\n%s\n%v", res.AllText(), allowed.requests())
	}
	res = r.run(t, "getent hosts allowed.test")
	if !strings.Contains(res.AllText(), "127.0.0.2") {
		t.Errorf("the allowed name did not resolve:\n%s", res.AllText())
	}

	for _, cmd := range []string{
		"curl -sS --max-time 10 http://blocked.test:" + bport + "/",
		"curl -sS --max-time 10 -p https://blocked.test:" + bport + "/",
		"env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy -u ALL_PROXY -u all_proxy curl -sS --max-time 5 http://blocked.test:" + bport + "/",
		"curl --noproxy '*' -sS --max-time 5 http://127.0.0.3:" + bport + "/",
		fmt.Sprintf(`python3 -c "import socket; socket.create_connection(('127.0.0.3', %s), timeout=5)"`, bport),
		fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.3/%s'`, bport),
		// BH-082: a Host header that disagrees with the absolute URL.
		"curl -sS --max-time 10 -H 'Host: blocked.test:" + bport + "' http://allowed.test:" + aport + "/",
		"getent hosts blocked.test",
	} {
		res := r.run(t, cmd)
		txt := res.AllText()
		if !strings.Contains(txt, "denied by egress policy") && !strings.Contains(txt, "network access outside the egress proxy denied by confinement") {
			t.Errorf("%s: not denied by policy:\n%s", cmd, txt)
		}
	}
	if got := blocked.requests(); len(got) != 0 {
		t.Errorf("blocked.test logged requests: %v", got)
	}

	// The proxy's listener is inside the sandbox's own network namespace:
	// while the command runs, the host's 127.0.0.1 has nothing there.
	in, _ := json.Marshal(map[string]any{"command": `echo "$HTTP_PROXY"; sleep 2`})
	var once sync.Once
	hostReached := make(chan string, 1)
	res = r.tool.Call(context.Background(), &tool.Call{ID: "c-proxy", Input: in, Events: func(e tool.Event) {
		if e.Kind != tool.EventStdout {
			return
		}
		once.Do(func() {
			addr := strings.TrimPrefix(strings.TrimSpace(string(e.Data)), "http://")
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				hostReached <- addr
			}
			close(hostReached)
		})
	}})
	if addr, ok := <-hostReached; ok {
		t.Errorf("the sandbox's proxy address %s answered on the host", addr)
	}
	if !strings.Contains(res.AllText(), "http://127.0.0.1:") {
		t.Errorf("HTTP_PROXY was not set:\n%s", res.AllText())
	}
}

// The relay of BH-082: a forwarder inside the sandbox does not change what
// the proxy decides, which is only the authority it connects to.
func TestConfinedNetworkRelayDecidesByAuthority(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found")
	}
	allowed, blocked := newHostListener(t, "127.0.0.2"), newHostListener(t, "127.0.0.3")
	_, aport, _ := net.SplitHostPort(allowed.addr)
	_, bport, _ := net.SplitHostPort(blocked.addr)
	r := newConfineRig(t, &confine.Settings{AllowedDomains: []string{"allowed.test"}}, &egress.Options{Resolver: fixtureResolver{}})
	relay := `import socket,threading,os,sys
p=os.environ['HTTP_PROXY'].rsplit(':',1); ph=p[0].split('//')[1]; pp=int(p[1])
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('127.0.0.1',9000)); s.listen(5)
def pipe(a,b):
    try:
        while True:
            d=a.recv(65536)
            if not d: break
            b.sendall(d)
    except Exception: pass
    try: b.shutdown(socket.SHUT_WR)
    except Exception: pass
def serve():
    while True:
        c,_=s.accept(); u=socket.create_connection((ph,pp))
        threading.Thread(target=pipe,args=(c,u),daemon=True).start(); threading.Thread(target=pipe,args=(u,c),daemon=True).start()
threading.Thread(target=serve,daemon=True).start()
print('relay up', flush=True)
os.system(sys.argv[1])
`
	mustWrite(t, filepath.Join(r.ws, "relay.py"), relay)
	res := r.run(t, `python3 relay.py "curl -sS --max-time 10 -x http://127.0.0.1:9000 http://blocked.test:`+bport+`/; echo; curl -sS --max-time 10 -x http://127.0.0.1:9000 -p http://blocked.test:`+bport+`/; echo; curl -sS --max-time 10 -x http://127.0.0.1:9000 http://allowed.test:`+aport+`/"`)
	txt := res.AllText()
	if !strings.Contains(txt, "denied by egress policy") || !strings.Contains(txt, "reached 127.0.0.2") {
		t.Errorf("relay: want the blocked host refused and the allowed one reached:\n%s", txt)
	}
	if got := blocked.requests(); len(got) != 0 {
		t.Errorf("blocked.test logged requests through the relay: %v", got)
	}
}

// BH-091: setsid, nohup and double-fork survivors end with the call.
func TestConfinedDetachedProcessesEnd(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	mark := fmt.Sprintf("60%d", os.Getpid()%1000)
	res := r.run(t, fmt.Sprintf(`setsid sleep %[1]s1 >/dev/null 2>&1 & nohup sleep %[1]s2 >/dev/null 2>&1 & ( (sleep %[1]s3 &) & ); python3 -c "
import os,time
if os.fork()==0:
    os.setsid()
    if os.fork()==0:
        os.execvp('sleep',['sleep','%[1]s4'])
" ; sleep 0.2; echo started`, mark))
	if !strings.Contains(res.AllText(), "started") {
		t.Fatalf("result:\n%s", res.AllText())
	}
	if evInt(t, res, "escaped") < 1 || !strings.Contains(res.AllText(), "had left the command's process group") {
		t.Errorf("the escapes were not reported:\n%s\n%v", res.AllText(), res.Evidence)
	}
	for i := 1; i <= 4; i++ {
		if pids := hostProcessesWithArg(mark + fmt.Sprint(i)); len(pids) > 0 {
			t.Errorf("sleep %s%d survived the call: %v", mark, i, pids)
		}
	}
}

// hostProcessesWithArg lists live host processes with arg in their
// command line.
func hostProcessesWithArg(arg string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
				if s := string(st); !strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
					out = append(out, e.Name())
				}
			}
		}
	}
	return out
}

// ptrace of a process outside the sandbox is refused, and the process is
// untouched.
func TestConfinedPtraceOfOutsiderDenied(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	outsider := exec.Command("sleep", "300")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outsider.Process.Kill(); outsider.Wait() }()
	pid := outsider.Process.Pid
	res := r.run(t, fmt.Sprintf(`python3 -c "
import ctypes,os,sys
libc=ctypes.CDLL(None,use_errno=True)
for req,name in ((16,'PTRACE_ATTACH'),(0x4206,'PTRACE_SEIZE')):
    if libc.ptrace(req,%d,0,0)!=0:
        print('ptrace(%%s, %d): %%s'%%(name,os.strerror(ctypes.get_errno())), file=sys.stderr)
    else:
        print('ptrace attached')
"`, pid, pid))
	txt := res.AllText()
	if strings.Contains(txt, "ptrace attached") {
		t.Fatalf("ptrace of an outsider succeeded:\n%s", txt)
	}
	wantDenied(t, res, "ptrace denied by confinement", "seccomp", "sandbox.confinement")
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	sc := bufio.NewScanner(strings.NewReader(string(st)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "TracerPid:" && f[1] != "0" {
			t.Errorf("the outsider is traced by %s", f[1])
		}
	}
}

// BH-078: no argument the model can pass turns the confinement off.
func TestConfinedNoModelSwitch(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	for _, arg := range []string{"unsandboxed", "sandbox", "confinement", "dangerouslyDisableSandbox"} {
		res, _ := r.call(context.Background(), map[string]any{"command": "touch " + filepath.Join(r.outside, "x"), arg: true})
		if !res.IsError || res.Stage != tool.Parameters {
			t.Errorf("%s: want a Parameters error, got:\n%s", arg, res.AllText())
		}
	}
	if _, err := os.Stat(filepath.Join(r.outside, "x")); err == nil {
		t.Error("a file was created outside")
	}
}

// The description says what holds.
func TestConfinedDescriptionNamesTheRules(t *testing.T) {
	r := newConfineRig(t, nil, nil)
	d := r.tool.Description()
	for _, w := range []string{"linux-namespaces", "sandbox.confinement workspace-write", "sandbox.network off", ".git, .aibuddy (sandbox.readOnlyPaths)",
		"~/.ssh", "(sandbox.denyRead)", "ends with it (PID namespace)", "not a fault"} {
		if !strings.Contains(d, w) {
			t.Errorf("the description lacks %q:\n%s", w, d)
		}
	}
}
