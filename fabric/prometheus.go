package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/bound"
)

// The metrics the Prometheus source reads back (docs/metrics.md): the
// agent's series of GIDEntries and GIDIndexes, declared here once (the
// agent writes them under these names).
const (
	MetricGIDIndex = "roce_probe_gid_index"
	MetricGIDInfo  = "roce_probe_gid_info"
)

// Sample is one series of an instant vector: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// ErrPrometheus is wrapped by errors Prometheus itself reports (status
// "error").
var ErrPrometheus = errors.New("prometheus")

// DecodeVector decodes a response of Prometheus's HTTP API
// /api/v1/query whose result is an instant vector:
//
//	{"status": "success", "data": {"resultType": "vector",
//	 "result": [{"metric": {LABELS}, "value": [TIME, "VALUE"]}, ...]}}
//
// An error response ({"status": "error", "errorType", "error"}) is an
// error wrapping ErrPrometheus with Prometheus's words; anything else that
// is not such a document is an error saying what is wrong.
func DecodeVector(r io.Reader) ([]Sample, error) {
	b, err := io.ReadAll(&bound.Reader{R: r, N: MaxPrometheusBytes, What: "the Prometheus response"})
	if err != nil {
		return nil, err
	}
	return decodeVector(b)
}

// The limits of a response of Prometheus's HTTP API: a larger one is
// refused with an error wrapping host.ErrTooLarge (docs/fabric.md,
// "Limits"). Each series of the answer is three of the objects and arrays.
const (
	MaxPrometheusBytes   = 256 << 20
	MaxPrometheusObjects = 1 << 21
	maxPrometheusDepth   = 16 // the API's deepest is 5
)

func decodeVector(b []byte) ([]Sample, error) {
	if err := bound.CheckJSON(b, bound.JSONLimits{Depth: maxPrometheusDepth, Containers: MaxPrometheusObjects}, "the Prometheus response"); err != nil {
		return nil, err
	}
	var doc struct {
		Status    *string `json:"status"`
		ErrorType string  `json:"errorType"`
		Error     string  `json:"error"`
		Data      *struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a Prometheus API response: %v", err)
	}
	switch {
	case doc.Status == nil:
		return nil, errors.New("not a Prometheus API response: no \"status\"")
	case *doc.Status == "error":
		return nil, fmt.Errorf("%w: %s: %s", ErrPrometheus, orText(doc.ErrorType, "error"), orText(doc.Error, "(no message)"))
	case *doc.Status != "success":
		return nil, fmt.Errorf("not a Prometheus API response: status %q: want \"success\" or \"error\"", *doc.Status)
	case doc.Data == nil:
		return nil, errors.New("a Prometheus API response without \"data\"")
	case doc.Data.ResultType != "vector":
		return nil, fmt.Errorf("result type %q: want \"vector\" (an instant query)", doc.Data.ResultType)
	}
	out := make([]Sample, 0, len(doc.Data.Result))
	for i, raw := range doc.Data.Result {
		var s struct {
			Metric map[string]string `json:"metric"`
			Value  []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("result[%d]: %v", i, err)
		}
		if len(s.Value) != 2 {
			return nil, fmt.Errorf("result[%d] %s: value has %d elements: want [TIME, \"VALUE\"]", i, seriesName(s.Metric), len(s.Value))
		}
		var ts float64
		if err := json.Unmarshal(s.Value[0], &ts); err != nil {
			return nil, fmt.Errorf("result[%d] %s: time %s is not a number", i, seriesName(s.Metric), s.Value[0])
		}
		var vs string
		if err := json.Unmarshal(s.Value[1], &vs); err != nil {
			return nil, fmt.Errorf("result[%d] %s: value %s is not a string: want e.g. \"3\"", i, seriesName(s.Metric), s.Value[1])
		}
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, fmt.Errorf("result[%d] %s: value %q is not a number", i, seriesName(s.Metric), vs)
		}
		if s.Metric == nil {
			s.Metric = map[string]string{}
		}
		out = append(out, Sample{Labels: s.Metric, Value: v})
	}
	return out, nil
}

// seriesName writes a series as Prometheus does: name{a="1", b="2"}.
func seriesName(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return l["__name__"] + "{" + strings.Join(parts, ", ") + "}"
}

// PrometheusOptions say how Prometheus is asked.
type PrometheusOptions struct {
	// HostLabel is the label that names a host (default "instance"; with
	// the deploy/ scrape configurations, "node" names it as its
	// hostname).
	HostLabel string
	// Window is what ReadPrometheusProbes counts probes over (0:
	// DefaultWindow).
	Window time.Duration
	// Timeout bounds each query (0: 30 s).
	Timeout time.Duration
	// MaxBytes bounds a response (0: MaxPrometheusBytes).
	MaxBytes int64
	// Client is the HTTP client (nil: a default one).
	Client *http.Client
}

// Query asks Prometheus at base (its URL, with any path prefix) for the
// instant vector of query.
func Query(ctx context.Context, base, query string, o PrometheusOptions) ([]Sample, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = MaxPrometheusBytes
	}
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	u, err := QueryURL(base, query)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("prometheus %s: no answer to %s within %s", base, query, o.Timeout)
		}
		return nil, fmt.Errorf("prometheus %s: %w", base, unwrapURLError(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(&bound.Reader{R: resp.Body, N: o.MaxBytes, What: "the answer to " + query})
	if errors.Is(err, bound.ErrTooLarge) {
		return nil, fmt.Errorf("prometheus %s: %w", base, err)
	}
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: reading the answer to %s: %w", base, query, unwrapURLError(err))
	}
	samples, err := decodeVector(b)
	if err != nil {
		if resp.StatusCode != http.StatusOK && !errors.Is(err, ErrPrometheus) {
			return nil, fmt.Errorf("prometheus %s: %s: HTTP %s: %s", base, query, resp.Status, firstLine(string(b)))
		}
		return nil, fmt.Errorf("prometheus %s: %s: %w", base, query, err)
	}
	return samples, nil
}

// QueryURL is the instant-query URL of query on the Prometheus server at
// base.
func QueryURL(base, query string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("prometheus %q: want the server's URL, http://HOST:9090 (with its path prefix, if any)", base)
	}
	u = u.JoinPath("api", "v1", "query")
	u.RawQuery = url.Values{"query": {query}}.Encode()
	return u.String(), nil
}

// ReadPrometheus reads the hosts' facts back from the agents' metrics in
// Prometheus at base: roce_probe_gid_index (the usable index per device,
// port, type, family and network) and roce_probe_gid_info (the netdev and
// VLAN of each entry). Only the checks whose facts are metrics can be made
// from them (Analyze says which). Hosts are named by o.HostLabel.
func ReadPrometheus(ctx context.Context, base string, o PrometheusOptions) ([]Host, error) {
	if o.HostLabel == "" {
		o.HostLabel = "instance"
	}
	idx, err := Query(ctx, base, MetricGIDIndex, o)
	if err != nil {
		return nil, err
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("prometheus %s: no %s series: is it scraping roce-probe agents (docs/fabric.md)?", base, MetricGIDIndex)
	}
	info, err := Query(ctx, base, MetricGIDInfo, o)
	if err != nil {
		return nil, err
	}
	return HostsFromMetrics(idx, info, o.HostLabel)
}

// HostsFromMetrics builds the hosts' facts from the samples of
// roce_probe_gid_index and roce_probe_gid_info, naming hosts by the label
// hostLabel. A series without that label or with labels out of range, and
// two series that give one port two different indexes, are errors naming
// the series (*InputError).
func HostsFromMetrics(index, info []Sample, hostLabel string) ([]Host, error) {
	type portKey struct {
		host, dev string
		port      int
	}
	type attKey struct {
		portKey
		net string
	}
	type infoKey struct {
		portKey
		index int
		typ   gid.Type
	}
	var bad []error
	// Netdev and VLAN of each entry.
	infos := map[infoKey]map[string]string{}
	for _, s := range info {
		h, dev, port, err := portLabels(s, hostLabel)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		i, err := strconv.Atoi(s.Labels["index"])
		if err != nil || i < 0 || i > 65535 {
			bad = append(bad, fmt.Errorf("%s: index %q: want 0..65535", seriesName(s.Labels), s.Labels["index"]))
			continue
		}
		t, err := gid.ParseType(s.Labels["type"])
		if err != nil {
			bad = append(bad, fmt.Errorf("%s: %v", seriesName(s.Labels), err))
			continue
		}
		k := infoKey{portKey{h, dev, port}, i, t}
		if _, ok := infos[k]; !ok {
			infos[k] = s.Labels
		}
	}
	hosts := map[string]*Host{}
	atts := map[attKey]*Attachment{}
	seen := map[attKey]map[gid.Type]Sample{}
	var order []attKey
	for _, s := range index {
		h, dev, port, err := portLabels(s, hostLabel)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		t, err := gid.ParseType(s.Labels["type"])
		if err != nil || (t != gid.TypeRoCEv1 && t != gid.TypeRoCEv2) {
			bad = append(bad, fmt.Errorf("%s: type %q: want \"RoCE v1\" or \"RoCE v2\"", seriesName(s.Labels), s.Labels["type"]))
			continue
		}
		fam, net := s.Labels["family"], s.Labels["network"]
		if fam != FamilyIPv4 && fam != FamilyIPv6 {
			bad = append(bad, fmt.Errorf("%s: family %q: want %q or %q", seriesName(s.Labels), fam, FamilyIPv4, FamilyIPv6))
			continue
		}
		if net == "" {
			bad = append(bad, fmt.Errorf("%s: no network label", seriesName(s.Labels)))
			continue
		}
		v := s.Value
		if math.IsNaN(v) || v != math.Trunc(v) || v < 0 || v > 65535 {
			bad = append(bad, fmt.Errorf("%s: value %v: want a GID index 0..65535", seriesName(s.Labels), v))
			continue
		}
		k := attKey{portKey{h, dev, port}, net}
		if prev, ok := seen[k][t]; ok {
			if prev.Value != v {
				bad = append(bad, fmt.Errorf("%s = %v and %s = %v: one port with two indexes for one network (two scrape jobs? name hosts with a label that tells them apart)", seriesName(prev.Labels), prev.Value, seriesName(s.Labels), v))
			}
			continue
		}
		if seen[k] == nil {
			seen[k] = map[gid.Type]Sample{}
		}
		seen[k][t] = s
		a := atts[k]
		if a == nil {
			a = &Attachment{Network: net, Family: fam, Device: dev, Port: port}
			atts[k] = a
			order = append(order, k)
		}
		i := int(v)
		a.Index[t] = &i
		if hosts[h] == nil {
			origin := s.Labels["instance"]
			if origin == "" {
				origin = h
			}
			hosts[h] = &Host{Name: h, Origin: origin}
		}
	}
	if err := inputError(bad); err != nil {
		return nil, err
	}
	// The netdev and VLAN of the lowest usable entry.
	for _, k := range order {
		a := atts[k]
		best, bt := -1, gid.Type(0)
		for t, p := range a.Index {
			if p != nil && (best < 0 || *p < best) {
				best, bt = *p, gid.Type(t)
			}
		}
		l, ok := infos[infoKey{k.portKey, best, bt}]
		if !ok {
			continue // netdev and VLAN unknown
		}
		a.Netdev = l["netdev"]
		if ip, err := netip.ParseAddr(l["gid"]); err == nil {
			a.Addr = ip.Unmap()
		}
		switch vl := l["vlan"]; vl {
		case "":
			a.VLANs = []uint16{}
		default:
			if id, err := strconv.ParseUint(vl, 10, 12); err == nil {
				a.VLANs = []uint16{uint16(id)}
			}
		}
	}
	names := make([]string, 0, len(hosts))
	for n := range hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Host, 0, len(names))
	for _, n := range names {
		h := hosts[n]
		for _, k := range order {
			if k.host == n {
				h.Attachments = append(h.Attachments, *atts[k])
			}
		}
		sortAttachments(h.Attachments)
		h.prepareAll()
		out = append(out, *h)
	}
	return out, nil
}

// portLabels reads the host, device and port labels of a series.
func portLabels(s Sample, hostLabel string) (host, dev string, port int, err error) {
	host = s.Labels[hostLabel]
	if host == "" {
		return "", "", 0, fmt.Errorf("%s: no %s label to name its host", seriesName(s.Labels), hostLabel)
	}
	dev = s.Labels["device"]
	if dev == "" {
		return "", "", 0, fmt.Errorf("%s: no device label", seriesName(s.Labels))
	}
	port, err = strconv.Atoi(s.Labels["port"])
	if err != nil || port < 1 || port > 255 {
		return "", "", 0, fmt.Errorf("%s: port %q: want 1..255", seriesName(s.Labels), s.Labels["port"])
	}
	return host, dev, port, nil
}
