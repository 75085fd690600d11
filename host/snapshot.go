package host

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/bound"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// Format is the value of a snapshot's "format" key: what tells a snapshot
// from any other JSON document.
const Format = "roce-probe-snapshot"

// Version is the snapshot format version this package writes and reads.
// A reader refuses other versions rather than guess what their keys mean.
const Version = 1

// Snapshot is everything roce-probe's read-only commands read from one
// host, taken at one moment: RDMA devices with their ports and GID tables,
// the network namespaces' netdevs, routes, neighbours and sysctls, and
// DCB per netdev. It is plain data: Collect fills it from the kernel,
// Decode from JSON, and every analysis works on it, so a command gives the
// same answer live and from a file (docs/snapshot.md).
//
// A section that was not collected is nil (null in JSON); a command that
// needs it says so.
type Snapshot struct {
	// Tool is the roce-probe version that wrote the snapshot.
	Tool string
	// Hostname and Kernel (uname -r) identify the host; Time is when the
	// collection started (UTC).
	Hostname string
	Kernel   string
	Time     time.Time
	// RDMA lists the RDMA devices; nil when not collected, an empty
	// Devices list when the host has none.
	RDMA *RDMA
	// Namespaces are the network namespaces read, the view first: the one
	// commands look netdevs up in unless told otherwise (the collector's
	// own namespace, or the one named with --netns).
	Namespaces []*vlan.Namespace
	// DCB is each real netdev's DCB state, by namespace; nil when not
	// collected.
	DCB []DCB
	// Counters is one sample of the RDMA ports' counters and the real
	// netdevs' ethtool and PFC counters; nil when not collected
	// (docs/counters.md).
	Counters *counters.Sample
	// Settings are the settings applied behind the application's back:
	// rdma_cm's configfs defaults, mlx5 traffic class overrides, DCQCN;
	// nil when not collected.
	Settings *Settings
	// Census is the QP census: the QPs and rdma_cm IDs with the
	// processes that own them (package census); nil when not collected
	// (and in snapshots written before it was).
	Census *census.Census
	// Topology is each RoCE netdev's switch and switch port (LLDP, lldpd
	// or configuration); nil when not collected, and in snapshots written
	// before it was.
	Topology *Topology
	// Errors lists the sources that could not be read; the snapshot holds
	// everything else.
	Errors []SourceError
}

// RDMA is the RDMA section: every device the host shows in
// /sys/class/infiniband.
type RDMA struct {
	Devices []Device `json:"devices"`
}

// Device is one RDMA device.
type Device struct {
	Name string `json:"device"`
	// Driver is the RDMA driver detected from sysfs and the evidence.
	Driver qos.DriverInfo `json:"driver_info"`
	Ports  []Port         `json:"ports"`
}

// Port is one port of an RDMA device as sysfs shows it, with its GID table
// as stored: the used slots only (every other slot below TableLen is
// empty), each with the type and netdev the kernel reports.
type Port struct {
	Port      int    `json:"port"`
	State     string `json:"state"`      // ports/P/state without the number: "ACTIVE", "DOWN", ...
	PhysState string `json:"phys_state"` // ports/P/phys_state: "LinkUp", "Disabled", ...
	LinkLayer string `json:"link_layer"` // "Ethernet" or "InfiniBand"
	// Netdev is the RDMA device's own netdev for this port ("" when it
	// has none that sysfs shows).
	Netdev   string `json:"-"`
	TableLen int    `json:"gid_table_len"`
	GIDs     []Slot `json:"gids"`
}

// portWire is a port's JSON form with its GID slots as S: Slot where a
// Port is marshalled or unmarshalled alone, slotJSON in Decode's one pass
// (no nested UnmarshalJSON re-scanning each slot's bytes).
type portWire[S any] struct {
	Port      int     `json:"port"`
	State     string  `json:"state"`
	PhysState string  `json:"phys_state"`
	LinkLayer string  `json:"link_layer"`
	Netdev    *string `json:"netdev"`
	TableLen  int     `json:"gid_table_len"`
	GIDs      []S     `json:"gids"`
}

type portJSON = portWire[Slot]

// MarshalJSON writes netdev as null when the port has none.
func (p Port) MarshalJSON() ([]byte, error) {
	w := portJSON{Port: p.Port, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer, Netdev: null.String(p.Netdev), TableLen: p.TableLen, GIDs: p.GIDs}
	if w.GIDs == nil {
		w.GIDs = []Slot{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (p *Port) UnmarshalJSON(b []byte) error {
	var w portJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*p = Port{Port: w.Port, State: w.State, PhysState: w.PhysState, LinkLayer: w.LinkLayer, Netdev: deref(w.Netdev), TableLen: w.TableLen, GIDs: w.GIDs}
	return nil
}

// Slot is one used slot of a GID table as sysfs reports it:
// gids/<index>, gid_attrs/types/<index>, gid_attrs/ndevs/<index>.
type Slot struct {
	Index int
	GID   gid.GID
	Type  gid.Type
	// Netdev is "" when gid_attrs/ndevs failed: the kernel hides a netdev
	// of another network namespace.
	Netdev string
}

type slotJSON struct {
	Index  int      `json:"index"`
	GID    gid.GID  `json:"gid"`
	Type   gid.Type `json:"type"`
	Netdev *string  `json:"netdev"`
}

// MarshalJSON writes {index, gid, type, netdev}, netdev null when unknown.
func (s Slot) MarshalJSON() ([]byte, error) {
	return json.Marshal(slotJSON{Index: s.Index, GID: s.GID, Type: s.Type, Netdev: null.String(s.Netdev)})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (s *Slot) UnmarshalJSON(b []byte) error {
	var w slotJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*s = Slot{Index: w.Index, GID: w.GID, Type: w.Type, Netdev: deref(w.Netdev)}
	return nil
}

// DCB is one netdev's DCB state and the namespace it was read in.
type DCB struct {
	// Netns is the namespace ("" for the collector's own, null in JSON).
	Netns string
	qos.DCB
}

type dcbJSON struct {
	Netns *string `json:"netns"`
	qos.DCB
}

// MarshalJSON writes netns and the keys qos.DCB writes (docs/json.md,
// "snapshot_dcb").
func (d DCB) MarshalJSON() ([]byte, error) {
	ns, err := json.Marshal(null.String(d.Netns))
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(d.DCB) // {"netdev":...}: never empty
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"netns":`), ns...)
	out = append(out, ',')
	return append(out, b[1:]...), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (d *DCB) UnmarshalJSON(b []byte) error {
	var w dcbJSON
	if err := strictUnmarshal(b, &w); err != nil {
		return err
	}
	*d = DCB{Netns: deref(w.Netns), DCB: w.DCB}
	return nil
}

// SourceError is one source the collector could not read, and why.
type SourceError struct {
	// Source names what was read: "dcb eth0", "rdma", "netns blue", ...
	Source string `json:"source"`
	Error  string `json:"error"`
}

// snapshotJSON is the document's wire form.
type snapshotJSON struct {
	Format     string            `json:"format"`
	Version    int               `json:"version"`
	Tool       string            `json:"roce_probe_version"`
	Hostname   *string           `json:"hostname"`
	Kernel     *string           `json:"kernel"`
	Time       time.Time         `json:"time"`
	RDMA       *RDMA             `json:"rdma"`
	Namespaces []*vlan.Namespace `json:"namespaces"`
	DCB        []DCB             `json:"dcb"`
	Counters   *counters.Sample  `json:"counters"`
	Settings   *Settings         `json:"settings"`
	Census     *census.Census    `json:"census"`
	Topology   *Topology         `json:"topology"`
	Errors     []SourceError     `json:"errors"`
}

// MarshalJSON writes the snapshot document (docs/json.md, "snapshot").
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	w := snapshotJSON{Format: Format, Version: Version, Tool: s.Tool, Hostname: null.String(s.Hostname), Kernel: null.String(s.Kernel),
		Time: s.Time, RDMA: s.RDMA, Namespaces: s.Namespaces, DCB: s.DCB, Counters: s.Counters, Settings: s.Settings, Census: s.Census,
		Topology: s.Topology, Errors: s.Errors}
	if w.Namespaces == nil {
		w.Namespaces = []*vlan.Namespace{}
	}
	if w.Errors == nil {
		w.Errors = []SourceError{}
	}
	return json.Marshal(w)
}

// Errors of Decode, for errors.Is.
var (
	ErrNotSnapshot = errors.New("not a roce-probe snapshot")
	ErrVersion     = errors.New("unknown snapshot version")
)

// Decode reads a snapshot document (plain or gzip-compressed JSON) and
// validates it. Its errors name what is wrong: not JSON, not a snapshot
// (ErrNotSnapshot), a version this roce-probe does not read (ErrVersion),
// an unknown key, a value out of range.
func Decode(r io.Reader) (*Snapshot, error) {
	return DecodeWith(r, DecodeOptions{})
}

// DecodeOptions change what DecodeWith keeps of a snapshot.
type DecodeOptions struct {
	// SkipCounters leaves the counters sample out: it must be JSON, but
	// it is neither decoded nor validated, and Counters is nil. For
	// readers of many snapshots that do not analyse counters (roce-probe
	// fabric): the sample is a fifth of a snapshot's decoding time.
	SkipCounters bool
	// SkipCensus leaves the QP census out (JSON, neither decoded nor
	// validated; Census nil): for readers of many snapshots that do not
	// look at processes (roce-probe fabric). A host with thousands of QPs
	// has a census larger than the rest of its snapshot.
	SkipCensus bool
	// MaxBytes bounds the bytes read and, when compressed, the JSON they
	// decompress to (0: MaxSnapshotBytes).
	MaxBytes int64
}

// DecodeWith is Decode with options.
func DecodeWith(r io.Reader, o DecodeOptions) (*Snapshot, error) {
	max := o.MaxBytes
	if max <= 0 {
		max = MaxSnapshotBytes
	}
	br := bufio.NewReader(&bound.Reader{R: r, N: max, What: "the snapshot"})
	var in io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("snapshot: gzip: %w", err)
		}
		defer zr.Close()
		in = &bound.Reader{R: zr, N: max, What: "the decompressed snapshot"}
	}
	b, err := io.ReadAll(in)
	if errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading: %w", err)
	}
	return decodeBytes(b, o)
}

// Wire forms the decoder fills in one strict pass. Port, Slot and DCB
// have UnmarshalJSON methods of their own (for callers that decode one of
// them), but a custom unmarshaller re-scans its bytes with a decoder of its
// own, so a snapshot decoded through them was scanned once per nesting
// level: Decode fills these plain structs instead, which the one strict
// decoder checks for unknown keys all the way down.
type (
	decodeBase struct {
		Format     *string            `json:"format"`
		Version    *int               `json:"version"`
		Tool       string             `json:"roce_probe_version"`
		Hostname   *string            `json:"hostname"`
		Kernel     *string            `json:"kernel"`
		Time       time.Time          `json:"time"`
		RDMA       *rdmaDecode        `json:"rdma"`
		Namespaces []*namespaceDecode `json:"namespaces"`
		DCB        []dcbJSON          `json:"dcb"`
		Settings   *Settings          `json:"settings"`
		Census     json.RawMessage    `json:"census"` // decoded after the pass, unless skipped
		Topology   *Topology          `json:"topology"`
		Errors     []SourceError      `json:"errors"`
	}
	decodeJSON struct {
		decodeBase
		Counters *counters.Sample `json:"counters"`
	}
	decodeSkipCounters struct {
		decodeBase
		Counters skipJSON `json:"counters"`
	}
	// namespaceDecode is vlan.Namespace's wire form (namespaceJSON in
	// vlan/namespace.go), decoded here in the one pass rather than by
	// Namespace.UnmarshalJSON, which re-scans its bytes.
	namespaceDecode struct {
		Netns     *string         `json:"netns"`
		Links     []vlan.Link     `json:"links"`
		Routes    []vlan.Route    `json:"routes"`
		Neighbors []vlan.Neighbor `json:"neighbors"`
		Sysctls   vlan.Sysctls    `json:"sysctls"`
	}
	rdmaDecode struct {
		Devices []deviceDecode `json:"devices"`
	}
	deviceDecode struct {
		Name   string         `json:"device"`
		Driver qos.DriverInfo `json:"driver_info"`
		Ports  []portDecode   `json:"ports"`
	}
	portDecode = portWire[slotDecode]
	// slotDecode is a GID slot with the GID and type as written: parsed
	// in snapshot(), where the device, port and index are known for the
	// message.
	slotDecode struct {
		Index  int     `json:"index"`
		GID    string  `json:"gid"`
		Type   string  `json:"type"`
		Netdev *string `json:"netdev"`
	}
)

// skipJSON is a value the decoder scans (it must be JSON) and drops.
type skipJSON struct{}

// UnmarshalJSON drops the value.
func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// snapshot converts the decoded wire form; a GID or type that does not
// parse is an error naming its device, port and index.
func (w *decodeBase) snapshot() (*Snapshot, error) {
	s := &Snapshot{Tool: w.Tool, Hostname: deref(w.Hostname), Kernel: deref(w.Kernel), Time: w.Time,
		Settings: w.Settings, Topology: w.Topology, Errors: w.Errors}
	if w.Namespaces != nil {
		s.Namespaces = make([]*vlan.Namespace, len(w.Namespaces))
		for i, n := range w.Namespaces {
			if n != nil {
				s.Namespaces[i] = &vlan.Namespace{Netns: deref(n.Netns), Links: n.Links, Routes: n.Routes, Neighbors: n.Neighbors, Sysctls: n.Sysctls}
			}
		}
	}
	if w.RDMA != nil {
		s.RDMA = &RDMA{Devices: make([]Device, len(w.RDMA.Devices))}
		if w.RDMA.Devices == nil {
			s.RDMA.Devices = nil
		}
		for i, d := range w.RDMA.Devices {
			dev := Device{Name: d.Name, Driver: d.Driver, Ports: make([]Port, len(d.Ports))}
			if d.Ports == nil {
				dev.Ports = nil
			}
			for j, p := range d.Ports {
				port := Port{Port: p.Port, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer, Netdev: deref(p.Netdev), TableLen: p.TableLen}
				if p.GIDs != nil {
					port.GIDs = make([]Slot, len(p.GIDs))
					for k, g := range p.GIDs {
						id, err := gid.Parse(g.GID)
						if err != nil {
							return nil, fmt.Errorf("snapshot: %s port %d: GID index %d (rdma.devices[%d].ports[%d].gids[%d]): %w", d.Name, p.Port, g.Index, i, j, k, err)
						}
						typ, err := gid.ParseType(g.Type)
						if err != nil {
							return nil, fmt.Errorf("snapshot: %s port %d: GID index %d (rdma.devices[%d].ports[%d].gids[%d]): %w", d.Name, p.Port, g.Index, i, j, k, err)
						}
						port.GIDs[k] = Slot{Index: g.Index, GID: id, Type: typ, Netdev: deref(g.Netdev)}
					}
				}
				dev.Ports[j] = port
			}
			s.RDMA.Devices[i] = dev
		}
	}
	if w.DCB != nil {
		s.DCB = make([]DCB, len(w.DCB))
		for i, d := range w.DCB {
			s.DCB[i] = DCB{Netns: deref(d.Netns), DCB: d.DCB}
		}
	}
	return s, nil
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func decodeBytes(b []byte, o DecodeOptions) (*Snapshot, error) {
	// One strict pass. A document of another kind or version is named as
	// such, not by its first unknown key: when the pass fails, or the
	// document says it is something else, headError looks at format and
	// version first.
	var full decodeJSON
	var lean decodeSkipCounters
	var v any = &full
	base := &full.decodeBase
	if o.SkipCounters {
		v, base = &lean, &lean.decodeBase
	}
	if err := bound.CheckJSON(b, bound.JSONLimits{Depth: MaxSnapshotDepth, Containers: MaxSnapshotObjects}, "the snapshot"); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && !onlySpace(b[dec.InputOffset():]) {
		// Data after the document: json.Unmarshal in headError names it.
		if herr := headError(b); herr != nil {
			return nil, herr
		}
	}
	if err != nil {
		if herr := headError(b); herr != nil {
			return nil, herr
		}
		return nil, fmt.Errorf("snapshot: %w", jsonError(b, err))
	}
	if herr := checkHead(base.Format, base.Version); herr != nil {
		return nil, herr
	}
	s, err := base.snapshot()
	if err != nil {
		return nil, err
	}
	if !o.SkipCounters {
		s.Counters = full.Counters
	}
	if c := base.Census; !o.SkipCensus && len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		// The census's own strict decoder (its keys, and a QP or rdma_cm
		// ID listed twice, are checked there).
		s.Census = &census.Census{}
		if err := json.Unmarshal(c, s.Census); err != nil {
			return nil, fmt.Errorf("snapshot: census: %w", err)
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	for _, n := range s.Namespaces {
		for i := range n.Links {
			n.Links[i].OperState = vlan.KernelOperState(n.Links[i].OperState)
		}
		n.Freeze()
	}
	return s, nil
}

// headError reads only format and version: what is wrong when the
// document is not JSON, not a snapshot or of another version; nil when
// those two are right.
func headError(b []byte) error {
	var head struct {
		Format  *string `json:"format"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("snapshot: %w", jsonError(b, err))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "" {
			return fmt.Errorf("snapshot: %w: the document is %s %s, want an object", ErrNotSnapshot, article(te.Value), te.Value)
		}
		return fmt.Errorf("snapshot: %w: %v", ErrNotSnapshot, jsonError(b, err))
	}
	return checkHead(head.Format, head.Version)
}

// checkHead checks a document's format and version.
func checkHead(format *string, version *int) error {
	if format == nil || *format != Format {
		got := "no \"format\" key"
		if format != nil {
			got = fmt.Sprintf("format %q", *format)
		}
		return fmt.Errorf("snapshot: %w: %s, want \"format\": %q (written by 'roce-probe collect')", ErrNotSnapshot, got, Format)
	}
	if version == nil || *version != Version {
		got := "no version"
		if version != nil {
			got = fmt.Sprintf("version %d", *version)
		}
		return fmt.Errorf("snapshot: %w: %s, this roce-probe reads version %d", ErrVersion, got, Version)
	}
	return nil
}

// onlySpace reports whether b is JSON whitespace only.
func onlySpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// Load reads and decodes the snapshot file path ("-" for standard input).
func Load(path string) (*Snapshot, error) {
	return LoadWith(path, DecodeOptions{})
}

// LoadWith is Load with options.
func LoadWith(path string, o DecodeOptions) (*Snapshot, error) {
	if path == "-" {
		return DecodeWith(os.Stdin, o)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeWith(f, o)
}

// Validate checks what a snapshot read from the kernel always satisfies:
// unique device and port numbers, slots inside their table, unique and
// consistent namespaces, DCB entries of known namespaces.
func (s *Snapshot) Validate() error {
	if s.RDMA != nil {
		devs := map[string]bool{}
		for i, d := range s.RDMA.Devices {
			if d.Name == "" || strings.ContainsAny(d.Name, "/\x00") {
				return fmt.Errorf("snapshot: rdma.devices[%d]: device name %q is not valid", i, d.Name)
			}
			if devs[d.Name] {
				return fmt.Errorf("snapshot: rdma.devices: device %q appears twice", d.Name)
			}
			devs[d.Name] = true
			ports := map[int]bool{}
			for _, p := range d.Ports {
				if p.Port < 1 || p.Port > 255 {
					return fmt.Errorf("snapshot: %s port %d: want a port number 1..255", d.Name, p.Port)
				}
				if ports[p.Port] {
					return fmt.Errorf("snapshot: %s port %d appears twice", d.Name, p.Port)
				}
				ports[p.Port] = true
				if p.TableLen < 0 || p.TableLen > 65536 {
					return fmt.Errorf("snapshot: %s port %d: gid_table_len %d: want 0..65536", d.Name, p.Port, p.TableLen)
				}
				used := map[int]bool{}
				for _, g := range p.GIDs {
					if g.Index < 0 || g.Index >= p.TableLen {
						return fmt.Errorf("snapshot: %s port %d: GID index %d: want 0..%d (gid_table_len %d)", d.Name, p.Port, g.Index, p.TableLen-1, p.TableLen)
					}
					if used[g.Index] {
						return fmt.Errorf("snapshot: %s port %d: GID index %d appears twice", d.Name, p.Port, g.Index)
					}
					used[g.Index] = true
					if g.GID.IsZero() {
						return fmt.Errorf("snapshot: %s port %d: GID index %d is the zero GID: an empty slot is left out, not listed", d.Name, p.Port, g.Index)
					}
					if g.Type > gid.TypeRoCEv2 {
						return fmt.Errorf("snapshot: %s port %d: GID index %d: unknown type %d", d.Name, p.Port, g.Index, g.Type)
					}
				}
			}
		}
	}
	names := map[string]bool{}
	for i, n := range s.Namespaces {
		if n == nil {
			return fmt.Errorf("snapshot: namespaces[%d] is null", i)
		}
		if names[n.Netns] {
			return fmt.Errorf("snapshot: namespace %s appears twice", NetnsName(n.Netns))
		}
		names[n.Netns] = true
		if err := n.Validate(); err != nil {
			return fmt.Errorf("snapshot: namespace %s: %w", NetnsName(n.Netns), err)
		}
	}
	seen := map[[2]string]bool{}
	for _, d := range s.DCB {
		if !names[d.Netns] {
			return fmt.Errorf("snapshot: dcb of %s: namespace %s is not in the snapshot", d.Netdev, NetnsName(d.Netns))
		}
		k := [2]string{d.Netns, d.Netdev}
		if seen[k] {
			return fmt.Errorf("snapshot: dcb of %s in namespace %s appears twice", d.Netdev, NetnsName(d.Netns))
		}
		seen[k] = true
		if err := d.DCB.Validate(); err != nil {
			return fmt.Errorf("snapshot: dcb: %w", err)
		}
	}
	if err := s.Counters.Validate(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if s.Counters != nil {
		for _, e := range s.Counters.Ethtool {
			if !names[e.Netns] {
				return fmt.Errorf("snapshot: counters.ethtool of %s: namespace %s is not in the snapshot", e.Netdev, NetnsName(e.Netns))
			}
		}
	}
	if err := s.Settings.Validate(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := s.Census.Validate(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := s.Topology.Validate(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// nsName names a namespace in messages.
// NetnsName names a namespace of a snapshot in messages: quoted, or
// "(the collector's own)" for "".
func NetnsName(netns string) string {
	if netns == "" {
		return "(the collector's own)"
	}
	return fmt.Sprintf("%q", netns)
}

// Encode writes the snapshot as one line of JSON (jq pretty-prints it).
func (s *Snapshot) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// Save writes the snapshot to path, gzip-compressed when path ends in
// ".gz", through a temporary file in the same directory renamed into
// place: path is never half-written.
func (s *Snapshot) Save(path string) error {
	var buf bytes.Buffer
	if strings.HasSuffix(path, ".gz") {
		zw := gzip.NewWriter(&buf)
		if err := s.Encode(zw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
	} else if err := s.Encode(&buf); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".roce-probe-snapshot-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	// CreateTemp makes the file 0600; a snapshot is as readable as any
	// file the user writes (it holds nothing the host does not show
	// unprivileged users).
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
