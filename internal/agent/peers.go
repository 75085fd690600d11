package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/internal/bound"
	"github.com/roce-probe/roce-probe/probe"
)

// Peer is one host the agent probes.
type Peer struct {
	// Name is the peer label of its metrics: the name it was given
	// (NAME=ADDRESS), else its address.
	Name string
	Addr netip.Addr
	// ToR names the switch (leaf) the peer's NIC is attached to, "" when
	// not known: from the peers file's or peers.static's tor= column,
	// else as the peer's probe replies say (Agent.replan fills it in).
	ToR string
}

// torKey starts the ToR column of a peer: "NAME=ADDRESS tor=LEAF".
const torKey = "tor="

// ParsePeer parses a peer as given in peers.static and the peers file:
// "ADDRESS" or "NAME=ADDRESS" (IPv4 or IPv6; NAME: 1..64 characters of
// letters, digits, '_', '.', ':' and '-'), optionally followed by
// "tor=LEAF": the ToR switch its NIC is attached to (the same characters).
func ParsePeer(s string) (Peer, error) {
	tor := ""
	if f := strings.Fields(s); len(f) > 1 && strings.HasPrefix(f[len(f)-1], torKey) {
		tor = strings.TrimPrefix(f[len(f)-1], torKey)
		if !validName(tor) {
			return Peer{}, fmt.Errorf("%q: tor %q: want 1..64 characters of letters, digits, '_', '.', ':' and '-'", s, tor)
		}
		s = strings.Join(f[:len(f)-1], " ")
	}
	p, err := parsePeerAddr(s)
	p.ToR = tor
	return p, err
}

// parsePeerAddr parses "ADDRESS" or "NAME=ADDRESS".
func parsePeerAddr(s string) (Peer, error) {
	name, addr, named := strings.Cut(strings.TrimSpace(s), "=")
	if !named {
		addr, name = name, ""
	}
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil || a.Zone() != "" {
		return Peer{}, fmt.Errorf("%q is not a peer: want an IP address or NAME=ADDRESS", s)
	}
	a = a.Unmap()
	if !validPeerAddr(a) {
		return Peer{}, fmt.Errorf("%q: %s is not a unicast address another host can have: want a peer's address", s, a)
	}
	name = strings.TrimSpace(name)
	if named && !validName(name) {
		return Peer{}, fmt.Errorf("%q: name %q: want 1..64 characters of letters, digits, '_', '.', ':' and '-'", s, name)
	}
	if name == "" {
		name = a.String()
	}
	return Peer{Name: name, Addr: a}, nil
}

// validPeerAddr reports whether a can be a peer's address, from the peers
// file, the configuration or peers.dns alike: an address a probe can be
// sent to (probe.CheckDestination) that is not link-local (a peer is
// named without the zone that would say which link).
func validPeerAddr(a netip.Addr) bool {
	return probe.CheckDestination(a) == nil && !a.Unmap().IsLinkLocalUnicast()
}

// parsePeerFile parses a peers file: one peer per line as ParsePeer takes
// it, blank lines and '#' comments ignored. An error names the line.
//
// The file is made a string once and every name and ToR is a part of it:
// no allocation per peer for them, and none for the garbage collector to
// mark (100,000 peers: 200,000 strings fewer in the agent's heap).
func parsePeerFile(b []byte) ([]Peer, error) {
	out := make([]Peer, 0, bytes.Count(b, []byte("\n"))+1)
	i := -1
	for line := range strings.SplitSeq(string(b), "\n") {
		i++
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		s := strings.TrimSpace(line)
		if s == "" {
			continue
		}
		p, err := ParsePeer(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Resolver looks up the addresses of a name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// peerSources holds the last good peer list of each source.
type peerSources struct {
	static, file, dns []Peer
}

// merged returns the union of the sources, one peer per address (a
// static peer's name first, then the file's), sorted by address. With one
// source (the common case: a peers file) it is that source's list itself,
// which byAddress made so: the agent holds one copy of 100,000 peers, not
// two.
func (s peerSources) merged() []Peer {
	var one []Peer
	n := 0
	for _, list := range [][]Peer{s.static, s.file, s.dns} {
		if len(list) > 0 {
			one, n = list, n+1
		}
	}
	if n == 1 {
		return one
	}
	seen := map[netip.Addr]bool{}
	var out []Peer
	for _, list := range [][]Peer{s.static, s.file, s.dns} {
		for _, p := range list {
			if !seen[p.Addr] {
				seen[p.Addr] = true
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b Peer) int { return a.Addr.Compare(b.Addr) })
	return out
}

// byAddress sorts a source's new list by address in place, keeping the
// first peer of each address, before the watcher publishes it.
func byAddress(ps []Peer) []Peer {
	slices.SortStableFunc(ps, func(a, b Peer) int { return a.Addr.Compare(b.Addr) })
	return slices.CompactFunc(ps, func(a, b Peer) bool { return a.Addr == b.Addr })
}

// peerWatcher re-resolves the DNS name and re-reads the peers file and
// sends the merged list on out whenever it changed. A source that fails
// keeps its last good list; the failure is counted and logged once per
// new error text.
type peerWatcher struct {
	cfg     PeersConfig
	res     Resolver
	out     chan []Peer // capacity 1: the newest list replaces one not yet taken
	onError func(source string, err error)
	onRead  func(source string)

	src      peerSources
	lastFile uint64 // the last good read's hash (the file itself may be MBs)
	changed  bool   // a source's list changed since the last publish
	seed     maphash.Seed
	buf      []byte // fileSum's
	upkeep   *upkeep
	fileRead bool
	last     []Peer
	sent     bool
}

func newPeerWatcher(cfg PeersConfig, res Resolver, onError func(string, error), onRead func(string)) (*peerWatcher, error) {
	w := &peerWatcher{cfg: cfg, res: res, out: make(chan []Peer, 1), onError: onError, onRead: onRead, seed: maphash.MakeSeed()}
	for _, s := range cfg.Static {
		p, err := ParsePeer(s)
		if err != nil {
			return nil, err
		}
		w.src.static = append(w.src.static, p)
	}
	w.src.static = byAddress(w.src.static)
	return w, nil
}

// dnsTimeout bounds one lookup.
func (w *peerWatcher) dnsTimeout() time.Duration {
	return min(5*time.Second, w.cfg.DNSInterval)
}

func (w *peerWatcher) resolve(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, w.dnsTimeout())
	defer cancel()
	addrs, err := w.res.LookupNetIP(ctx, "ip", w.cfg.DNS)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return // stopping
		}
		w.onError(sourceDNS, fmt.Errorf("resolving peers.dns %q: %w (keeping the %d peers of the last answer)", w.cfg.DNS, err, len(w.src.dns)))
		return
	}
	var ps []Peer
	for _, a := range addrs {
		a = a.Unmap()
		if validPeerAddr(a) {
			ps = append(ps, Peer{Name: a.String(), Addr: a})
		}
	}
	if ps = byAddress(ps); !slices.Equal(ps, w.src.dns) {
		w.src.dns, w.changed = ps, true
	}
	w.onRead(sourceDNS)
}

// MaxPeersFileSize bounds the peers file: 100,000 lines of
// "node-012345=10.1.2.3 tor=leaf-1234" are 3.6 MB.
const MaxPeersFileSize = 16 << 20

func (w *peerWatcher) readFile() {
	if w.fileRead && w.fileSum() == w.lastFile {
		// Unchanged: checked without reading the file into memory
		// (100,000 peers: 3.2 MB, and io.ReadAll's growing buffers
		// twice that, every FileInterval — a garbage collection of the
		// agent's heap each time).
		w.onRead(sourcePeersFile)
		return
	}
	b, err := readLimited(w.cfg.File, MaxPeersFileSize)
	sum := maphash.Bytes(w.seed, b)
	if err == nil && w.fileRead && sum == w.lastFile {
		w.onRead(sourcePeersFile)
		return
	}
	var ps []Peer
	if err == nil {
		ps, err = parsePeerFile(b)
	}
	if err != nil {
		w.onError(sourcePeersFile, fmt.Errorf("peers.file %q: %w (keeping its %d peers of the last good read)", w.cfg.File, err, len(w.src.file)))
		return
	}
	w.src.file, w.lastFile, w.fileRead, w.changed = byAddress(ps), sum, true, true
	w.onRead(sourcePeersFile)
}

// fileSum is the hash of the peers file as it is now (as readFile hashes
// it), streamed through a reused buffer; 0 when it cannot be read or is
// larger than MaxPeersFileSize (readFile then reads it and says why).
func (w *peerWatcher) fileSum() uint64 {
	f, err := os.Open(w.cfg.File)
	if err != nil {
		return 0
	}
	defer f.Close()
	if w.buf == nil {
		w.buf = make([]byte, 64<<10)
	}
	var h maphash.Hash
	h.SetSeed(w.seed)
	n, err := io.CopyBuffer(&h, io.LimitReader(f, MaxPeersFileSize+1), w.buf)
	if err != nil || n > MaxPeersFileSize {
		return 0
	}
	return h.Sum64()
}

// tooLargeError is readLimited's error for a file larger than its bound.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.max) }

// readLimited reads at most max bytes of path (the configuration file,
// peers.file); a larger file is a *tooLargeError, a file that cannot be
// read the error without the path.
func readLimited(path string, max int64) ([]byte, error) {
	b, err := bound.ReadFile(path, max, "the file")
	if errors.Is(err, bound.ErrTooLarge) {
		return nil, &tooLargeError{max}
	}
	if err != nil {
		return nil, unwrapPath(err)
	}
	return b, nil
}

// publish sends the merged list if it differs from the last one sent.
func (w *peerWatcher) publish() {
	if w.sent && !w.changed {
		return // no source changed: no merge (100,000 peers: a map and a sort)
	}
	w.changed = false
	m := w.merged()
	if w.sent && slices.Equal(m, w.last) {
		return
	}
	w.last, w.sent = m, true
	select {
	case <-w.out: // drop the list not taken yet
	default:
	}
	w.out <- m
}

func (w *peerWatcher) merged() []Peer { return w.src.merged() }

// run updates the sources until ctx ends: DNS every DNSInterval, the file
// every FileInterval, both at once at the start.
func (w *peerWatcher) run(ctx context.Context) {
	var dnsC, fileC <-chan time.Time
	if w.cfg.DNS != "" {
		t := time.NewTicker(w.cfg.DNSInterval)
		defer t.Stop()
		dnsC = t.C
	}
	if w.cfg.File != "" {
		t := time.NewTicker(w.cfg.FileInterval)
		defer t.Stop()
		fileC = t.C
	}
	w.refresh(ctx, w.cfg.DNS != "", w.cfg.File != "")
	for {
		select {
		case <-ctx.Done():
			return
		case <-dnsC:
			w.refresh(ctx, true, false)
		case <-fileC:
			w.refresh(ctx, false, true)
		}
	}
}

// refresh resolves the DNS name, reads the file, or both, and publishes
// the merged list if it changed: upkeep (the Governor does not count it).
func (w *peerWatcher) refresh(ctx context.Context, dns, file bool) {
	w.upkeep.begin()
	defer w.upkeep.end()
	if dns {
		w.resolve(ctx)
	}
	if file {
		w.readFile()
	}
	w.publish()
}
