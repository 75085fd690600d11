package collect

import (
	"errors"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// Section is one part of a snapshot, for Options.Sections.
type Section uint8

// Sections of a snapshot.
const (
	SectionRDMA     Section = 1 << iota // RDMA devices, ports, GID tables, drivers
	SectionNet                          // namespaces: links, addresses, routes, neighbours, sysctls
	SectionDCB                          // DCB of every real netdev of every namespace read
	SectionCounters                     // RDMA port counters, ethtool and PFC counters of the real netdevs below RoCE netdevs
	SectionSettings                     // rdma_cm configfs defaults, mlx5 traffic class overrides, DCQCN
	SectionCensus                       // the QP census: QPs and rdma_cm IDs with their processes (package census)
	SectionTopology                     // each RoCE netdev's switch and switch port: configuration, LLDP, lldpd

	SectionAll = SectionRDMA | SectionNet | SectionDCB | SectionCounters | SectionSettings | SectionCensus | SectionTopology
)

// Options say what Collect reads.
type Options struct {
	// Netns names the network namespaces to read (names from `ip netns
	// list`); the first is the view commands look netdevs up in. Empty
	// reads the collector's own namespace only. Reading another namespace
	// needs CAP_SYS_ADMIN.
	Netns []string
	// AllNetns reads the collector's own namespace (as the view) and every
	// named one.
	AllNetns bool
	// SysfsRoot is where sysfs is mounted ("" is /sys).
	SysfsRoot string
	// SysfsCopy says SysfsRoot is a copy of /sys (a support bundle), not
	// the live kernel: only what sysfs holds is read — RDMA devices and
	// GID tables, the links of class/net (no addresses, routes or
	// neighbours), the settings — and what only the live kernel answers
	// (rtnetlink, RDMA netlink, DCB, ethtool) is recorded as not collected
	// in Snapshot.Errors. Netns and AllNetns are ignored.
	SysfsCopy bool
	// ProcRoot is, with SysfsCopy, a copy of /proc holding net/vlan/ (the
	// VLAN IDs and QoS maps, which sysfs lacks); "" for none.
	ProcRoot string
	// Sections selects what to read; 0 means SectionAll. A section not
	// read is nil in the snapshot.
	Sections Section
	// Tool is the roce-probe version recorded in the snapshot.
	Tool string
	// Netdevs are netdevs of the view namespace whose real netdevs'
	// ethtool and PFC counters are read besides those below the RDMA
	// ports (SectionCounters).
	Netdevs []string
	// LLDPWait is how long SectionTopology listens for an LLDP frame on
	// each RoCE netdev, all at once (a raw socket per netdev: it needs
	// CAP_NET_RAW, and says so in the attachment's reason without it); 0
	// does not listen. Switches send a frame every 30 s by default.
	LLDPWait time.Duration
	// LLDPHeard are LLDP frames heard before, by netdev (a long-running
	// listener's: the agent's); the newer of these and of Collect's own
	// counts.
	LLDPHeard map[string]topology.Heard
	// Switches names netdevs' switches by configuration (the key "" every
	// netdev's); a configured name wins over LLDP and lldpd.
	Switches map[string]string
	// LLDPDMaxAge lets SectionTopology reuse lldpd's table as an earlier
	// Collect of this process read it (lldpcli) within this age; 0 runs
	// lldpcli at every Collect. A caller reading the host every few
	// seconds (the agent) sets it: each run forks and execs a process.
	LLDPDMaxAge time.Duration
}

// Errors of Collect, for errors.Is.
var (
	// ErrNotLinux is the one "needs Linux" condition: it is wrapped by
	// every live operation on another system — collect's reads (Collect,
	// NewSampler, Watch, ProbeNeighbor, SolicitNeighbor), probe's raw
	// sockets (Open, Listen, Send, CheckRawSocket) and the agent's
	// DefaultDeps —, each error saying what needed Linux and what to do
	// instead: analyse a snapshot taken there (--from FILE).
	ErrNotLinux = errors.New("needs Linux")
	// ErrPermission is wrapped when a source needs privileges the process
	// does not have (entering another network namespace needs
	// CAP_SYS_ADMIN).
	ErrPermission = errors.New("permission denied")
	// ErrNoLLDP is LLDPListener.Next's error when no LLDP frame came
	// before the deadline.
	ErrNoLLDP = errors.New("no LLDP frame")
)

// Collect reads the live host: the sections opt selects, with the errors
// of sources that could not be read in Snapshot.Errors (a DCB query that
// fails) or returned when nothing sensible can be built without them (the
// namespace asked for does not exist, rtnetlink cannot be opened). On
// systems other than Linux it returns ErrNotLinux.
func Collect(opt Options) (*host.Snapshot, error) {
	if opt.Sections != 0 && opt.Sections&(SectionCounters|SectionSettings|SectionTopology) != 0 {
		// Counters, settings and topology are read for the RDMA ports and
		// the real netdevs below them: those sections come along.
		opt.Sections |= SectionRDMA | SectionNet
	}
	return collect(opt)
}

// Sampler reads further counter samples of the ports and netdevs a
// snapshot's counters were read for, for rates and `counters --watch`.
type Sampler interface {
	// Sample reads one sample; the sources that could not be read are
	// returned beside it.
	Sample() (*counters.Sample, []host.SourceError)
	// Close releases the sockets.
	Close()
}

// NewSampler returns a Sampler of the live host s was collected from
// (opt as given to Collect: namespace, sysfs root, extra netdevs). On
// systems other than Linux it returns ErrNotLinux.
func NewSampler(s *host.Snapshot, opt Options) (Sampler, error) { return newSampler(s, opt) }

// CensusOptions say what Census reads.
type CensusOptions struct {
	// Devices names the RDMA devices to read; nil reads every device
	// RDMA netlink lists. A name it does not list is an error.
	Devices []string
	// Raw also reads the drivers' raw QP contexts
	// (RDMA_NLDEV_CMD_RES_QP_GET_RAW): it needs CAP_NET_ADMIN, and mlx5
	// runs a firmware command per QP for it.
	Raw bool
	// ProcRoot is where /proc is mounted ("" is /proc): the owners'
	// commands are read from PROC/PID/comm.
	ProcRoot string
}

// Census reads the QP census of the live host: every QP and rdma_cm ID of
// the RDMA devices this network namespace sees, from RDMA netlink's
// resource dumps (what `rdma resource show qp` and `rdma resource show
// cm_id` print), with each owning process's command from /proc/PID/comm.
// No privilege is needed except for opt.Raw (CAP_NET_ADMIN); what could
// not be read is in the census's Sources with the reason, the rest is
// complete. A PID is given in the reader's PID namespace: QPs of
// processes it cannot see come without an owner (docs/qps.md). The
// error is for opt naming a device RDMA netlink does not list; on systems
// other than Linux it is ErrNotLinux.
func Census(opt CensusOptions) (*census.Census, error) { return readCensus(opt) }

func (o Options) has(s Section) bool { return o.Sections == 0 || o.Sections&s != 0 }
