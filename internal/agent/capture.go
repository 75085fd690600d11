package agent

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

// Opener opens a raw socket of a netdev capturing the frames of sel
// (probe.OpenWith with probe.Incoming on Linux; the Replies socket
// DrainOnly).
type Opener func(netdev string, sel probe.Selection) (Port, error)

// capture opens two sockets per netdev. The listener's (probe.NoReplies)
// has a reader goroutine that hands every frame to the probe listener (a
// probe.Responder's HandleReply: the decision `roce-probe listen` makes,
// without the Event listen prints), whose replies go back out of the same
// socket. The mesh's (probe.Replies) is the mesh's port:
// it sends probes through it and drains their replies when it wakes to
// send, so a reply costs no wake-up of its own.
type capture struct {
	open    Opener
	mesh    *mesh
	log     *slog.Logger
	onError func(source string, err error)

	respMu sync.Mutex // serializes the responder (Handle and SetLocal)
	resp   *probe.Responder
	tors   atomic.Pointer[torOf] // the ToR a reply tells, by netdev

	mu    sync.Mutex
	ports map[string]*capPort
	wg    sync.WaitGroup
}

type capPort struct {
	name    string
	p       Port        // the listener's: probes and other frames, not replies
	r       Port        // the mesh's: replies
	closing atomic.Bool // closed by us: a read error is expected
	dead    atomic.Bool // the socket failed: open it again at the next sync
}

func newCapture(open Opener, m *mesh, resp *probe.Responder, log *slog.Logger, onError func(string, error)) *capture {
	c := &capture{open: open, mesh: m, resp: resp, log: log, onError: onError, ports: map[string]*capPort{}}
	m.portFailed = c.replyPortFailed
	return c
}

// setLocal gives the listener the host's addresses.
func (c *capture) setLocal(ns *vlan.Namespace) {
	addrs, macs := probe.LocalAddresses(ns)
	c.respMu.Lock()
	c.resp.SetLocal(macs, addrs)
	c.respMu.Unlock()
}

// setToRs gives the listener the ToR of each netdev, for replies to
// probes that ask (probe.TopologyPayloadLen).
func (c *capture) setToRs(t torOf) { c.tors.Store(&t) }

// sync captures on exactly the netdevs of want: new ones and those whose
// socket failed are opened, the others closed.
func (c *capture) sync(want []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := map[string]bool{}
	for _, name := range want {
		keep[name] = true
		if cp := c.ports[name]; cp != nil && !cp.dead.Load() {
			continue
		}
		p, err := c.open(name, probe.NoReplies)
		var r Port
		if err == nil {
			if r, err = c.open(name, probe.Replies); err != nil {
				p.Close()
			}
		}
		if err != nil {
			c.onError(sourceCapture, fmt.Errorf("capturing on %s: %w", name, err))
			delete(c.ports, name)
			continue
		}
		cp := &capPort{name: name, p: p, r: r}
		c.ports[name] = cp
		c.mesh.setPort(name, r)
		c.wg.Add(1)
		go c.read(cp)
	}
	for name, cp := range c.ports {
		if !keep[name] {
			c.stop(cp)
			delete(c.ports, name)
		}
	}
}

// count is the number of open sockets.
func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cp := range c.ports {
		if !cp.dead.Load() {
			n++
		}
	}
	return n
}

func (c *capture) stop(cp *capPort) {
	cp.closing.Store(true)
	c.mesh.dropPort(cp.name, cp.r)
	cp.p.Close()
	cp.r.Close()
}

// fail reports a failed socket of cp and closes both: the next sync opens
// them again.
func (c *capture) fail(cp *capPort, err error) {
	if cp.closing.Swap(true) {
		return // closed by us, or already failed
	}
	c.onError(sourceCapture, fmt.Errorf("capturing on %s: %w", cp.name, err))
	cp.dead.Store(true)
	c.stop(cp)
}

// replyPortFailed is the mesh telling that draining r failed.
func (c *capture) replyPortFailed(netdev string, r Port, err error) {
	c.mu.Lock()
	cp := c.ports[netdev]
	c.mu.Unlock()
	if cp != nil && cp.r == r {
		c.fail(cp, err)
	}
}

// close closes every socket and waits for the readers (a Read waiting
// on a closed socket returns at once).
func (c *capture) close() {
	c.mu.Lock()
	for name, cp := range c.ports {
		c.stop(cp)
		delete(c.ports, name)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *capture) read(cp *capPort) {
	defer c.wg.Done()
	for {
		frame, _, err := cp.p.Read()
		if err != nil {
			c.fail(cp, err)
			return
		}
		if frame != nil {
			c.handle(cp, frame)
		}
	}
}

// handle gives one captured frame to the listener.
func (c *capture) handle(cp *capPort, frame []byte) {
	tor := ""
	if t := c.tors.Load(); t != nil {
		tor = t.of(cp.name)
	}
	c.respMu.Lock()
	reply := c.resp.HandleReplyToR(frame, tor)
	c.respMu.Unlock()
	if reply != nil {
		if err := cp.p.Write(reply); err != nil && !cp.closing.Load() {
			c.onError(sourceCapture, fmt.Errorf("answering on %s: %w", cp.name, err))
		}
	}
}
