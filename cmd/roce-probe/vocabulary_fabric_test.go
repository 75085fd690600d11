package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/agent"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// vocabularyFabric runs fabric -o json on snapshot directories made from
// the mlx5-counters fixture: one where each host differs from the others
// in another fact (a finding of every check whose value is an object, and
// ports whose value is unknown), one where all agree (no findings); and on
// the rxe agents through --agents and --prometheus (fake servers).
func vocabularyFabric(t *testing.T) {
	t.Helper()
	odd := writeFabricFleet(t, 7, func(i int, s *host.Snapshot) {
		d := realDCB(t, s)
		switch i {
		case 1:
			moveGIDs(2, s)
		case 2:
			d.ETS.PrioTC = [8]uint8{0, 0, 0, 0, 1, 0, 0, 0}
		case 3:
			o := &s.Settings.TrafficClass[0]
			g := uint8(96)
			o.Status, o.Reason, o.Global = qos.SettingRead, nil, &g
		case 4:
			f := false
			s.Settings.DCQCN[0].RP[3] = &f
		case 5:
			s.Settings = nil // rdma_cm, traffic class, DCQCN unknown here
		case 6:
			d.PFC.Enabled = 0x18
		}
	})
	same := writeFabricFleet(t, 3, nil)
	for _, r := range []vocabRun{
		{"fabric -o json", []string{"fabric", "--from", odd, "-o", "json"}, exitFinding},
		{"fabric -o json", []string{"fabric", "--from", same, "-o", "json"}, exitOK},
	} {
		out, stderr, code := runCLI(t, "", r.args...)
		if code != r.code {
			t.Errorf("%v: exit %d, want %d: %s", r.args, code, r.code, stderr)
			continue
		}
		checkOutput(t, r.command, out)
	}
	agents, prom := rxeAgentsAndPrometheus(t)
	for _, args := range [][]string{{"--agents", strings.Join(agents, ",")}, {"--prometheus", prom.URL, "--host-label", "node"}} {
		out, stderr, code := runCLI(t, "", append(append([]string{"fabric"}, args...), "-o", "json")...)
		if code != exitFinding {
			t.Errorf("fabric %v: exit %d, want 1: %s", args, code, stderr)
			continue
		}
		checkOutput(t, "fabric -o json", out)
	}
}

// realDCB is the DCB state of the mlx5-counters fixture's enp1s0f0.
func realDCB(t *testing.T, s *host.Snapshot) *qos.DCB {
	for i := range s.DCB {
		if s.DCB[i].Netdev == "enp1s0f0" {
			return &s.DCB[i].DCB
		}
	}
	t.Fatal("the fixture has no DCB state of enp1s0f0")
	return nil
}

// vocabularyAgent checks the agent's /healthz body: before the first read
// (last_read null), after a good read of the rxe fixture, and after a
// read that failed (last_read_error set); and its /pairs. The agents run
// with the fixture as their host (and a neighbour for peer3) and sockets
// that lose every frame.
func vocabularyAgent(t *testing.T) {
	t.Helper()
	withPeer3 := func(collect.Options) (*host.Snapshot, error) {
		s, err := host.Load(hostFixtures + "rxe.json")
		if err != nil {
			return nil, err
		}
		ns := s.Namespaces[0]
		for _, l := range ns.Links {
			if l.Name == "veth0" {
				ns.Neighbors = append(ns.Neighbors, vlan.Neighbor{IP: netip.MustParseAddr("10.0.0.3"), Dev: "veth0", Ifindex: l.Index,
					MAC: vlan.MAC{0x02, 0, 0, 0, 0, 0x03}, State: vlan.NUDReachable})
			}
		}
		ns.Freeze()
		return s, nil
	}
	blackHole := func(string, probe.Selection) (agent.Port, error) {
		return &blackHolePort{closed: make(chan struct{})}, nil
	}
	healthz := func(h http.Handler) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Body.String()
	}
	noSockets := func(string, probe.Selection) (agent.Port, error) { return nil, errors.New("no sockets in this test") }
	cfg := agent.Default()
	cfg.Interval = time.Second
	cfg.Flows = []agent.FlowConfig{{Name: "rdma", Select: agent.SelectConfig{Netdev: "veth0", Family: "ipv4"}}}
	cfg.Peers.Static = []string{"peer2=10.0.0.2 tor=leaf1", "peer3=10.0.0.3 tor=leaf1"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Not started: nothing read yet.
	a, err := agent.New(cfg, agent.Deps{Collect: func(collect.Options) (*host.Snapshot, error) { return host.Load(hostFixtures + "rxe.json") }, Open: noSockets})
	if err != nil {
		t.Fatal(err)
	}
	checkOutput(t, "agent GET /healthz", healthz(a.Handler()))

	for _, c := range []struct {
		name    string
		collect func(collect.Options) (*host.Snapshot, error)
		key     string // the key that becomes non-null
	}{
		{"read", withPeer3, "last_read"},
		{"failed read", func(collect.Options) (*host.Snapshot, error) { return nil, errors.New("sysfs: permission denied") }, "last_read_error"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(cfg, agent.Deps{Collect: c.collect, Open: blackHole, Listener: ln})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		var body string
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := http.Get("http://" + ln.Addr().String() + "/healthz")
			if err == nil {
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				body = string(b)
				var m map[string]any
				if json.Unmarshal(b, &m) == nil && m[c.key] != nil {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: /healthz has no %s within 10s: %q (%v)", c.name, c.key, body, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		checkOutput(t, "agent GET /healthz", body)
		if c.key == "last_read" {
			// A peer the flow routes to, whose next hop the fixture has
			// no neighbour for: a pair with its error; and one with a
			// neighbour, whose probes the sockets lose: a pair with
			// its lost UDP source ports.
			eventually := time.Now().Add(10 * time.Second)
			for {
				r, err := http.Get("http://" + ln.Addr().String() + "/pairs")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r.Body)
				r.Body.Close()
				var m struct {
					Pairs []struct {
						SportFaults []any `json:"sport_faults"`
					}
				}
				if json.Unmarshal(b, &m) == nil && len(m.Pairs) == 2 && len(m.Pairs[1].SportFaults) > 0 {
					checkOutput(t, "agent GET /pairs", string(b))
					break
				}
				if time.Now().After(eventually) {
					t.Fatalf("/pairs has no pair within 10s: %s", b)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the agent did not stop within 10s", c.name)
		}
	}
}

// blackHolePort is a socket that sends nothing anywhere and receives
// nothing: every probe is lost.
type blackHolePort struct {
	once   sync.Once
	closed chan struct{}
}

func (p *blackHolePort) Read() ([]byte, time.Time, error) {
	<-p.closed
	return nil, time.Time{}, errors.New("closed")
}

func (p *blackHolePort) Drain(int, func([]byte, time.Time)) (int, error) { return 0, nil }

func (p *blackHolePort) Write([]byte) error { return nil }

func (p *blackHolePort) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}
