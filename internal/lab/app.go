//go:build linux

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// App is a long-running RDMA application pair started by Tool.Start: a
// server and a client whose QPs are connected (RTS) and carry traffic
// until Stop, or until the test ends. Tests of what a host's applications
// do (roce-probe qps, audit) look at its processes while it runs.
type App struct {
	Tool           Tool
	Server, Client *Proc
}

// RpingForever is rdma-core's rping without a count: an rdma_cm
// connection (server bound to saddr) that pings until stopped.
func RpingForever(c, s Host, saddr string, port int) Tool {
	a := []string{"-a", saddr, "-p", fmt.Sprint(port)}
	return Tool{Name: "rping", Server: s, Client: c, Port: port, RDMACM: true,
		ServerArgs: append([]string{"rping", "-s"}, a...), ClientArgs: append([]string{"rping", "-c"}, a...)}
}

// Niced is tl with both sides run under `nice -n 19`: perftest's
// programs poll their completion queues, and two spinning pairs would
// starve the test of the VM's two CPUs; niced, they take what the test
// and the kernel's rxe work leave. The process is still the program
// (nice executes it in place): its PID and command are the program's.
func (tl Tool) Niced() Tool {
	n := []string{"nice", "-n", "19"}
	tl.ServerArgs = append(append([]string(nil), n...), tl.ServerArgs...)
	tl.ClientArgs = append(append([]string(nil), n...), tl.ClientArgs...)
	return tl
}

// Start starts the server, waits until it is ready (its listener bound),
// starts the client, and returns once both processes hold a connected QP
// (RTR or RTS: a receiver that never sends, such as the server of
// perftest's unidirectional SEND tests, stays in RTR), from `rdma -j
// resource show qp` by PID: the pair is connected. It fails t
// when either exits or ctx ends first. Both are stopped when t ends.
func (tl Tool) Start(t TB, ctx context.Context) *App {
	t.Helper()
	srv := Start(t, tl.Server.Name, tl.ServerArgs[0], tl.ServerArgs[1:]...)
	var err error
	if tl.RDMACM {
		err = WaitCMListen(ctx, srv, tl.Server.RDMADevice, tl.Port)
	} else {
		err = WaitTCPListen(ctx, srv, tl.Server.Name, tl.Port)
	}
	if err != nil {
		t.Fatalf("%s: server not ready: %v", tl.Name, err)
	}
	cli := Start(t, tl.Client.Name, tl.ClientArgs[0], tl.ClientArgs[1:]...)
	a := &App{Tool: tl, Server: srv, Client: cli}
	t.Cleanup(func() { _ = a.Stop() })
	for _, p := range []*Proc{cli, srv} {
		if err := WaitQPState(ctx, p, "RTR", "RTS"); err != nil {
			t.Fatalf("%s: %v\nserver output:\n%s\nclient output:\n%s", tl.Name, err, srv.Output(), cli.Output())
		}
	}
	return a
}

// Pause stops both processes (SIGSTOP): their QPs stay as they are
// (connected, RTS) while nothing is sent and no CPU is spent; Resume
// lets them go on. Under TCG a running pair of perftest processes, and
// the kernel's rxe work for their traffic, take the VM's CPUs: a test
// that only needs the QPs to exist pauses the pairs it started.
func (a *App) Pause() error { return a.signal(syscall.SIGSTOP) }

// Resume continues paused processes (SIGCONT).
func (a *App) Resume() error { return a.signal(syscall.SIGCONT) }

func (a *App) signal(sig syscall.Signal) error {
	for _, p := range []*Proc{a.Client, a.Server} {
		if p.Exited() {
			return fmt.Errorf("lab: %s has exited:\n%s", p, p.Output())
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			return fmt.Errorf("lab: %s: %v: %w", p, sig, err)
		}
	}
	return nil
}

// PIDs returns the server's and the client's process IDs (in the lab's
// PID namespace, the one the kernel reports QP owners in).
func (a *App) PIDs() (server, client int) { return a.Server.PID(), a.Client.PID() }

// Stop stops the client and the server (SIGTERM, SIGKILL after 5 s) and
// waits until both have exited: their QPs are gone (the kernel destroys
// them when the process's RDMA file descriptors close). Their exit status
// is not checked: stopped is what was asked.
func (a *App) Stop() error {
	var first error
	for _, p := range []*Proc{a.Client, a.Server} {
		if err := p.Stop(5 * time.Second); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// PID returns the process ID of the command.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, waits up to grace for the command to exit, then
// kills it; it returns once the command has exited (nil when it had
// already).
func (p *Proc) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process acts on SIGTERM once continued
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("lab: %s did not exit after SIGKILL", p)
	}
}

// QP is one QP as `rdma -j resource show qp` (iproute2) lists it.
type QP struct {
	Dev   string `json:"ifname"`
	Port  int    `json:"port"`
	QPN   uint32 `json:"lqpn"`
	Type  string `json:"type"`
	State string `json:"state"`
	PID   int    `json:"pid"`
	Comm  string `json:"comm"`
}

// QPs lists the QPs of every RDMA device (rdma -j resource show qp, in the
// caller's namespace: every device in shared netns mode).
func QPs(ctx context.Context) ([]QP, error) {
	out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", "qp").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show qp: %w", err)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	var qps []QP
	if err := json.Unmarshal(out, &qps); err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show qp: %w: %s", err, out)
	}
	return qps, nil
}

// WaitQPState waits until p's process holds a QP in one of states ("RTS":
// connected and sending; "RTR": connected, receiving only), or p exits,
// or ctx ends.
func WaitQPState(ctx context.Context, p *Proc, states ...string) error {
	return poll(ctx, p, fmt.Sprintf("a QP of PID %d in %s", p.PID(), strings.Join(states, " or ")), func() (bool, error) {
		qps, err := QPs(ctx)
		for _, q := range qps {
			if q.PID == p.PID() && slices.Contains(states, q.State) {
				return true, nil
			}
		}
		return false, err
	})
}
