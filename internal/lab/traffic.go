package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proc is a command running in a network namespace (a server or client of
// an RDMA tool), with its combined output.
type Proc struct {
	Namespace string
	cmd       *exec.Cmd
	out       syncBuffer
	done      chan struct{}
	err       error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start starts a command in a network namespace for test t; it is killed
// when the test ends if it is still running then.
func Start(t TB, namespace, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Namespace: namespace, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	if err := StartIn(namespace, p.cmd); err != nil {
		t.Fatalf("lab: start %s %s in %s: %v", name, strings.Join(args, " "), namespace, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// String names the command and its namespace.
func (p *Proc) String() string {
	return fmt.Sprintf("%s (in %s)", strings.Join(p.cmd.Args, " "), p.Namespace)
}

// Output returns what the command has written so far.
func (p *Proc) Output() string { return p.out.String() }

// Wait waits until the command exits or ctx ends; the error of a failed
// command includes its output.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("lab: %s still running: %w\n%s", p, ctx.Err(), p.Output())
	}
	if p.err != nil {
		return fmt.Errorf("lab: %s: %w\n%s", p, p.err, p.Output())
	}
	return nil
}

// Exited reports whether the command has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// poll calls ready every 20 ms until it returns true, p (if not nil) exits,
// or ctx ends.
func poll(ctx context.Context, p *Proc, what string, ready func() (bool, error)) error {
	for {
		ok, err := ready()
		if ok {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("lab: %s exited before %s: %v\n%s", p, what, p.err, p.Output())
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("lab: %s: %w (last error: %v)", what, ctx.Err(), err)
			}
			return fmt.Errorf("lab: %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitTCPListen waits until a TCP socket listens on port in the namespace
// (/proc/thread-self/net/tcp and tcp6 read there), or p exits. The
// out-of-band exchange of ibv_rc_pingpong and perftest (without -R) uses
// such a socket.
func WaitTCPListen(ctx context.Context, p *Proc, namespace string, port int) error {
	return poll(ctx, p, fmt.Sprintf("a TCP listener on port %d in %s", port, namespace), func() (bool, error) {
		found := false
		err := InNetns(namespace, func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				ok, err := tcpListening(f, port)
				if err != nil {
					return err
				}
				found = found || ok
			}
			return nil
		})
		return found, err
	})
}

func tcpListening(path string, port int) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st ...: "0: 00000000:4853 00000000:0000 0A ..."
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || fs[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(v) == port {
			return true, nil
		}
	}
	return false, sc.Err()
}

// CMID is one rdma_cm ID as `rdma -j resource show cm_id` lists it.
type CMID struct {
	Dev     string `json:"ifname"`
	State   string `json:"state"`
	PS      string `json:"ps"`
	SrcAddr string `json:"src-addr"`
	SrcPort int    `json:"src-port"`
	Comm    string `json:"comm"`
}

// CMIDs lists the rdma_cm IDs bound to RDMA devices (rdma -j resource show
// cm_id, in the caller's namespace; it lists every device's in shared
// netns mode).
func CMIDs(ctx context.Context) ([]CMID, error) {
	out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", "cm_id").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show cm_id: %w", err)
	}
	var ids []CMID
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &ids); err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show cm_id: %w: %s", err, out)
	}
	return ids, nil
}

// WaitCMListen waits until an rdma_cm ID of RDMA device dev listens on
// port (rdma_listen done: a server such as ucmatose, rping -s or perftest
// -R is ready to accept), or p exits.
func WaitCMListen(ctx context.Context, p *Proc, dev string, port int) error {
	return poll(ctx, p, fmt.Sprintf("an rdma_cm listener on %s port %d", dev, port), func() (bool, error) {
		ids, err := CMIDs(ctx)
		for _, id := range ids {
			if id.Dev == dev && id.State == "LISTEN" && id.SrcPort == port {
				return true, nil
			}
		}
		return false, err
	})
}

// RoceProbe returns the path of the roce-probe binary built for this lab
// run: $LAB_ROCE_PROBE, which scripts/lab.sh sets.
func RoceProbe() (string, error) {
	p := os.Getenv("LAB_ROCE_PROBE")
	if p == "" {
		return "", fmt.Errorf("lab: LAB_ROCE_PROBE is not set: run lab tests with scripts/lab.sh, or set it to a roce-probe binary")
	}
	return p, nil
}
