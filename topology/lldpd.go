package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LLDPDNeighbor is one neighbour in lldpd's table: the netdev it was heard
// on, what it sent, and how long ago lldpd last heard it.
type LLDPDNeighbor struct {
	Netdev   string
	Neighbor Neighbor
	// Age is the time since lldpd learned the neighbour (its "age",
	// "0 day, 00:00:47"); -1 when lldpd did not say.
	Age time.Duration
}

// MaxLLDPCliBytes bounds the lldpcli output ParseLLDPCli reads: a host's
// neighbour table is a few KB per netdev.
const MaxLLDPCliBytes = 1 << 20

// ParseLLDPCli parses the neighbour table lldpd's client prints with
// `lldpcli -f json show neighbors` or `lldpcli -f json0 show neighbors`
// (with or without `details`): both shapes of lldpd's JSON writer — json,
// whose shape changes with the number of netdevs and neighbours (an
// object for one, an array for several; the chassis under its system
// name), and json0, where every value is an array. The neighbours are
// returned sorted by netdev, in lldpd's order within a netdev. An
// output that is not such a table is an error naming what is wrong; a
// table without neighbours is an empty list. It never panics.
func ParseLLDPCli(b []byte) ([]LLDPDNeighbor, error) {
	if len(b) > MaxLLDPCliBytes {
		return nil, fmt.Errorf("lldpcli: output of %d bytes is larger than %d, the most read", len(b), MaxLLDPCliBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("lldpcli: not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("lldpcli: data after the JSON document")
	}
	top, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("lldpcli: the document is not an object: want {\"lldp\": ...}")
	}
	lv, ok := top["lldp"]
	if !ok {
		return nil, errors.New("lldpcli: no \"lldp\" key: want the output of 'lldpcli -f json show neighbors'")
	}
	lldp := obj(lv)
	if lldp == nil {
		if isEmpty(lv) {
			return []LLDPDNeighbor{}, nil
		}
		return nil, errors.New("lldpcli: \"lldp\" is not an object")
	}
	out := []LLDPDNeighbor{}
	for _, ifc := range interfaces(lldp["interface"]) {
		if ifc.name == "" {
			return nil, errors.New("lldpcli: an interface without a name")
		}
		n, err := lldpdNeighbor(ifc.body)
		if err != nil {
			return nil, fmt.Errorf("lldpcli: interface %q: %w", ifc.name, err)
		}
		age := time.Duration(-1)
		if a := str(ifc.body["age"]); a != "" {
			if age, err = parseAge(a); err != nil {
				return nil, fmt.Errorf("lldpcli: interface %q: %w", ifc.name, err)
			}
		}
		out = append(out, LLDPDNeighbor{Netdev: ifc.name, Neighbor: n, Age: age})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Netdev < out[j].Netdev })
	return out, nil
}

type iface struct {
	name string
	body map[string]any
}

// interfaces lists the interface entries of lldp's "interface" value:
// json0's [{"name": N, ...}], json's {N: {...}} for one and [{N: {...}},
// ...] for several.
func interfaces(v any) []iface {
	var out []iface
	add := func(m map[string]any) {
		if m == nil {
			return
		}
		if _, ok := m["name"]; ok {
			out = append(out, iface{name: str(m["name"]), body: m})
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, iface{name: k, body: obj(m[k])})
		}
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			m, _ := e.(map[string]any)
			add(m)
		}
	case map[string]any:
		add(x)
	}
	return out
}

// lldpdNeighbor reads one interface entry's chassis and port.
func lldpdNeighbor(body map[string]any) (Neighbor, error) {
	if body == nil {
		return Neighbor{}, errors.New("not an object")
	}
	ch := obj(body["chassis"])
	if ch == nil {
		return Neighbor{}, errors.New("no chassis")
	}
	var n Neighbor
	if _, ok := ch["id"]; ok {
		n.SystemName = str(ch["name"]) // json0, or json without a system name
	} else if len(ch) == 1 {
		for k, v := range ch { // json: {"<system name>": {...}}
			n.SystemName, ch = k, obj(v)
		}
		if ch == nil {
			return Neighbor{}, errors.New("chassis is not an object")
		}
	} else {
		return Neighbor{}, errors.New("chassis has no id")
	}
	n.SystemName = printable(n.SystemName)
	id := obj(ch["id"])
	n.ChassisIDType, n.ChassisID = str(id["type"]), str(id["value"])
	if n.ChassisID == "" {
		return Neighbor{}, errors.New("chassis has no id")
	}
	if a, err := netip.ParseAddr(str(ch["mgmt-ip"])); err == nil {
		n.ManagementAddress = a
	}
	port := obj(body["port"])
	if port == nil {
		return Neighbor{}, errors.New("no port")
	}
	pid := obj(port["id"])
	n.PortIDType, n.PortID = str(pid["type"]), str(pid["value"])
	if n.PortID == "" {
		return Neighbor{}, errors.New("port has no id")
	}
	n.PortDescription = printable(str(port["descr"]))
	ttl := str(port["ttl"])
	if ttl == "" {
		ttl = str(ch["ttl"]) // lldpd before 1.0 kept it with the chassis
	}
	if ttl != "" {
		v, err := strconv.ParseUint(ttl, 10, 16)
		if err != nil {
			return Neighbor{}, fmt.Errorf("ttl %q: want 0..65535 seconds", ttl)
		}
		n.TTL = uint16(v)
	}
	return n, nil
}

// parseAge reads lldpd's age, "D day(s), HH:MM:SS".
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("age %q: want \"D day, HH:MM:SS\"", s)
	days, clock, ok := strings.Cut(s, ",")
	if !ok {
		return 0, bad
	}
	f := strings.Fields(days)
	if len(f) != 2 || (f[1] != "day" && f[1] != "days") {
		return 0, bad
	}
	d, err := strconv.ParseUint(f[0], 10, 16)
	if err != nil {
		return 0, bad
	}
	hms := strings.Split(strings.TrimSpace(clock), ":")
	if len(hms) != 3 {
		return 0, bad
	}
	var v [3]uint64
	for i, p := range hms {
		if v[i], err = strconv.ParseUint(p, 10, 8); err != nil || (i > 0 && v[i] > 59) {
			return 0, bad
		}
	}
	return time.Duration(d)*24*time.Hour + time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute + time.Duration(v[2])*time.Second, nil
}

// one is v, or the first element when v is an array (json0 wraps every
// value in one).
func one(v any) any {
	if a, ok := v.([]any); ok {
		if len(a) == 0 {
			return nil
		}
		return a[0]
	}
	return v
}

func obj(v any) map[string]any {
	m, _ := one(v).(map[string]any)
	return m
}

// str is a value as text: a string, json0's {"value": s}, or the first of
// an array of them.
func str(v any) string {
	switch x := one(v).(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case map[string]any:
		if len(x) == 1 {
			return str(x["value"])
		}
	}
	return ""
}

// isEmpty reports an empty object or array, or one wrapping only that:
// lldpcli's table without neighbours.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !isEmpty(e) {
				return false
			}
		}
		return true
	case map[string]any:
		return len(x) == 0
	}
	return false
}
