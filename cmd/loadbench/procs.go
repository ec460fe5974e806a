package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// child is a server the bench started as a process of its own.
type child struct {
	name     string
	cmd      *exec.Cmd
	url      string
	profiles chan string   // erpgate's profiles URL, once it prints one
	done     chan struct{} // closed when the process has exited
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the process with SIGTERM, and SIGKILL after a grace period.
func (c *child) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(3 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// startChild starts cmd with its stderr in logFile and waits until ready
// returns true or the process exits.
func startChild(name string, cmd *exec.Cmd, logFile string) (*child, error) {
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = log
	// Children must not outlive an interrupted bench.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c := &child{name: name, cmd: cmd, profiles: make(chan string, 1), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(c.done)
	}()
	return c, nil
}

// logTail returns the last lines of a log file, for an error message.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}

// buildErpgate builds cmd/erpgate into dir; the bench must run inside the
// repository for that.
func buildErpgate(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "github.com/erpgate/erpgate/cmd/erpgate", "run loadbench inside the repository or pass -erpgate")
}

// buildGoProxy builds the standard library's reverse proxy
// (cmd/loadbench/goproxy) into dir.
func buildGoProxy(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "github.com/erpgate/erpgate/cmd/loadbench/goproxy", "run loadbench inside the repository")
}

// buildERPSim builds the simulated ERP (cmd/erpsim) into dir.
func buildERPSim(ctx context.Context, dir string) (string, error) {
	return build(ctx, dir, "github.com/erpgate/erpgate/cmd/erpsim", "run loadbench inside the repository")
}

// build builds the command pkg into dir and returns the binary's path;
// hint says what to do when that fails.
func build(ctx context.Context, dir, pkg, hint string) (string, error) {
	bin := filepath.Join(dir, path.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s (%s): %w\n%s", path.Base(pkg), hint, err, out)
	}
	return bin, nil
}

var (
	listening = regexp.MustCompile(`listening on (http://\S+)`)
	profiles  = regexp.MustCompile(`profiles on (http://\S+)/debug/pprof/`)
)

// startErpgate runs the gateway in front of the ERP at erpURL, with its
// production defaults except the per-client rate limit, which would
// refuse a benchmark's load: JSON access log at info, run limits on. Its
// records go to a fresh directory of its own under dir. With profiling, it
// serves its profiles on a loopback port of its own. Extra flags follow
// these.
func startErpgate(bin, erpURL, dir, name string, profiling bool, extra ...string) (*child, error) {
	return startErpgateEnv(bin, erpURL, dir, name, profiling, nil, extra...)
}

// startErpgateEnv is startErpgate with env added to its environment, from
// which the caller's ERPGATE_ and OTEL_ variables are taken out: the
// gateway measured traces only when env says so.
func startErpgateEnv(bin, erpURL, dir, name string, profiling bool, env []string, extra ...string) (*child, error) {
	args := []string{"-addr", "127.0.0.1:0", "-erp-url", erpURL, "-rate-limit", "0",
		"-run-limits", "true", "-log-level", "info", "-log-format", "json",
		"-data-dir", filepath.Join(dir, name+"-data")}
	if profiling {
		args = append(args, "-debug-addr", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(environWithout("ERPGATE_", "OTEL_"), env...)
	return startListening(name, cmd, dir)
}

// startERPSim runs the simulated ERP with its golden set and no faults.
func startERPSim(bin, dir string) (*child, error) {
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	cmd.Env = environWithout("ERPSIM_")
	return startListening("erpsim", cmd, dir)
}

// environWithout is the environment less the variables with prefix:
// settings from the caller's environment must not change what is
// measured.
func environWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// startGoProxy runs the standard library's reverse proxy in front of the
// ERP at erpURL.
func startGoProxy(bin, erpURL, dir string) (*child, error) {
	return startListening(goProxy, exec.Command(bin, erpURL), dir)
}

// startListening starts cmd and waits until it prints the URL it listens
// on.
func startListening(name string, cmd *exec.Cmd, dir string) (*child, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(dir, name+".log")
	c, err := startChild(name, cmd, logFile)
	if err != nil {
		return nil, err
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
			if m := profiles.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case c.profiles <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case c.url = <-urlc:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s exited at start:\n%s", name, logTail(logFile))
	case <-time.After(20 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not start within 20s", name)
	}
}

// findNginx returns the nginx binary, or "" when there is none.
func findNginx(flagPath string) string {
	if flagPath != "" {
		return flagPath
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// nginxVersion returns "nginx/1.22.1" or the like.
func nginxVersion(bin string) string {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "nginx"
	}
	s := strings.TrimSpace(string(out))
	if i := strings.Index(s, "nginx/"); i >= 0 {
		return strings.Fields(s[i:])[0]
	}
	return "nginx"
}

// nginxKeepalive is the number of idle upstream connections each nginx
// worker keeps: with one worker per CPU, as many in all as erpgate's SAP
// client keeps (128 on two CPUs), and at least the closed loop's
// concurrency per worker, so that neither proxy redials at saturation.
const nginxKeepalive = 64

// nginxConf is a plain reverse proxy to the ERP: HTTP/1.1 with upstream
// keep-alive, the Host passed on, one access log line per request like
// erpgate's, and one worker per CPU like erpgate's one Go thread per CPU.
const nginxConf = `worker_processes auto;
worker_rlimit_nofile 16384;
pid {{dir}}/nginx.pid;
error_log {{dir}}/nginx-error.log warn;
events { worker_connections 8192; }
http {
  access_log {{dir}}/nginx-access.log;
  client_body_temp_path {{dir}}/body;
  proxy_temp_path {{dir}}/proxy;
  fastcgi_temp_path {{dir}}/fastcgi;
  uwsgi_temp_path {{dir}}/uwsgi;
  scgi_temp_path {{dir}}/scgi;
  upstream erp {
    server {{upstream}};
    keepalive {{keepalive}};
  }
  server {
    listen {{listen}};
    location / {
      proxy_pass http://erp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
    }
  }
}
`

// startNginx runs nginx in the foreground in front of the ERP at erpURL.
func startNginx(bin, erpURL, dir string) (*child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("{{dir}}", dir, "{{upstream}}", strings.TrimPrefix(erpURL, "http://"),
		"{{keepalive}}", fmt.Sprint(nginxKeepalive), "{{listen}}", addr).Replace(nginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "nginx-error.log"), "-g", "daemon off;")
	logFile := filepath.Join(dir, "nginx-stderr.log")
	c, err := startChild("nginx", cmd, logFile)
	if err != nil {
		return nil, err
	}
	c.url = "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return nil, fmt.Errorf("nginx exited at start:\n%s\n%s", logTail(logFile), logTail(filepath.Join(dir, "nginx-error.log")))
		default:
		}
		if resp, err := http.Get(c.url + "/sim/admin/envelope"); err == nil {
			resp.Body.Close()
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.stop()
	return nil, errors.New("nginx did not answer within 10s")
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runERPSim builds the simulated ERP into dir and starts it on a free port
// of loopback.
func runERPSim(ctx context.Context, dir string, progress func(string, ...any)) (*child, error) {
	progress("building erpsim")
	bin, err := buildERPSim(ctx, dir)
	if err != nil {
		return nil, err
	}
	erp, err := startERPSim(bin, dir)
	if err != nil {
		return nil, fmt.Errorf("start the simulated ERP: %w", err)
	}
	return erp, nil
}

// erpgateBinary is the erpgate to measure: the binary -erpgate named, or
// one built from the source tree into dir.
func erpgateBinary(ctx context.Context, named, dir string, progress func(string, ...any)) (string, error) {
	if named != "" {
		return named, nil
	}
	progress("building erpgate")
	return buildErpgate(ctx, dir)
}

// simWorkspace is where a bench of erpgate over the simulated ERP runs: a
// temporary directory, the simulator started in it, and the erpgate
// binary to measure.
type simWorkspace struct {
	dir string
	erp *child
	bin string
}

// openSimWorkspace raises the open-file limit, makes the directory
// (loadbench-<name>-…), starts the simulated ERP and finds or builds
// erpgate; close stops the simulator and removes the directory.
func openSimWorkspace(ctx context.Context, name, erpgate string, progress func(string, ...any)) (*simWorkspace, error) {
	raiseOpenFiles()
	dir, err := os.MkdirTemp("", "loadbench-"+name+"-")
	if err != nil {
		return nil, err
	}
	w := &simWorkspace{dir: dir}
	if w.erp, err = runERPSim(ctx, dir, progress); err == nil {
		w.bin, err = erpgateBinary(ctx, erpgate, dir, progress)
	}
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *simWorkspace) close() {
	if w.erp != nil {
		w.erp.stop()
	}
	os.RemoveAll(w.dir)
}
