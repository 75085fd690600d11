package counters

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/internal/null"
)

// Sample is one reading of a host's counters: the snapshot's "counters"
// section (docs/json.md). RDMA holds every RDMA port's counters, Ethtool
// the `ethtool -S` set of each real netdev below a RoCE netdev.
type Sample struct {
	// Time is when the reading started (UTC); rates divide by the time
	// between two samples' Time.
	Time    time.Time  `json:"time"`
	RDMA    []RDMAPort `json:"rdma"`
	Ethtool []Ethtool  `json:"ethtool"`
	// PFC holds DCB's PFC frame counters of the same netdevs (struct
	// ieee_pfc requests and indications), read with the other counters so
	// that they have rates too.
	PFC []PFC `json:"pfc"`
}

// PFC is a netdev's DCB PFC counters (RTM_GETDCB DCB_ATTR_IEEE_PFC):
// Requests are PFC frames sent per priority, Indications PFC frames
// received.
type PFC struct {
	Netns       string    `json:"netns"`
	Netdev      string    `json:"netdev"`
	Requests    [8]uint64 `json:"requests"`
	Indications [8]uint64 `json:"indications"`
}

type pfcJSON struct {
	Netns       *string   `json:"netns"`
	Netdev      string    `json:"netdev"`
	Requests    [8]uint64 `json:"requests"`
	Indications [8]uint64 `json:"indications"`
}

// MarshalJSON writes {netns, netdev, requests, indications}.
func (p PFC) MarshalJSON() ([]byte, error) {
	return json.Marshal(pfcJSON{Netns: null.String(p.Netns), Netdev: p.Netdev, Requests: p.Requests, Indications: p.Indications})
}

// PFCOf returns the PFC counters of netdev, nil when the sample has none.
func (s *Sample) PFCOf(netns, netdev string) *PFC {
	if s == nil {
		return nil
	}
	for i := range s.PFC {
		if s.PFC[i].Netns == netns && s.PFC[i].Netdev == netdev {
			return &s.PFC[i]
		}
	}
	return nil
}

// Sources of RDMA port counters.
const (
	SourceNetlink = "netlink" // RDMA_NLDEV_CMD_STAT_GET, what `rdma statistic show` prints
	SourceSysfs   = "sysfs"   // /sys/class/infiniband/<dev>/ports/<p>/hw_counters
)

// RDMAPort is one RDMA port's counters as the driver names them.
type RDMAPort struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Source is where HWCounters came from: SourceNetlink (optional
	// counters included once enabled with `rdma statistic set`) or
	// SourceSysfs (when RDMA netlink gave nothing).
	Source string `json:"source"`
	// HWCounters are the driver's counters (hw_counters/, RDMA netlink);
	// nil when the port has none.
	HWCounters Stats `json:"hw_counters"`
	// Counters are the IB PMA counters of sysfs counters/ (port_xmit_data,
	// port_rcv_packets, ...; netlink has none of them); nil when the port
	// has no counters/ directory (bnxt_re, rxe on Linux 6.1).
	Counters Stats `json:"counters"`
}

// Ethtool is one netdev's `ethtool -S` set (ETHTOOL_GSTRINGS of
// ETH_SS_STATS and ETHTOOL_GSTATS).
//
// It decodes with its own tags (a null netns or driver is ""; the
// snapshot decoder rejects unknown keys) and encodes with MarshalJSON.
type Ethtool struct {
	// Netns is the namespace ("" for the collector's own: null in JSON).
	Netns  string `json:"netns"`
	Netdev string `json:"netdev"`
	// Driver is the netdev's driver (ETHTOOL_GDRVINFO): mlx5_core,
	// bnxt_en, ice, veth, ...
	Driver string `json:"kernel_driver"`
	// Stats maps each statistic name to its value. A name the driver
	// lists twice keeps its first value.
	Stats Stats `json:"stats"`
}

type ethtoolJSON struct {
	Netns  *string `json:"netns"`
	Netdev string  `json:"netdev"`
	Driver *string `json:"kernel_driver"`
	Stats  Stats   `json:"stats"`
}

// MarshalJSON writes {netns, netdev, kernel_driver, stats}, null for
// unknown.
func (e Ethtool) MarshalJSON() ([]byte, error) {
	w := ethtoolJSON{Netns: null.String(e.Netns), Netdev: e.Netdev, Driver: null.String(e.Driver), Stats: e.Stats}
	if w.Stats == nil {
		w.Stats = Stats{}
	}
	return json.Marshal(w)
}

// Validate checks what a sample read from the kernel always satisfies:
// valid and unique device/port and netdev names, a known source, and
// counter names sysfs and ethtool can give (not empty, no '/', at most 31
// bytes for ethtool's ETH_GSTRING_LEN). Errors name the entry and the
// value.
func (s *Sample) Validate() error {
	if s == nil {
		return nil
	}
	seen := map[string]bool{}
	for i, p := range s.RDMA {
		if p.Device == "" || strings.ContainsAny(p.Device, "/\x00") {
			return fmt.Errorf("counters.rdma[%d]: device name %q is not valid", i, p.Device)
		}
		if p.Port < 1 || p.Port > 255 {
			return fmt.Errorf("counters.rdma[%d]: %s port %d: want a port number 1..255", i, p.Device, p.Port)
		}
		k := fmt.Sprintf("%s/%d", p.Device, p.Port)
		if seen[k] {
			return fmt.Errorf("counters.rdma: %s port %d appears twice", p.Device, p.Port)
		}
		seen[k] = true
		if p.Source != SourceNetlink && p.Source != SourceSysfs {
			return fmt.Errorf("counters.rdma[%d]: %s port %d: source %q: want %q or %q", i, p.Device, p.Port, p.Source, SourceNetlink, SourceSysfs)
		}
		for _, m := range []map[string]uint64{p.HWCounters, p.Counters} {
			for n := range m {
				if n == "" || strings.ContainsAny(n, "/\x00") {
					return fmt.Errorf("counters.rdma[%d]: %s port %d: counter name %q is not valid", i, p.Device, p.Port, n)
				}
			}
		}
	}
	nd := map[[2]string]bool{}
	for i, e := range s.Ethtool {
		if e.Netdev == "" || len(e.Netdev) > 15 || strings.ContainsAny(e.Netdev, "/ \x00") {
			return fmt.Errorf("counters.ethtool[%d]: netdev name %q is not valid", i, e.Netdev)
		}
		k := [2]string{e.Netns, e.Netdev}
		if nd[k] {
			return fmt.Errorf("counters.ethtool: netdev %s appears twice", e.Netdev)
		}
		nd[k] = true
		for n := range e.Stats {
			if n == "" || len(n) > 31 {
				return fmt.Errorf("counters.ethtool[%d]: %s: statistic name %q is not valid: want 1..31 bytes", i, e.Netdev, n)
			}
		}
	}
	return nil
}

// Port returns the counters of device's port, nil when the sample has
// none.
func (s *Sample) Port(device string, port int) *RDMAPort {
	if s == nil {
		return nil
	}
	for i := range s.RDMA {
		if s.RDMA[i].Device == device && s.RDMA[i].Port == port {
			return &s.RDMA[i]
		}
	}
	return nil
}

// Netdev returns the ethtool set of netdev in namespace netns, nil when
// the sample has none.
func (s *Sample) Netdev(netns, netdev string) *Ethtool {
	if s == nil {
		return nil
	}
	for i := range s.Ethtool {
		if s.Ethtool[i].Netns == netns && s.Ethtool[i].Netdev == netdev {
			return &s.Ethtool[i]
		}
	}
	return nil
}
